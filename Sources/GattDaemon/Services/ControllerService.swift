import GattControlProtocol
import GattCore
import GattTransport

/// The controller as the daemon knows it (`KnownController`, kept while it is away): its state
/// as watchers see it (`state` events, `status`), what it can do, and whether the config's
/// advertising sets fit it (`AdvertisingLimits`).
final class ControllerService {
    private unowned let context: DaemonContext
    private(set) var known = KnownController()
    /// "gattd.json: " before a config path, when the daemon knows the file.
    private let configurationName: String

    init(context: DaemonContext, configName: String?) {
        self.context = context
        self.configurationName = configName.map { "\($0): " } ?? ""
    }

    /// The last ready controller's limits (nil before one was ready).
    var limits: AdvertisingLimits? { known.info?.limits }

    /// A controller is ready: its line, a note when the sets take turns, `powered_on`.
    func ready(address: BluetoothAddress, description: String, controller: ControllerInfo?) {
        known.ready(address: address, description: description, info: controller)
        context.logger.info("controller \(description)")
        if let controller {
            let sets = context.core.allSets.count
            if sets > 1, controller.limits.setsTakeTurns {
                context.logger.notice("the \(sets) advertising sets take turns on the air: the controller has one legacy advertising set (no LE Extended Advertising)")
            }
        }
        setState(.poweredOn, reason: nil)
    }

    /// Whether the config's advertising sets fit a ready controller. The first controller
    /// since the start decides whether the config can be served at all: what does not fit is a
    /// config error, as an invalid config is (`fatal` gets exit 65, each violation naming the
    /// set's path and the bytes), and the core never sees that controller. A later one (a
    /// dongle swapped) only has the sets that do not fit refused, each said once here and in an
    /// `advertising` event from the transport.
    func setsFit(_ c: ControllerInfo, description: String, fatal: ((DaemonRunner.Failure) -> Void)?) -> Bool {
        let logger = context.logger
        let violations = c.limits.violations(of: context.core.allSets)
        guard !violations.isEmpty else { return true }
        guard known.info == nil, let fatal else {
            for v in violations { logger.error("\(configurationName)\(v); that set stays off the air") }
            return true
        }
        logger.info("controller \(description)")
        for v in violations { logger.error("\(configurationName)\(v)") }
        let n = violations.count
        fatal(DaemonRunner.Failure(
            "the controller cannot advertise the config's advertising sets (\(n) error\(n == 1 ? "" : "s") above); exiting",
            exitCode: 65))
        return false
    }

    /// Why a reload's advertising sets do not fit the controller gattd has (nil: they fit, or
    /// no controller was ready yet).
    func refusal(of new: GattConfiguration, payloads: AdvertisingPayloads) -> String? {
        guard let controller = known.info else { return nil }
        let sets = [AdvertisingSet.primary(payloads)] + AdvertisingService.otherSets(new)
        let violations = controller.limits.violations(of: sets)
        return violations.isEmpty ? nil : violations.map { "\($0)" }.joined(separator: "; ")
    }

    /// The `status` reply: the core's advertising and centrals (each with its bond's identity
    /// address when `identity` knows one), and the controller as last known.
    func status(identity: (BluetoothAddress) -> BluetoothAddress?) -> ControlStatus {
        let core = context.core
        var status = ControlStatus(
            advertising: core.isAdvertising, address: core.address ?? known.lastAddress,
            connections: core.connections.values.sorted { $0.id.rawValue < $1.id.rawValue }.map { c in
                var central = ControlStatus.Central(address: c.address, addressType: c.addressType, security: c.security, id: c.id, att: core.att)
                central.identity = identity(c.address)
                central.link = c.link
                return central
            },
            advertisingData: core.payloads.advertisingData,
            scanResponse: core.payloads.parameters.advertisingType.isScannable || !core.payloads.scanResponseData.isEmpty
                ? core.payloads.scanResponseData : nil)
        status.state = known.state.state
        status.controller = known.info.map(ControlStatus.Controller.init)
        status.controller?.summary = known.summary
        // Connectable sets advertise from the controller's address; the others too where the
        // controller says so (not known until one was ready).
        let address = core.address
        let nonConnectableShowAddress = known.info?.nonConnectableSetsUseControllerAddress ?? false
        status.sets = core.allSets.map {
            ControlStatus.AdvertisingSetStatus(
                id: $0.id, advertising: core.isOnAir($0.id), payloads: $0.payloads,
                address: $0.payloads.isConnectable || nonConnectableShowAddress ? address : nil)
        }
        return status
    }

    /// The `state` event for an open that failed (`KnownController.state(for:)`).
    func setState(for f: TransportOpenFailure) { setState(KnownController.state(for: f), reason: f.message) }

    /// The controller's state changed: watchers hear it (once per change).
    func setState(_ state: ControlControllerState, reason: String?) {
        guard known.set(state, reason: reason) else { return }
        context.emit(.state(state, reason: reason))
    }
}
