import GattCore
import GattHost
import NIOCore
#if canImport(Glibc)
import Glibc
#endif

/// Bytes in, whole packets straight to `onPacket` (no `H4Packet` through the pipeline: `NIOAny`
/// would cost dynamic casts per packet), and the close reported with the error that caused it.
///
/// Stream transports (`tcp:`, `unix:`, `serial:`) deframe with `H4Deframer`: an invalid packet
/// indicator means the stream is out of step, so the transport closes with that error (the
/// daemon reconnects and resets the controller rather than guess) and nothing after it is
/// delivered; a partial packet at end of stream is dropped. On the user channel each read is
/// one datagram, one whole packet; a datagram that is not one is dropped (the next is
/// independent of it).
final class H4PacketReader: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer

    /// Where packets, the end of each read and the close go.
    struct Handlers: Sendable {
        var packet: H4Transport.PacketHandler
        var readComplete: H4Transport.ReadCompleteHandler
        var close: H4Transport.CloseHandler
    }

    /// Stream framing; nil on the user channel (one packet per datagram).
    private var deframer: H4Deframer?
    private let onPacket: H4Transport.PacketHandler
    private let onReadComplete: H4Transport.ReadCompleteHandler
    private let onClose: H4Transport.CloseHandler
    private var closeError: (any Error)?

    init(stream: Bool, handlers: Handlers) {
        self.deframer = stream ? H4Deframer() : nil
        self.onPacket = handlers.packet
        self.onReadComplete = handlers.readComplete
        self.onClose = handlers.close
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard closeError == nil else { return }
        let buffer = unwrapInboundIn(data)
        guard deframer != nil else {
            guard buffer.readableBytes > 0, let packet = try? H4Packet(decoding: Array(buffer.readableBytesView)) else { return }
            onPacket(packet)
            return
        }
        buffer.withUnsafeReadableBytes { deframer!.append($0) }
        do {
            while let packet = try deframer!.nextPacket() { onPacket(packet) }
        } catch {
            errorCaught(context: context, error: error)
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        onReadComplete()
        context.fireChannelReadComplete()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if closeError == nil { closeError = error }
        context.close(promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        onClose(closeError)
        context.fireChannelInactive()
    }
}
