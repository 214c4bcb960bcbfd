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
    let promise: EventLoopPromise<LinkRequestOutcome>
    let timeout: Scheduled<Void>
}

// `connection_parameters`: each central's request goes down through the stack, and the reply
// waits for every central's answer (`.linkRequestFinished`), its departure or the timeout.
extension PeripheralDaemon: LinkControl {
    /// Long enough for a central that answers over L2CAP and then updates at a slow interval.
    static let linkRequestTimeout: TimeAmount = .seconds(20)

    public func requestLink(_ request: LinkRequest, on connections: [ConnectionID]?) -> ControlOutcome {
        let targets = connections ?? core.connections.keys.sorted { $0.rawValue < $1.rawValue }
        guard !targets.isEmpty else { return .now(.failure(ControlError(.unknownCentral, "no central is connected"))) }
        if let busy = targets.first(where: { linkRequests[$0] != nil }) {
            return .now(.failure(ControlError(.busy, "\(linkCentralName(busy)) has a \(request.kind.rawValue) request waiting; send the next one after its reply")))
        }
        var futures: [EventLoopFuture<(String, LinkRequestOutcome)>] = []
        for id in targets {
            let name = linkCentralName(id)
            let promise = eventLoop.makePromise(of: LinkRequestOutcome.self)
            let timeout = eventLoop.scheduleTask(in: Self.linkRequestTimeout) { [weak self] () -> Void in self?.linkRequestEnded(id, .timedOut) }
            linkRequests[id] = PendingLinkRequest(promise: promise, timeout: timeout)
            futures.append(promise.futureResult.map { (name, $0) })
        }
        // Registered first: a transport that refuses at once answers inside `requestLink`.
        for id in targets {
            if case .connectionParameters(let p) = request {
                logger.info("\(linkCentralName(id)): asking for interval \(LinkParameters.milliseconds(Double(p.intervalMin) * 1.25))–\(LinkParameters.milliseconds(Double(p.intervalMax) * 1.25)) ms, latency \(p.latency), timeout \(Int(p.supervisionTimeout) * 10) ms")
            }
            stack.requestLink(id, request, now: now)
        }
        return .later(EventLoopFuture.whenAllSucceed(futures, on: eventLoop).map(Self.reply))
    }

    /// `{"ok":true}` when every central took it; else the first kind of failure, naming each central.
    private static func reply(_ outcomes: [(String, LinkRequestOutcome)]) -> ControlReply {
        var failures: [(ControlErrorCode, String)] = []
        for (central, outcome) in outcomes {
            switch outcome {
            case .finished(.accepted): break
            case .finished(.refused(let reason)): failures.append((.refused, "\(central): \(reason)"))
            case .timedOut: failures.append((.timeout, "\(central): no answer within \(linkRequestTimeout.nanoseconds / 1_000_000_000) s"))
            case .disconnected: failures.append((.unknownCentral, "\(central) disconnected before answering"))
            }
        }
        guard let first = failures.first else { return .success }
        return .failure(ControlError(first.0, failures.map(\.1).joined(separator: "; ")))
    }

    /// One central's request ended (answered, refused, timed out, or it left).
    func linkRequestEnded(_ id: ConnectionID, _ outcome: LinkRequestOutcome) {
        guard let pending = linkRequests.removeValue(forKey: id) else { return }
        pending.timeout.cancel()
        if case .finished(.refused(let reason)) = outcome { logger.info("\(linkCentralName(id)): link request refused: \(reason)") }
        if outcome == .timedOut { logger.info("\(linkCentralName(id)): link request got no answer in time") }
        pending.promise.succeed(outcome)
    }

    private func linkCentralName(_ id: ConnectionID) -> String { core.connections[id]?.address.description ?? id.description }
}
