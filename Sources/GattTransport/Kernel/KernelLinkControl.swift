import GattCore
import GattHost

/// A program's requests for one central's link on the kernel transport, and each link's
/// parameters, as rules: LE Connection Update, LE Set PHY and LE Set Data Length go out on the
/// raw HCI socket, as the kernel's own commands would, and the kernel takes their events as it
/// takes those of procedures the central starts. The rules are `LinkProcedures`' (the same as
/// on H4); the kernel keeps LE signalling, so the Connection Parameter Update Request is not
/// ours. Part of `KernelAdapter`, which passes in the links (handles to connections) and what
/// the open controller can do (`leFeatures`; nil while the adapter is not open).
struct KernelLinkControl: Sendable {
    private(set) var procedures = Self.fresh
    /// The PHYs each new link is asked for (`phy.preferred`); nil: none (`data_length_and_phy` off).
    var connectionPHYs: [LEPHY]?

    private static var fresh: LinkProcedures {
        LinkProcedures(signallingUnavailable: "the kernel keeps LE signalling to itself (no L2CAP Connection Parameter Update Request from a program)")
    }

    /// The adapter went: no link is left.
    mutating func adapterLost() { procedures = Self.fresh }

    /// LE Connection Complete in the peripheral role: its parameters, and LE Set PHY for it, as
    /// H4's host sends it (`phy.preferred`, where the controller has those PHYs); the kernel asks
    /// for none itself. Its outcome shows as a link change.
    mutating func connected(_ handle: UInt16, _ link: LinkParameters?, leFeatures: LEFeatures?, links: KernelLinkTable, _ out: inout [KernelAction]) {
        if let link { apply(procedures.opened(handle, link), links, leFeatures, &out) }
        guard let phys = connectionPHYs, let leFeatures,
            let command = LinkProcedures.preferredPHYCommand(handle, phys: phys, leFeatures: leFeatures)
        else { return }
        out.append(.hci(command, answered: true, failure: nil))
    }

    mutating func disconnected(_ handle: UInt16) { procedures.closed(handle) }

    /// LE Connection Update Complete, LE PHY Update Complete or LE Data Length Change.
    mutating func handle(_ event: HCILEMetaEvent, leFeatures: LEFeatures?, links: KernelLinkTable, _ out: inout [KernelAction]) {
        apply(procedures.handle(event), links, leFeatures, &out)
    }

    /// A link's ATT socket accepted as `id`. The monitor saw the connection first
    /// (`monitorSawIt`): its parameters so far. Otherwise what the procedures have for the
    /// handle is an earlier link's: the values come with the monitor's event, and until then
    /// (or for a link that was up before the monitor) they are unknown; link requests are taken.
    mutating func accepted(_ id: ConnectionID, handle: UInt16, monitorSawIt: Bool, _ out: inout [KernelAction]) {
        if monitorSawIt, let link = procedures.links[handle] {
            out.append(.event(.linkChanged(id, link)))
        } else {
            procedures.closed(handle)
            _ = procedures.opened(handle, LinkParameters())
        }
    }

    mutating func request(_ id: ConnectionID, _ request: LinkRequest, adapter: String, leFeatures: LEFeatures?, links: KernelLinkTable) -> [KernelAction] {
        guard let link = links[id] else {
            return [.event(.linkRequestFinished(id, request.kind, .refused("\(id) is not connected")))]
        }
        guard let leFeatures else {
            return [.event(.linkRequestFinished(id, request.kind, .refused("\(adapter) is not available")))]
        }
        guard let handle = link.handle else {
            return [.event(.linkRequestFinished(id, request.kind, .refused("the kernel did not tell \(id)'s connection handle")))]
        }
        // The controller answers a command it lacks with Unknown HCI Command: the request is
        // refused with that status.
        var out: [KernelAction] = []
        apply(procedures.request(handle, request, leFeatures: leFeatures) { _ in true }, links, leFeatures, &out)
        return out
    }

    mutating func cancel(_ id: ConnectionID, _ kind: LinkRequestKind, links: KernelLinkTable) {
        guard let handle = links[id]?.handle else { return }
        procedures.cancel(handle, kind)
    }

    /// The controller's answer to a link command (`status`: Unspecified Error when the socket
    /// failed or timed out).
    mutating func answered(_ command: HCICommand, status: HCIStatus, leFeatures: LEFeatures?, links: KernelLinkTable) -> [KernelAction] {
        var out: [KernelAction] = []
        guard let steps = procedures.answered(command, status: status) else {
            // Not a program's request (the new link's PHYs): nothing waits on it.
            if status != .success { out.append(.log(.debug, "\(command.name) failed: \(status)")) }
            return out
        }
        apply(steps, links, leFeatures, &out)
        return out
    }

    /// What `LinkProcedures` returned, as actions, in order (commands only while the adapter is open).
    private mutating func apply(_ steps: [LinkProcedures.Step], _ links: KernelLinkTable, _ leFeatures: LEFeatures?, _ out: inout [KernelAction]) {
        for step in steps {
            switch step {
            case .command(let command):
                if leFeatures != nil { out.append(.hci(command, answered: true, failure: nil)) }
            case .signal(let handle, _):
                // Never: `signallingUnavailable` is set. Should it come, nothing waits forever.
                procedures.cancel(handle, .connectionParameters)
            case .changed(let handle, let link):
                if let id = links.current(onHandle: handle) { out.append(.event(.linkChanged(id, link))) }
            case .finished(let handle, let kind, let result):
                if let id = links.current(onHandle: handle) { out.append(.event(.linkRequestFinished(id, kind, result))) }
            case .warning(let warning):
                out.append(.log(.info, "\(warning)"))
            }
        }
    }
}
