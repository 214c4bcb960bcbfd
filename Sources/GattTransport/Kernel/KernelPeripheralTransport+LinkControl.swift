import GattCore
import GattHost
import NIOCore

// A program's requests for one central's link on the kernel transport: LE Connection Update,
// LE Set PHY and LE Set Data Length go out on the raw HCI socket, as the kernel's own
// commands would, and the kernel takes their events as it takes those of procedures the
// central starts. The rules are `LinkProcedures`' (the same as on H4); the kernel keeps LE
// signalling, so the L2CAP Connection Parameter Update Request is not ours to send.
extension KernelPeripheralTransport {
    static var freshLinkProcedures: LinkProcedures {
        LinkProcedures(signallingUnavailable: "the kernel keeps LE signalling to itself (no L2CAP Connection Parameter Update Request from a program)")
    }

    public func requestLink(_ id: ConnectionID, _ request: LinkRequest, now: Duration) -> [Never] {
        guard let link = links[id] else {
            onEvent?(.linkRequestFinished(id, request.kind, .refused("\(id) is not connected")))
            return []
        }
        guard let controller else {
            onEvent?(.linkRequestFinished(id, request.kind, .refused("\(adapterName) is not available")))
            return []
        }
        guard let handle = link.handle else {
            onEvent?(.linkRequestFinished(id, request.kind, .refused("the kernel did not tell \(id)'s connection handle")))
            return []
        }
        // The controller answers a command it lacks with Unknown HCI Command: the request is
        // refused with that status.
        apply(linkProcedures.request(handle, request, leFeatures: LEFeatures(rawValue: controller.leFeatures)) { _ in true })
        return []
    }

    /// gattd serves ATT on the kernel's sockets: no GATT-level accesses or subscribers to answer.
    public func serveDatabase(_ database: GATTDatabase) {}
    public func answerGATT(_ id: GATTAccessID, _ result: Result<[UInt8], ATTError>, now: Duration) -> [Never] { [] }
    public func updateGATT(_ handle: AttributeHandle, _ value: [UInt8], now: Duration) -> [Never] { [] }

    public func cancelLinkRequest(_ id: ConnectionID, _ kind: LinkRequestKind, now: Duration) -> [Never] {
        guard let handle = links[id]?.handle else { return [] }
        linkProcedures.cancel(handle, kind)
        return []
    }

    /// LE Set PHY for a new link, as H4's host sends it (`phy.preferred`, where the controller
    /// has those PHYs); the kernel asks for none itself. Its outcome shows as a link change.
    func askPreferredPHYs(_ handle: UInt16) {
        guard let phys = connectionPHYs, let controller,
            let command = LinkProcedures.preferredPHYCommand(handle, phys: phys, leFeatures: LEFeatures(rawValue: controller.leFeatures))
        else { return }
        send(command)
    }

    /// Carries out what `LinkProcedures` returned, in order.
    func apply(_ steps: [LinkProcedures.Step]) {
        for step in steps {
            switch step {
            case .command(let command):
                send(command)
            case .signal(let handle, _):
                // Never: `signallingUnavailable` is set. Should it come, nothing waits forever.
                linkProcedures.cancel(handle, .connectionParameters)
            case .changed(let handle, let link):
                if let id = links.current(onHandle: handle) { onEvent?(.linkChanged(id, link)) }
            case .finished(let handle, let kind, let result):
                if let id = links.current(onHandle: handle) { onEvent?(.linkRequestFinished(id, kind, result)) }
            case .warning(let warning):
                logger.info("\(warning)")
            }
        }
    }

    /// Sends a link command on the command thread; its answer comes back to the loop.
    private func send(_ command: HCICommand) {
        guard let controller else { return }
        let loop = eventLoop
        commandThread.submit { _ in
            let status: HCIStatus
            do {
                try controller.send(command)
                status = .success
            } catch {
                // A timeout or a closed socket: Unspecified Error, with the log's detail.
                if case .commandFailed(let code)? = (error as? KernelTransportError)?.kind { status = HCIStatus(code) } else { status = HCIStatus(0x1F) }
            }
            loop.execute { [weak self] in
                guard let self else { return }
                guard let steps = self.linkProcedures.answered(command, status: status) else {
                    // Not a program's request (the new link's PHYs): nothing waits on it.
                    if status != .success { self.logger.debug("\(command.name) failed: \(status)") }
                    return
                }
                self.apply(steps)
            }
        }
    }
}
