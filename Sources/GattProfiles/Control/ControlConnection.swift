import DequeModule
import GattControlProtocol
import GattCore
import Logging
import NIOCore
import NIOPosix

/// A profile agent's connection to gattd's control socket: newline-delimited JSON, the
/// requests and replies of `ControlRequest`/`ControlReply`, events as they come. Exactly what
/// any program on the socket speaks (gattd hands the agent one end of a socket pair that it
/// serves as a control client). Confined to its event loop.
final class ControlConnection: @unchecked Sendable {
    let channel: any Channel
    /// The ops of the requests sent, oldest first: replies come in request order.
    private var pending: Deque<(op: String, promise: EventLoopPromise<ControlReply>)> = []
    /// Requests awaiting their replies, at most (an agent is never meant to come near it).
    static let maximumPending = 4096
    /// Every event (after `watch`).
    var onEvent: ((ControlEvent) -> Void)?
    /// The connection closed (gattd stopping, or it dropped this client).
    var onClose: (() -> Void)?

    private init(channel: any Channel) {
        self.channel = channel
    }

    /// Takes `socket` (a connected stream socket to gattd's control server).
    static func open(socket: CInt, on eventLoop: any EventLoop) -> EventLoopFuture<ControlConnection> {
        ClientBootstrap(group: eventLoop)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(ControlConnectionHandler()) }
            }
            .withConnectedSocket(socket)
            .flatMapThrowing { channel in
                let c = ControlConnection(channel: channel)
                try channel.pipeline.syncOperations.handler(type: ControlConnectionHandler.self).connection = c
                return c
            }
    }

    /// Opens a connection on the socket `connect` gives (`ControlServer.connectLocalClient`);
    /// `opened` runs on the loop with it, or logs why there is none.
    static func open(
        _ connect: () -> EventLoopFuture<CInt>, on eventLoop: any EventLoop, logger: Logger, what: String,
        opened: @escaping (ControlConnection) -> Void
    ) {
        connect().flatMap { ControlConnection.open(socket: $0, on: eventLoop) }.assumeIsolated().whenComplete { result in
            switch result {
            case .failure(let error): logger.error("\(what): cannot connect to the control server: \(error)")
            case .success(let c): opened(c)
            }
        }
    }

    /// Sends one request; its reply (a `failure` reply is a success of the future; the future
    /// fails only when the connection closes first).
    func request(_ command: ControlCommand) -> EventLoopFuture<ControlReply> {
        let promise = channel.eventLoop.makePromise(of: ControlReply.self)
        guard channel.isActive, pending.count < Self.maximumPending else {
            promise.fail(ChannelError.ioOnClosedChannel)
            if channel.isActive { close() }  // an agent that outran gattd this far is stuck: start over
            return promise.futureResult
        }
        pending.append((command.op, promise))
        var buffer = channel.allocator.buffer(capacity: 128)
        buffer.writeString(ControlRequest(command: command).text)
        buffer.writeInteger(UInt8(0x0A))
        channel.writeAndFlush(buffer, promise: nil)
        return promise.futureResult
    }

    func close() {
        channel.close(promise: nil)
    }

    fileprivate func received(line: [UInt8]) {
        let op = pending.first?.op ?? ""
        do {
            switch try ControlMessage.decode(line, answering: op) {
            case .reply(let reply, _): pending.popFirst()?.promise.succeed(reply)
            case .event(let event): onEvent?(event)
            case .unknownEvent: break
            }
        } catch {
            // Not an event (those carry "event" and decode, or are unknown): the reply to the
            // oldest request, unreadable. It still answers that request, so later replies
            // stay matched to theirs.
            pending.popFirst()?.promise.succeed(.failure(error))
        }
    }

    fileprivate func closed() {
        while let p = pending.popFirst() { p.promise.fail(ChannelError.ioOnClosedChannel) }
        onClose?()
        onClose = nil
        onEvent = nil
    }
}

/// Lines in, to the connection.
private final class ControlConnectionHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    var connection: ControlConnection?
    /// gattd's lines are never long: a reply or event past the limit is dropped (a `status`
    /// with many centrals stays far below it).
    private var framer = ControlLineFramer(maximumLength: 1 << 20)

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let buffer = unwrapInboundIn(data)
        framer.push(buffer.readableBytesView) { output in
            switch output {
            case .line(let l): connection?.received(line: l)
            // Not decodable: it answers the oldest request with an error, as an unreadable reply does.
            case .tooLong: connection?.received(line: [])
            }
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        connection?.closed()
        connection = nil
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}

@available(*, unavailable)
extension ControlConnectionHandler: Sendable {}
