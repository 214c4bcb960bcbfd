import GattControlProtocol
import GattCore
import NIOCore

/// How one central's part of a `connection_parameters` op ended.
enum LinkRequestOutcome: Sendable, Equatable {
    case finished(LinkRequestResult)
    /// No answer within `PeripheralDaemon.linkRequestTimeout`.
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

// `connection_parameters`: each central's request goes down through the stack, and the reply
// waits for every central's answer (`.linkRequestFinished`), its departure or the timeout.
extension PeripheralDaemon: LinkControl {
    /// Long enough for a central that answers over L2CAP and then updates at a slow interval
    /// (`linkRequestTimeout`'s default).
    static let defaultLinkRequestTimeout: TimeAmount = .seconds(20)

    public func requestLink(_ request: LinkRequest, on connections: [ConnectionID]?) -> ControlOutcome {
        let targets = connections ?? core.connections.keys.sorted { $0.rawValue < $1.rawValue }
        guard !targets.isEmpty else { return .now(.failure(ControlError(.unknownCentral, "no central is connected"))) }
        if let busy = targets.first(where: { linkRequests[$0] != nil }), let waiting = linkRequests[busy] {
            return .now(.failure(ControlError(.busy, "\(linkCentralName(busy)) has a \(waiting.kind.rawValue) request waiting; send the next one after its reply")))
        }
        var futures: [EventLoopFuture<(String, LinkRequestOutcome)>] = []
        for id in targets {
            let name = linkCentralName(id)
            let promise = eventLoop.makePromise(of: LinkRequestOutcome.self)
            let kind = request.kind
            let timeout = eventLoop.scheduleTask(in: linkRequestTimeout) { [weak self] () -> Void in self?.linkRequestTimedOut(id, kind) }
            linkRequests[id] = PendingLinkRequest(kind: kind, promise: promise, timeout: timeout)
            futures.append(promise.futureResult.map { (name, $0) })
        }
        // Registered first: a transport that refuses at once answers inside `requestLink`.
        for id in targets {
            if case .connectionParameters(let p) = request {
                logger.info("\(linkCentralName(id)): asking for interval \(LinkParameters.milliseconds(Double(p.intervalMin) * 1.25))–\(LinkParameters.milliseconds(Double(p.intervalMax) * 1.25)) ms, latency \(p.latency), timeout \(Int(p.supervisionTimeout) * 10) ms")
            }
            stack.requestLink(id, request, now: now)
        }
        let seconds = LinkParameters.milliseconds(Double(linkRequestTimeout.nanoseconds) / 1e9)
        return .later(EventLoopFuture.whenAllSucceed(futures, on: eventLoop).map { Self.reply($0, timeoutSeconds: seconds) })
    }

    /// `{"ok":true}` when every central took it; else the first kind of failure, naming each central.
    private static func reply(_ outcomes: [(String, LinkRequestOutcome)], timeoutSeconds: String) -> ControlReply {
        var failures: [(ControlErrorCode, String)] = []
        for (central, outcome) in outcomes {
            switch outcome {
            case .finished(.accepted): break
            case .finished(.refused(let reason)): failures.append((.refused, "\(central): \(reason)"))
            case .timedOut: failures.append((.timeout, "\(central): no answer within \(timeoutSeconds) s"))
            case .disconnected: failures.append((.unknownCentral, "\(central) disconnected before answering"))
            }
        }
        guard let first = failures.first else { return .success }
        return .failure(ControlError(first.0, failures.map(\.1).joined(separator: "; ")))
    }

    /// No answer in time: the stack forgets the request too (a late answer answers nothing).
    private func linkRequestTimedOut(_ id: ConnectionID, _ kind: LinkRequestKind) {
        guard linkRequests[id]?.kind == kind else { return }
        stack.cancelLinkRequest(id, kind, now: now)
        linkRequestEnded(id, .timedOut)
    }

    /// One central's request ended (answered, refused, timed out, or it left); `kind`: only
    /// a request of that kind is answered (an answer to another, older one is not its own).
    func linkRequestEnded(_ id: ConnectionID, _ outcome: LinkRequestOutcome, kind: LinkRequestKind? = nil) {
        guard let waiting = linkRequests[id], kind == nil || kind == waiting.kind, let pending = linkRequests.removeValue(forKey: id) else { return }
        pending.timeout.cancel()
        if case .finished(.refused(let reason)) = outcome { logger.info("\(linkCentralName(id)): link request refused: \(reason)") }
        if outcome == .timedOut { logger.info("\(linkCentralName(id)): link request got no answer in time") }
        pending.promise.succeed(outcome)
    }

    private func linkCentralName(_ id: ConnectionID) -> String { core.connections[id]?.address.description ?? id.description }
}
