import GattControlProtocol
import GattCore
import NIOCore

/// How one central's part of a `connection_parameters` op ended.
enum LinkRequestOutcome: Sendable, Equatable {
    case finished(LinkRequestResult)
    /// No answer within `LinkRequests.timeout`.
    case timedOut
    /// The central left (or the controller went away) while the request waited.
    case disconnected
}

/// A link request waiting for its central's answer (one per central at a time).
struct PendingLinkRequest {
    /// What it asked: only a `.linkRequestFinished` of this kind answers it.
    let kind: LinkRequestKind
    let promise: EventLoopPromise<LinkRequestOutcome>
    let timeout: Scheduled<Void>
}

/// The `connection_parameters` requests waiting for their centrals' answers: at most one per
/// central, each ended by a `.linkRequestFinished` of its own kind, the central's departure or
/// `timeout`. The daemon sends them down through its stack and completes what ends here.
struct LinkRequests {
    /// Long enough for a central that answers over L2CAP and then updates at a slow interval.
    static let defaultTimeout: TimeAmount = .seconds(20)

    /// How long a request waits for its central (tests shorten it).
    var timeout = Self.defaultTimeout
    private var waiting: [ConnectionID: PendingLinkRequest] = [:]

    /// The first of `targets` that has a request waiting, and that request's kind.
    func busy(_ targets: [ConnectionID]) -> (ConnectionID, LinkRequestKind)? {
        for id in targets { if let w = waiting[id] { return (id, w.kind) } }
        return nil
    }

    /// Whether `id` waits for an answer of `kind`.
    func waits(_ id: ConnectionID, for kind: LinkRequestKind) -> Bool { waiting[id]?.kind == kind }

    mutating func wait(_ id: ConnectionID, _ request: PendingLinkRequest) { waiting[id] = request }

    /// Ends `id`'s request when `kind` is nil or its own (an answer to another, older request
    /// is not its own): the request, its timeout cancelled, for the caller to complete.
    mutating func end(_ id: ConnectionID, kind: LinkRequestKind?) -> PendingLinkRequest? {
        guard let w = waiting[id], kind == nil || kind == w.kind else { return nil }
        waiting[id] = nil
        w.timeout.cancel()
        return w
    }

    /// `{"ok":true}` when every central took it; else the first kind of failure, naming each central.
    static func reply(_ outcomes: [(String, LinkRequestOutcome)], timeout: TimeAmount) -> ControlReply {
        let seconds = LinkParameters.milliseconds(Double(timeout.nanoseconds) / 1e9)
        var failures: [(ControlErrorCode, String)] = []
        for (central, outcome) in outcomes {
            switch outcome {
            case .finished(.accepted): break
            case .finished(.refused(let reason)): failures.append((.refused, "\(central): \(reason)"))
            case .timedOut: failures.append((.timeout, "\(central): no answer within \(seconds) s"))
            case .disconnected: failures.append((.unknownCentral, "\(central) disconnected before answering"))
            }
        }
        guard let first = failures.first else { return .success }
        return .failure(ControlError(first.0, failures.map(\.1).joined(separator: "; ")))
    }
}
