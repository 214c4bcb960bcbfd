import GattCore
import GattHost
import Logging
import NIOCore
import NIOPosix

/// The kernel transport's blocking work: HCI commands on the adapter's raw socket and mgmt
/// operations, one at a time on a thread of their own (each blocks until the kernel answers;
/// the adapter's bring-up runs there too). What the rules wait for comes back as an `Answer`,
/// on the event loop.
final class KernelCommands: Sendable {
    /// What the kernel answered that the rules wait for.
    enum Answer: Sendable {
        /// The security settings applied, with a warning per setting that could not be.
        case securityWarnings([String])
        /// Loading the bonds' keys failed.
        case keysNotLoaded
        /// Unpair Device failed.
        case unpairFailed
        /// How an advertising instance's operation ended.
        case advertising(KernelAdvertisingDriver.Operation, set: String, KernelAdvertisingDriver.Outcome)
        /// A link command's status.
        case command(HCICommand, HCIStatus)
    }

    /// Runs the blocking commands, one at a time.
    let thread = NIOThreadPool(numberOfThreads: 1)
    private let index: Int
    private let adapterName: String
    private let logger: Logger
    private let eventLoop: any EventLoop

    init(index: Int, eventLoop: any EventLoop, logger: Logger) {
        self.index = index
        self.adapterName = "hci\(index)"
        self.eventLoop = eventLoop
        self.logger = logger
        thread.start()
    }

    /// Sends an HCI command; its status comes back (`.command`) when the rules wait for it
    /// (`answered`), else a failure is logged with `failure`.
    func send(
        _ command: HCICommand, on controller: KernelHCIController, answered: Bool, failure: String?,
        answer: @escaping @Sendable (Answer) -> Void
    ) {
        let logger = self.logger, loop = eventLoop
        thread.submit { _ in
            let status: HCIStatus
            do {
                try controller.send(command)
                status = .success
            } catch {
                if let failure { logger.warning("\(failure): \(error)") }
                // A timeout or a closed socket: Unspecified Error, with the log's detail.
                if case .commandFailed(let code)? = (error as? KernelTransportError)?.kind { status = HCIStatus(code) } else { status = HCIStatus(0x1F) }
            }
            guard answered else { return }
            loop.execute { answer(.command(command, status)) }
        }
    }

    /// Runs a mgmt operation; what the rules wait for comes back.
    func run(_ operation: KernelManagementOperation, answer: @escaping @Sendable (Answer) -> Void) {
        let index = self.index, logger = self.logger, adapter = adapterName, loop = eventLoop
        switch operation {
        case .applySecurity(let settings):
            thread.submit { _ in
                let warnings: [String]
                do {
                    warnings = try KernelManagement.applySecurity(index: index, settings)
                } catch {
                    warnings = ["cannot apply the security settings (\(error))"]
                }
                guard !warnings.isEmpty else { return }
                loop.execute { answer(.securityWarnings(warnings)) }
            }
        case .loadKeys(let keys):
            thread.submit { _ in
                do {
                    let loaded = try KernelManagement.loadKeys(index: index, keys)
                    let n = loaded.longTermKeys
                    logger.info(
                        "\(adapter): \(n) bond\(n == 1 ? "" : "s") loaded into the kernel (\(n) LTK\(n == 1 ? "" : "s"), \(loaded.identityResolvingKeys) IRK\(loaded.identityResolvingKeys == 1 ? "" : "s"))"
                    )
                    if loaded.leftOut > 0 { logger.warning("\(adapter): \(loaded.leftOut) older key(s) did not fit one mgmt command and were not loaded") }
                } catch {
                    logger.warning("\(adapter): cannot load the bonds into the kernel (\(error)); bonded centrals must pair again")
                    loop.execute { answer(.keysNotLoaded) }
                }
            }
        case .unpair(let peer):
            thread.submit { _ in
                do {
                    let had = try KernelManagement.unpair(index: index, peer)
                    logger.info("\(adapter): the kernel forgot the keys of \(peer.address)\(had ? "" : " (it had none)") (mgmt Unpair Device)")
                } catch {
                    logger.warning("\(adapter): mgmt Unpair Device for \(peer.address) failed (\(error)); loading the remaining bonds instead")
                    loop.execute { answer(.unpairFailed) }
                }
            }
        case .setDefaultConnectionParameters(let p):
            // A kernel without mgmt's default system configuration (before 5.8) cannot: said once.
            thread.submit { _ in
                do {
                    try KernelManagement.setDefaultConnectionParameters(index: index, p)
                    logger.debug("\(adapter): default LE connection parameters set to connection.preferred; the kernel asks each central for them")
                } catch {
                    logger.warning("\(adapter): cannot set connection.preferred as the adapter's default (\(error)); centrals keep their own connection parameters")
                }
            }
        case .advertising(let op, let set):
            runAdvertising(op, set: set, answer: answer)
        }
    }

    /// One mgmt advertising operation of `set` on the command thread; how it ended goes back.
    private func runAdvertising(_ op: KernelAdvertisingDriver.Operation, set id: String, answer: @escaping @Sendable (Answer) -> Void) {
        let index = self.index
        thread.runIfActive(eventLoop: eventLoop) { () -> KernelAdvertisingDriver.Outcome in
            do throws(KernelTransportError) {
                switch op {
                case .add(let instance, let commands):
                    try KernelManagement.addAdvertising(index: index, instance, extended: commands == .extended)
                case .replace(let instance, let commands):
                    try? KernelManagement.removeAdvertising(index: index, instance: instance.instance)
                    try KernelManagement.addAdvertising(index: index, instance, extended: commands == .extended)
                case .remove(let instance):
                    try KernelManagement.removeAdvertising(index: index, instance: instance)
                }
                return .done
            } catch {
                if case .commandFailed(let status) = error.kind { return .failed(status: status, reason: error.message) }
                return .failed(status: nil, reason: error.message)
            }
        }.whenComplete { result in
            let outcome: KernelAdvertisingDriver.Outcome = switch result {
            case .success(let o): o
            case .failure(let error): .failed(status: nil, reason: "\(error)")
            }
            answer(.advertising(op, set: id, outcome))
        }
    }
}
