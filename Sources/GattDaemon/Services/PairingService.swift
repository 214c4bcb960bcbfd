import GattCore
import Logging

/// Pairing on the daemon's side: the log lines of the transport's Security Manager events,
/// the prompts waiting for a control client's answer (`PairingPrompts`), and the prompts nobody
/// can answer, refused at once rather than at the SMP timeout. A bond a pairing makes goes to
/// the bonds (`BondService`), through the daemon.
final class PairingService {
    private unowned let context: DaemonContext
    private var prompts = PairingPrompts()

    init(context: DaemonContext) { self.context = context }

    private var logger: Logger { context.logger }

    /// A pairing event: its log line, and a prompt asked or refused. Returns the bond to keep
    /// when the pairing completed with bonding (logged once it is kept, by the bonds).
    func observe(_ e: SecurityManagerEvent, on c: PeripheralConnection) -> Bond? {
        prompts.observe(e, on: c.id)
        switch e {
        case .pairingRequest(let method, let io):
            logger.info("\(c.address): asks to pair (\(method), its IO capability \(io))")
            ask(c, "a pairing confirmation")
        case .displayPasskey(let passkey):
            logger.notice("\(c.address): pairing passkey \(ControlPairingEvent.sixDigits(passkey))")
        case .numericComparison(let value):
            logger.info("\(c.address): numeric comparison \(ControlPairingEvent.sixDigits(value))")
            ask(c, "a numeric comparison")
        case .passkeyRequest:
            logger.info("\(c.address): asks for the passkey it displays")
            ask(c, "a passkey")
        case .pairingFailed(let reason, let remote):
            logger.warning("\(c.address): pairing failed (\(reason), \(remote ? "sent by the central" : "sent by us"))")
        case .timedOut:
            logger.warning("\(c.address): pairing timed out (30 s); SMP closed on this link")
        case .pairingComplete(let bond, let bonded):
            if bonded { return bond }
            logger.info("\(c.address): paired without bonding (\(Self.kind(of: bond)))")
        }
        return nil
    }

    /// The watchers hear the event (after a bond is durable: a watcher never sees `paired` for
    /// a bond a crash would lose).
    func announce(_ e: SecurityManagerEvent, on c: PeripheralConnection) {
        context.emit(.pairing(central: c.address.description, ControlPairingEvent(e)))
    }

    /// "LE Secure Connections, authenticated, key size 16", for log lines.
    static func kind(of bond: Bond) -> String {
        "\(bond.secureConnections ? "LE Secure Connections" : "legacy"), \(bond.authenticated ? "authenticated" : "unauthenticated"), key size \(bond.keySize)"
    }

    /// A prompt that needs a person goes to the watching control clients (its event follows;
    /// answered with `respond`); with none, the pairing fails now rather than at the SMP
    /// timeout, with a log line saying why.
    private func ask(_ c: PeripheralConnection, _ what: String) {
        guard !prompts.watched else { return }
        logger.warning("\(c.address): pairing needs \(what) and no control client watches to answer; refused")
        prompts.closed(c.id)
        context.stack.respondToPairing(c.id, .reject, now: context.now)
    }

    /// Whether a control client watches (one who can answer prompts may be there); the last
    /// one leaving refuses the prompts nobody can answer any more.
    var watched: Bool {
        get { prompts.watched }
        set {
            prompts.watched = newValue
            if !newValue { rejectPending() }
        }
    }

    private func rejectPending() {
        for id in prompts.pending.keys.sorted(by: { $0.rawValue < $1.rawValue }) {
            prompts.closed(id)
            if let c = context.core.connections[id] { logger.warning("\(c.address): the last control client left; pairing prompt refused") }
            context.stack.respondToPairing(id, .reject, now: context.now)
        }
    }

    /// The central left: its prompt is gone.
    func closed(_ id: ConnectionID) { prompts.closed(id) }

    /// A control client's answer to the prompt pending for `central` (`accept`, `passkey`,
    /// `confirm`), checked against the question and passed to the transport; nil when it
    /// was passed on.
    func respond(central: BluetoothAddress?, accept: Bool?, passkey: UInt32?, confirm: Bool?) -> PairingAnswerFailure? {
        let id: ConnectionID
        if let central {
            guard let c = context.core.connection(of: central) else { return .unknownCentral }
            id = c
        } else {
            guard prompts.pending.count == 1, let only = prompts.pending.keys.first else { return .ambiguous(prompts.pending.count) }
            id = only
        }
        switch prompts.answer(PairingPrompts.Answer(accept: accept, passkey: passkey, confirm: confirm), on: id) {
        case .failure(let refusal): return .refused(refusal.description)
        case .success(let answer):
            context.stack.respondToPairing(id, answer, now: context.now)
            return nil
        }
    }
}

/// Why a control client's answer to a pairing prompt was not passed on.
public enum PairingAnswerFailure: Error, Sendable, Equatable, CustomStringConvertible {
    case unknownCentral
    case refused(String)
    /// No central named and not exactly one prompt waiting.
    case ambiguous(Int)
    public var description: String {
        switch self {
        case .unknownCentral: "no such central is connected"
        case .refused(let why): why
        case .ambiguous(let n): "\(n) pairing prompts are waiting; name the central"
        }
    }
}
