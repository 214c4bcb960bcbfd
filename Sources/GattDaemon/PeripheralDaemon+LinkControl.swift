import GattControlProtocol
import GattCore
import NIOCore

// `connection_parameters`: each central's request goes down through the stack, and the reply
// waits for every central's answer (`.linkRequestFinished`), its departure or the timeout.
extension PeripheralDaemon: LinkControl {
    public func requestLink(_ request: LinkRequest, on connections: [ConnectionID]?) -> ControlOutcome {
        let targets = connections ?? core.connections.keys.sorted { $0.rawValue < $1.rawValue }
        guard !targets.isEmpty else { return .now(.failure(ControlError(.unknownCentral, "no central is connected"))) }
        if let (busy, kind) = linkRequests.busy(targets) {
            return .now(.failure(ControlError(.busy, "\(linkCentralName(busy)) has a \(kind.rawValue) request waiting; send the next one after its reply")))
        }
        var futures: [EventLoopFuture<(String, LinkRequestOutcome)>] = []
        for id in targets {
            let name = linkCentralName(id)
            let promise = eventLoop.makePromise(of: LinkRequestOutcome.self)
            let kind = request.kind
            let timeout = eventLoop.scheduleTask(in: linkRequests.timeout) { [weak self] () -> Void in self?.linkRequestTimedOut(id, kind) }
            linkRequests.wait(id, PendingLinkRequest(kind: kind, promise: promise, timeout: timeout))
            futures.append(promise.futureResult.map { (name, $0) })
        }
        // Registered first: a transport that refuses at once answers inside `requestLink`.
        for id in targets {
            if case .connectionParameters(let p) = request {
                logger.info("\(linkCentralName(id)): asking for interval \(LinkParameters.milliseconds(Double(p.intervalMin) * 1.25))–\(LinkParameters.milliseconds(Double(p.intervalMax) * 1.25)) ms, latency \(p.latency), timeout \(Int(p.supervisionTimeout) * 10) ms")
            }
            stack.requestLink(id, request, now: now)
        }
        let timeout = linkRequests.timeout
        return .later(EventLoopFuture.whenAllSucceed(futures, on: eventLoop).map { LinkRequests.reply($0, timeout: timeout) })
    }

    /// No answer in time: the stack forgets the request too (a late answer answers nothing).
    private func linkRequestTimedOut(_ id: ConnectionID, _ kind: LinkRequestKind) {
        guard linkRequests.waits(id, for: kind) else { return }
        stack.cancelLinkRequest(id, kind, now: now)
        linkRequestEnded(id, .timedOut)
    }

    /// One central's request ended (answered, refused, timed out, or it left); `kind`: only
    /// a request of that kind is answered (an answer to another, older one is not its own).
    func linkRequestEnded(_ id: ConnectionID, _ outcome: LinkRequestOutcome, kind: LinkRequestKind? = nil) {
        guard let pending = linkRequests.end(id, kind: kind) else { return }
        if case .finished(.refused(let reason)) = outcome { logger.info("\(linkCentralName(id)): link request refused: \(reason)") }
        if outcome == .timedOut { logger.info("\(linkCentralName(id)): link request got no answer in time") }
        pending.promise.succeed(outcome)
    }

    private func linkCentralName(_ id: ConnectionID) -> String { core.connections[id]?.address.description ?? id.description }
}
