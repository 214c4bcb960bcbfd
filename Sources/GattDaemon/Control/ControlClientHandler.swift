import GattControlProtocol
import NIOCore

/// Per-connection handler: framing in, server calls, flush after each read batch.
final class ControlClientHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer

    private let server: ControlServer
    private let local: Bool
    private var client: ControlClient?
    private var framer: ControlLineFramer

    init(server: ControlServer, local: Bool = false) {
        self.server = server
        self.local = local
        self.framer = ControlLineFramer(maximumLength: server.options.maximumLineLength)
    }

    func channelActive(context: ChannelHandlerContext) {
        client = server.added(context.channel, local: local)
        if client != nil { context.fireChannelActive() }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let buffer = unwrapInboundIn(data)
        guard let client, !client.dropped else { return }
        framer.push(buffer.readableBytesView) { o in
            guard !client.dropped else { return }
            server.received(o, from: client)
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        if let client { server.sendBatch(client) }
        context.flush()
    }

    func channelInactive(context: ChannelHandlerContext) {
        if let client { server.removed(client) }
        client = nil
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}

@available(*, unavailable)
extension ControlClientHandler: Sendable {}
