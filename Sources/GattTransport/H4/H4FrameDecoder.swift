import GattCore
import NIOCore

/// Splits a byte stream into whole H4 packets (UART transport layer, Core Spec Vol 4 Part A §2),
/// using GattCore's ``H4Deframer``.
///
/// An invalid packet indicator means the stream is out of step: the error
/// (``H4DeframerError/invalidPacketIndicator(_:)``) reaches the pipeline and the transport
/// closes, so the daemon reconnects and resets the controller rather than guess.
public struct H4FrameDecoder: ByteToMessageDecoder, Sendable {
    public typealias InboundOut = H4Packet

    private var deframer = H4Deframer()

    public init() {}

    public mutating func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
        if buffer.readableBytes > 0 {
            deframer.append(buffer.readableBytesView)
            buffer.moveReaderIndex(forwardBy: buffer.readableBytes)
        }
        // Every complete packet goes out now: with the buffer drained, the handler may not call again.
        while let packet = try deframer.nextPacket() {
            context.fireChannelRead(Self.wrapInboundOut(packet))
        }
        return .needMoreData
    }

    public mutating func decodeLast(
        context: ChannelHandlerContext, buffer: inout ByteBuffer, seenEOF: Bool
    ) throws -> DecodingState {
        // A partial packet at end of stream is dropped: the daemon reconnects and resets the controller.
        try self.decode(context: context, buffer: &buffer)
    }
}
