import GattCore
import NIOCore
import NIOPosix
import Synchronization

@testable import GattTransport

/// Packets the transport delivered, as an async sequence with a timeout.
final class PacketCollector: Sendable {
    let stream: AsyncStream<[UInt8]>
    let continuation: AsyncStream<[UInt8]>.Continuation
    let closes = Mutex<[String?]>([])

    init() {
        (stream, continuation) = AsyncStream.makeStream(of: [UInt8].self)
    }

    var onPacket: H4Transport.PacketHandler {
        { [continuation] packet in continuation.yield(packet.encoded) }
    }

    var onClose: H4Transport.CloseHandler {
        { [self] error in self.closes.withLock { $0.append(error.map { "\($0)" }) } }
    }

    /// The next `count` packets, or a failure after `timeout`.
    func next(_ count: Int, timeout: Duration = .seconds(5)) async throws -> [[UInt8]] {
        let stream = self.stream
        return try await withThrowingTaskGroup(of: [[UInt8]]?.self) { group in
            group.addTask {
                var out: [[UInt8]] = []
                for await packet in stream {
                    out.append(packet)
                    if out.count == count { break }
                }
                return out
            }
            group.addTask {
                try await Task.sleep(for: timeout)
                return nil
            }
            let first = try await group.next() ?? nil
            group.cancelAll()
            guard let packets = first else { throw TestTimeout(what: "\(count) packets") }
            return packets
        }
    }
}

struct TestTimeout: Error, CustomStringConvertible {
    let what: String
    var description: String { "timed out waiting for \(what)" }
}

/// The sample traffic: whole H4 packets, and the same bytes cut into awkward fragments.
enum SampleTraffic {
    static let packets: [[UInt8]] = [
        [0x04, 0x0E, 0x04, 0x01, 0x03, 0x0C, 0x00],
        [0x02, 0x40, 0x20, 0x07, 0x00, 0x03, 0x00, 0x04, 0x00, 0x0A, 0x03, 0x00],
        [0x04, 0x3E, 0x03, 0x02, 0x01, 0x00] + [],
        [0x02, 0x41, 0x00, 0x40, 0x01] + Array(repeating: 0x5A, count: 0x140),
        [0x04, 0x05, 0x04, 0x00, 0x40, 0x00, 0x13],
    ]

    static var fragments: [[UInt8]] {
        let bytes = packets.flatMap { $0 }
        let sizes = [1, 2, 1, 4, 3, 7, 1, 30, 2, 100, 5]
        var out: [[UInt8]] = []
        var index = 0
        var sizeIndex = 0
        while index < bytes.count {
            let size = min(sizes[sizeIndex % sizes.count], bytes.count - index)
            out.append(Array(bytes[index..<index + size]))
            index += size
            sizeIndex += 1
        }
        return out
    }
}

/// A fake controller: on connect, sends the sample traffic in fragments spaced a few
/// milliseconds apart, and records every byte it receives.
final class FragmentingControllerHandler: ChannelInboundHandler, Sendable {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    let received = Mutex<[UInt8]>([])

    func channelActive(context: ChannelHandlerContext) {
        let channel = context.channel
        for (index, fragment) in SampleTraffic.fragments.enumerated() {
            channel.eventLoop.scheduleTask(in: .milliseconds(Int64(index) * 3)) {
                channel.writeAndFlush(ByteBuffer(bytes: fragment), promise: nil)
            }
        }
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var buffer = unwrapInboundIn(data)
        let bytes = buffer.readBytes(length: buffer.readableBytes) ?? []
        received.withLock { $0 += bytes }
    }

    /// Waits until at least `count` bytes have arrived.
    func waitForBytes(_ count: Int, timeout: Duration = .seconds(5)) async throws -> [UInt8] {
        let clock = ContinuousClock()
        let deadline = clock.now + timeout
        while clock.now < deadline {
            let bytes = received.withLock { $0 }
            if bytes.count >= count { return bytes }
            try await Task.sleep(for: .milliseconds(5))
        }
        throw TestTimeout(what: "\(count) bytes at the fake controller")
    }
}
