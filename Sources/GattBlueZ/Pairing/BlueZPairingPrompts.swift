import GattCore
import GattDBus

/// The questions bluetoothd asks gattd's pairing agent (`BlueZAgent.route`), as the core's
/// pairing prompts: one per connection waits for the user's answer (`respondToPairing`); a
/// newer one refuses the older, and a central that leaves or bluetoothd's `Cancel` refuses
/// what waits. Questions about another adapter's devices are refused. Sans-I/O: `Call` is the
/// agent call the shell answers.
public struct BlueZPairingPrompts<Call: Sendable>: Sendable {
    private struct Prompt: Sendable {
        let call: Call
        let event: SecurityManagerEvent
    }

    private var prompts: [ConnectionID: Prompt] = [:]

    public init() {}

    /// The connections whose prompt waits for the user.
    public var waiting: [ConnectionID] { prompts.keys.sorted { $0.rawValue < $1.rawValue } }

    /// The replies to send and what the core hears.
    public struct Handling {
        public var replies: [(call: Call, reply: Result<[DBusValue], DBusError>)] = []
        public var events: [TransportEvent] = []
        /// The device bluetoothd asked about that is no central of this adapter (refused).
        public var foreign: String?
    }

    /// One call on the agent, `route` being what it asks, about the centrals of `devices`.
    public mutating func agentCall(_ call: Call, _ route: BlueZAgent.Call, devices: inout BlueZDevices) -> Handling {
        var h = Handling()
        switch route {
        case .prompt(let device, let event):
            guard let (id, events) = devices.connection(for: device) else {
                h.foreign = device
                h.replies = [(call, .failure(BlueZAgent.rejected))]
                return h
            }
            devices.asked(device, event)
            if let earlier = prompts.removeValue(forKey: id) { h.replies = [(earlier.call, .failure(BlueZAgent.rejected))] }
            prompts[id] = Prompt(call: call, event: event)
            h.events = events + [.pairing(id, event)]
        case .show(let device, let event):
            h.replies = [(call, .success([]))]
            guard let (id, events) = devices.connection(for: device) else { return h }
            devices.asked(device, event)
            h.events = events + [.pairing(id, event)]
        case .acknowledge:
            h.replies = [(call, .success([]))]
        case .justWorks(let device):
            // Another adapter's pairing (a keyboard's) is not gattd's to accept.
            guard devices.owns(device) else {
                h.foreign = device
                h.replies = [(call, .failure(BlueZAgent.rejected))]
                return h
            }
            h.replies = [(call, .success([]))]
        case .cancel:
            h.replies = [(call, .success([]))]
            for id in waiting {
                guard let p = prompts.removeValue(forKey: id) else { continue }
                h.replies.append((p.call, .failure(BlueZAgent.rejected)))
                h.events.append(.pairing(id, .pairingFailed(.unspecifiedReason, remote: true)))
            }
        case .refuse(let error):
            h.replies = [(call, .failure(error))]
        }
        return h
    }

    /// The user answered connection `id`'s prompt: the call it answers and the reply. Nil: no
    /// prompt waits there.
    public mutating func answer(_ id: ConnectionID, _ answer: PairingUserAnswer) -> (call: Call, reply: Result<[DBusValue], DBusError>)? {
        guard let p = prompts.removeValue(forKey: id) else { return nil }
        return (p.call, BlueZAgent.reply(answer, to: p.event))
    }

    /// Centrals went (`events`' disconnections): their unanswered prompts, to refuse.
    public mutating func ended(_ events: [TransportEvent]) -> [Call] {
        var refused: [Call] = []
        for case .disconnected(let id, _, _) in events {
            if let p = prompts.removeValue(forKey: id) { refused.append(p.call) }
        }
        return refused
    }

    /// Every prompt still waiting, to refuse (bluetoothd or the bus went away).
    public mutating func dropAll() -> [Call] {
        defer { prompts = [:] }
        return waiting.compactMap { prompts[$0]?.call }
    }
}
