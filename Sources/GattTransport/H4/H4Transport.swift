import GattCore
import GattHost
import NIOCore
import NIOPosix

#if canImport(Glibc)
import Glibc
#endif

/// A connection to a Bluetooth controller that speaks H4: whole HCI packets, each with its
/// packet indicator (0x01 command, 0x02 ACL, 0x04 event, 0x05 ISO), as GattHost ``H4Packet``s.
///
/// Open one with ``connect(to:group:onPacket:onReadComplete:onClose:)``. Inbound packets and the close
/// notification are delivered on ``eventLoop``; the daemon retries with backoff after `onClose`.
public final class H4Transport: @unchecked Sendable {
    /// Called with each packet from the controller, on the channel's event loop.
    public typealias PacketHandler = @Sendable (H4Packet) -> Void
    /// Called once when an established transport closes: nil after an orderly close or end of
    /// stream, otherwise the error that closed it. Runs on the channel's event loop.
    public typealias CloseHandler = @Sendable ((any Error)?) -> Void
    /// Called at the end of each read from the controller (after its packets' `onPacket`).
    public typealias ReadCompleteHandler = @Sendable () -> Void

    public let spec: TransportSpec
    public let channel: any Channel

    public var eventLoop: any EventLoop { channel.eventLoop }
    /// Completes when the transport has closed, for whatever reason.
    public var closeFuture: EventLoopFuture<Void> { channel.closeFuture }

    /// Stream transports gather the packets of `write` into `outgoing` (one buffer, one write
    /// syscall at `flush`); on the user channel each packet is its own datagram.
    private let gathers: Bool
    /// Packets written and not yet flushed: the readable bytes (event loop only). Kept
    /// between flushes, so that once the channel has written a flush's bytes the next
    /// packets reuse its storage instead of allocating a buffer per flush.
    private let outgoing: NIOLoopBoundBox<ByteBuffer>
    /// A gathering buffer grown larger than this by a burst is not kept.
    static let keptCapacity = 16 * 1024

    init(spec: TransportSpec, channel: any Channel, gathers: Bool) {
        self.spec = spec
        self.channel = channel
        self.gathers = gathers
        self.outgoing = NIOLoopBoundBox(channel.allocator.buffer(capacity: 512), eventLoop: channel.eventLoop)
    }

    /// Writes one H4 packet to the controller (from any thread).
    @discardableResult
    public func send(_ packet: H4Packet) -> EventLoopFuture<Void> {
        channel.writeAndFlush(Self.encode(packet, allocator: channel.allocator))
    }

    /// Queues one H4 packet; it goes out with the next `flush`. On the event loop only.
    public func write(_ packet: H4Packet) {
        guard gathers else {
            channel.write(Self.encode(packet, allocator: channel.allocator), promise: nil)
            return
        }
        outgoing.withValue { buffer in
            if buffer.readableBytes == 0 {
                // Unique again once the channel has written the last flush: no allocation.
                if buffer.capacity > Self.keptCapacity { buffer = channel.allocator.buffer(capacity: 512) } else { buffer.clear() }
            }
            buffer.writeH4Packet(packet)
        }
    }

    /// Sends what `write` queued. On the event loop only.
    public func flush() {
        let gathered = outgoing.withValue { buffer -> Bool in
            guard buffer.readableBytes > 0 else { return false }
            channel.writeAndFlush(buffer, promise: nil)  // one trip down the pipeline, not two
            buffer.moveReaderIndex(to: buffer.writerIndex)  // sent: no storage write, so no copy
            return true
        }
        if !gathered { channel.flush() }
    }

    /// One packet in a buffer of its own (`send`, the user channel).
    static func encode(_ packet: H4Packet, allocator: ByteBufferAllocator) -> ByteBuffer {
        var buffer = allocator.buffer(capacity: 1 + packet.bodyCount)
        buffer.writeH4Packet(packet)
        return buffer
    }

    /// Closes the transport; `onClose` is called with nil.
    @discardableResult
    public func close() -> EventLoopFuture<Void> {
        channel.close().flatMapError { error in
            if let channelError = error as? ChannelError, channelError == .alreadyClosed {
                return self.channel.eventLoop.makeSucceededVoidFuture()
            }
            return self.channel.eventLoop.makeFailedFuture(error)
        }
    }

