import GattControlProtocol
import GattCore
import NIOCore

/// `connection_parameters` and the other link requests (`LinkRequests`: what waits for each
/// central's answer): each central's request goes down through the stack, and the reply waits
/// for every central's answer (`.linkRequestFinished`), its departure or the timeout.
/// Confined to the daemon's event loop (its timeouts run there).
final class LinkRequestService: @unchecked Sendable {
    private unowned let context: DaemonContext
    private let eventLoop: any EventLoop
    private var requests = LinkRequests()

    init(context: DaemonContext, eventLoop: any EventLoop) {
        self.context = context
        self.eventLoop = eventLoop
    }

    /// How long a central has to answer (tests shorten it).
    var timeout: TimeAmount {
        get { requests.timeout }
        set { requests.timeout = newValue }
    }

    /// `request` to `connections` (nil: every central); the reply once each has answered.
    func request(_ request: LinkRequest, on connections: [ConnectionID]?) -> ControlOutcome {
        let targets = connections ?? context.core.connections.keys.sorted { $0.rawValue < $1.rawValue }
        guard !targets.isEmpty else { return .now(.failure(ControlError(.unknownCentral, "no central is connected"))) }
        if let (busy, kind) = requests.busy(targets) {
            return .now(.failure(ControlError(.busy, "\(name(busy)) has a \(kind.rawValue) request waiting; send the next one after its reply")))
        }
        var futures: [EventLoopFuture<(String, LinkRequestOutcome)>] = []
        for id in targets {
            let name = name(id)
            let promise = eventLoop.makePromise(of: LinkRequestOutcome.self)
            let kind = request.kind
            let timeout = eventLoop.scheduleTask(in: requests.timeout) { [weak self] () -> Void in self?.timedOut(id, kind) }
            requests.wait(id, PendingLinkRequest(kind: kind, promise: promise, timeout: timeout))
            futures.append(promise.futureResult.map { (name, $0) })
        }
        // Registered first: a transport that refuses at once answers inside `requestLink`.
        for id in targets {
            if case .connectionParameters(let p) = request {
                context.logger.info("\(name(id)): asking for interval \(LinkParameters.milliseconds(Double(p.intervalMin) * 1.25))–\(LinkParameters.milliseconds(Double(p.intervalMax) * 1.25)) ms, latency \(p.latency), timeout \(Int(p.supervisionTimeout) * 10) ms")
            }
            context.stack.requestLink(id, request, now: context.now)
        }
        let timeout = requests.timeout
        return .later(EventLoopFuture.whenAllSucceed(futures, on: eventLoop).map { LinkRequests.reply($0, timeout: timeout) })
    }

    /// No answer in time: the stack forgets the request too (a late answer answers nothing).
    private func timedOut(_ id: ConnectionID, _ kind: LinkRequestKind) {
        guard requests.waits(id, for: kind) else { return }
        context.stack.cancelLinkRequest(id, kind, now: context.now)
        ended(id, .timedOut)
    }

    /// One central's request ended (answered, refused, timed out, or it left); `kind`: only
    /// a request of that kind is answered (an answer to another, older one is not its own).
    func ended(_ id: ConnectionID, _ outcome: LinkRequestOutcome, kind: LinkRequestKind? = nil) {
        guard let pending = requests.end(id, kind: kind) else { return }
        if case .finished(.refused(let reason)) = outcome { context.logger.info("\(name(id)): link request refused: \(reason)") }
        if outcome == .timedOut { context.logger.info("\(name(id)): link request got no answer in time") }
        pending.promise.succeed(outcome)
    }

    private func name(_ id: ConnectionID) -> String { context.core.connections[id]?.address.description ?? id.description }
}
