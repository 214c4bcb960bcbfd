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

/// User channel: writes each packet as its own datagram with `write(2)`.
///
/// NIO's pipe channel gathers pending writes into one `writev`, which on a datagram socket
/// would glue several HCI packets into one; so packets are written here, one call each.
final class H4DatagramWriter: ChannelOutboundHandler {
    typealias OutboundIn = ByteBuffer

    private let descriptor: CInt
    private var pending: [([UInt8], EventLoopPromise<Void>?)] = []
    private var retryScheduled = false
    private var isOpen = true

    init(descriptor: CInt) {
        self.descriptor = descriptor
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        guard isOpen else {
            promise?.fail(ChannelError.ioOnClosedChannel)
            return
        }
        let buffer = unwrapOutboundIn(data)
        pending.append((Array(buffer.readableBytesView), promise))
        drain(context: context)
    }

    func flush(context: ChannelHandlerContext) {}

    func close(context: ChannelHandlerContext, mode: CloseMode, promise: EventLoopPromise<Void>?) {
        failPending(ChannelError.ioOnClosedChannel)
        context.close(mode: mode, promise: promise)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        failPending(ChannelError.ioOnClosedChannel)
    }

    private func failPending(_ error: any Error) {
        isOpen = false
        let failed = pending
        pending.removeAll()
        for (_, promise) in failed { promise?.fail(error) }
    }

    private func drain(context: ChannelHandlerContext) {
        while isOpen, let (packet, promise) = pending.first {
            let written = packet.withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress, $0.count) }
            if written >= 0 {
                pending.removeFirst()
                promise?.succeed()
                continue
            }
            let code = errno
            if code == EAGAIN || code == EWOULDBLOCK || code == EINTR {
                scheduleRetry(context: context)
                return
            }
            pending.removeFirst()
            let error = IOError(errnoCode: code, reason: "write to HCI user channel")
            promise?.fail(error)
            context.fireErrorCaught(error)
            return
        }
    }

    private func scheduleRetry(context: ChannelHandlerContext) {
        guard !retryScheduled else { return }
        retryScheduled = true
        let loopBoundContext = NIOLoopBound(context, eventLoop: context.eventLoop)
        let loopBoundSelf = NIOLoopBound(self, eventLoop: context.eventLoop)
        context.eventLoop.scheduleTask(in: .milliseconds(1)) {
            loopBoundSelf.value.retryScheduled = false
            loopBoundSelf.value.drain(context: loopBoundContext.value)
        }
    }
}