    /// Opens the H4 transport `spec` names. Fails for `kernel:` specs, which are not H4.
    public static func connect(
        to spec: TransportSpec,
        group: any EventLoopGroup,
        onPacket: @escaping PacketHandler,
        onReadComplete: @escaping ReadCompleteHandler = {},
        onClose: @escaping CloseHandler = { _ in }
    ) -> EventLoopFuture<H4Transport> {
        let eventLoop = group.next()
        let handlers = H4PacketReader.Handlers(packet: onPacket, readComplete: onReadComplete, close: onClose)
        let channelFuture: EventLoopFuture<any Channel>
        switch spec {
        case .tcp(let host, let port):
            channelFuture = ClientBootstrap(group: eventLoop)
                .channelOption(.socketOption(.tcp_nodelay), value: 1)
                .connectTimeout(.seconds(10))
                .channelInitializer { channel in
                    addStreamHandlers(to: channel, handlers: handlers)
                }
                .connect(host: host, port: port)
        case .unix(let path):
            channelFuture = ClientBootstrap(group: eventLoop)
                .channelInitializer { channel in
                    addStreamHandlers(to: channel, handlers: handlers)
                }
                .connect(unixDomainSocketPath: path)
        case .serial(let device, let baudRate, let flowControl):
            let descriptor: CInt
            do {
                descriptor = try SerialPort.open(device: device, baudRate: baudRate, flowControl: flowControl)
            } catch {
                return eventLoop.makeFailedFuture(error)
            }
            channelFuture = NIOPipeBootstrap(group: eventLoop)
                .channelInitializer { channel in
                    addStreamHandlers(to: channel, handlers: handlers)
                }
                .takingOwnershipOfDescriptor(inputOutput: descriptor)
                .always { result in
                    if case .failure = result { _ = Glibc.close(descriptor) }
                }
        case .userChannel(let index):
            let descriptor: CInt
            do {
                descriptor = try HCIUserChannel.open(controller: index)
            } catch {
                return eventLoop.makeFailedFuture(error)
            }
            return connectDatagram(descriptor: descriptor, spec: spec, eventLoop: eventLoop, handlers: handlers)
        case .kernel:
            return eventLoop.makeFailedFuture(
                HCITransportError("\(spec) is the kernel transport, not an H4 transport"))
        case .bluez:
            return eventLoop.makeFailedFuture(
                HCITransportError("\(spec) is the BlueZ back end, not an H4 transport"))
        }
        return channelFuture.map { H4Transport(spec: spec, channel: $0, gathers: true) }
    }

    /// Async form of ``connect(to:group:onPacket:onReadComplete:onClose:)``.
    public static func connect(
        to spec: TransportSpec,
        group: any EventLoopGroup,
        onPacket: @escaping PacketHandler,
        onClose: @escaping CloseHandler = { _ in }
    ) async throws -> H4Transport {
        try await connect(to: spec, group: group, onPacket: onPacket, onClose: onClose).get()
    }

    /// Wraps a datagram descriptor (one H4 packet per datagram, as on the HCI user channel).
    /// Takes ownership of `descriptor`, closing it if the channel cannot be made.
    static func connectDatagram(
        descriptor: CInt, spec: TransportSpec, eventLoop: any EventLoop, handlers: H4PacketReader.Handlers
    ) -> EventLoopFuture<H4Transport> {
        NIOPipeBootstrap(group: eventLoop)
            // One datagram per read: the buffer must hold the largest packet or it is truncated.
            .channelOption(.recvAllocator, value: FixedSizeRecvByteBufferAllocator(capacity: 1 + 4 + 65535))
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandlers(
                        H4DatagramWriter(descriptor: descriptor),
                        H4PacketReader(stream: false, handlers: handlers)
                    )
                }
            }
            .takingOwnershipOfDescriptor(inputOutput: descriptor)
            .always { result in
                if case .failure = result { _ = Glibc.close(descriptor) }
            }
            .map { H4Transport(spec: spec, channel: $0, gathers: false) }
    }

    private static func addStreamHandlers(to channel: any Channel, handlers: H4PacketReader.Handlers) -> EventLoopFuture<Void> {
        channel.eventLoop.makeCompletedFuture {
            // Bytes both ways: `write` encodes, `H4PacketReader` deframes and delivers.
            try channel.pipeline.syncOperations.addHandler(H4PacketReader(stream: true, handlers: handlers))
        }
    }
}

/// A transport could not be opened; the message says why and, where possible, what to do.
public struct HCITransportError: Error, Sendable, Hashable, CustomStringConvertible {
    public let message: String
    /// The `errno` behind the failure, when there is one.
    public let errno: CInt?

    public init(_ message: String, errno: CInt? = nil) {
        self.message = message
        self.errno = errno
    }

    public var description: String { message }
}

extension ByteBuffer {
    /// Indicator byte, then the HCI packet (Vol 4 Part A §2).
    mutating func writeH4Packet(_ packet: H4Packet) {
        writeInteger(packet.type.rawValue)
        // Kept in parts (an ACL fragment: its headers, then its PDU's bytes): copied once, here.
        let (prefix, count, rest) = packet.bodyParts
        switch count {
        case 0: break
        case 8: writeInteger(prefix, endianness: .little)
        case 4: writeInteger(UInt32(truncatingIfNeeded: prefix), endianness: .little)
        default: for k in 0..<count { writeInteger(UInt8(truncatingIfNeeded: prefix >> (8 * UInt64(k)))) }
        }
        writeBytes(rest)
    }
}
