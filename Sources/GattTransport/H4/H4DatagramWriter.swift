import GattCore
import GattHost
import NIOCore
#if canImport(Glibc)
import Glibc
#endif

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
