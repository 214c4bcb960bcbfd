import GattCore
import GattHost
import NIOCore
import NIOPosix
import Testing

#if canImport(Glibc)
import Glibc
#endif

@testable import GattTransport

@Suite("H4 transports")
struct H4TransportTests {
    static let command: [UInt8] = [0x01, 0x03, 0x0C, 0x00]
    static let acl: [UInt8] = [0x02, 0x40, 0x00, 0x05, 0x00, 0x01, 0x00, 0x04, 0x00, 0x0A]

    /// Runs the common exchange: fragmented inbound traffic comes out as whole packets, and two
    /// outbound packets reach the controller byte for byte.
    private func exchange(spec: TransportSpec, group: any EventLoopGroup, controller: FragmentingControllerHandler) async throws {
        let collector = PacketCollector()
        let transport = try await H4Transport.connect(
            to: spec, group: group, onPacket: collector.onPacket, onClose: collector.onClose)
        #expect(try await collector.next(SampleTraffic.packets.count) == SampleTraffic.packets)
        try await transport.send(H4Packet(decoding: Self.command)).get()
        try await transport.send(H4Packet(decoding: Self.acl)).get()
        let expected = Self.command + Self.acl
        #expect(try await controller.waitForBytes(expected.count) == expected)
        try await transport.close().get()
        try await transport.closeFuture.get()
        #expect(collector.closes.withLock { $0 } == [nil])
    }

    @Test("TCP: fragmented bytes become whole packets; writes arrive intact")
    func tcp() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let controller = FragmentingControllerHandler()
        let server = try await ServerBootstrap(group: group)
            .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
            .childChannelInitializer { $0.pipeline.addHandler(controller) }
            .bind(host: "127.0.0.1", port: 0).get()
        let port = try #require(server.localAddress?.port)
        try await exchange(spec: .tcp(host: "127.0.0.1", port: port), group: group, controller: controller)
        try await server.close().get()
        try await group.shutdownGracefully()
    }

    @Test("Unix socket: fragmented bytes become whole packets; writes arrive intact")
    func unixSocket() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let controller = FragmentingControllerHandler()
        let path = "/tmp/gattd-transport-test-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).sock"
        defer { unlink(path) }
        let server = try await ServerBootstrap(group: group)
            .childChannelInitializer { $0.pipeline.addHandler(controller) }
            .bind(unixDomainSocketPath: path, cleanupExistingSocketFile: true).get()
        try await exchange(spec: .unix(path: path), group: group, controller: controller)
        try await server.close().get()
        try await group.shutdownGracefully()
    }

    /// Connects over TCP to a fake controller that runs `act` on its side 20 ms after the
    /// connection; returns the first `expecting` packets delivered and the close reports.
    private func runUntilClosed(
        expecting: Int = 0, _ act: @escaping @Sendable (any Channel) -> Void
    ) async throws -> (packets: [[UInt8]], closes: [String?]) {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let server = try await ServerBootstrap(group: group)
            .childChannelInitializer { channel in
                channel.eventLoop.scheduleTask(in: .milliseconds(20)) { act(channel) }
                return channel.eventLoop.makeSucceededVoidFuture()
            }
            .bind(host: "127.0.0.1", port: 0).get()
        let port = try #require(server.localAddress?.port)
        let collector = PacketCollector()
        let transport = try await H4Transport.connect(
            to: .tcp(host: "127.0.0.1", port: port), group: group,
            onPacket: collector.onPacket, onClose: collector.onClose)
        let packets = expecting > 0 ? try await collector.next(expecting) : []
        try await transport.closeFuture.get()
        let closes = collector.closes.withLock { $0 }
        try await server.close().get()
        try await group.shutdownGracefully()
        return (packets, closes)
    }

    @Test("the controller closing the connection calls onClose")
    func remoteClose() async throws {
        let result = try await runUntilClosed { $0.close(promise: nil) }
        #expect(result.closes.count == 1)
    }

    @Test("an unknown packet indicator closes the transport with a framing error")
    func framingError() async throws {
        let result = try await runUntilClosed(expecting: 1) { channel in
            channel.writeAndFlush(ByteBuffer(bytes: [0x04, 0x0E, 0x00, 0x09, 0x00]), promise: nil)
        }
        #expect(result.packets == [[0x04, 0x0E, 0x00]])
        #expect(result.closes.count == 1)
        #expect(result.closes.first??.hasPrefix("invalid H4 packet indicator 0x09") == true)
    }

    @Test("connecting to a closed TCP port fails")
    func connectionRefused() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        // Bind then close a server to get a port that nothing listens on.
        let server = try await ServerBootstrap(group: group).bind(host: "127.0.0.1", port: 0).get()
        let port = try #require(server.localAddress?.port)
        try await server.close().get()
        await #expect(throws: (any Error).self) {
            _ = try await H4Transport.connect(
                to: .tcp(host: "127.0.0.1", port: port), group: group, onPacket: { _ in })
        }
        try await group.shutdownGracefully()
    }

    @Test("the kernel spec is not an H4 transport")
    func kernelIsNotH4() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        await #expect(throws: HCITransportError("kernel:hci0 is the kernel transport, not an H4 transport")) {
            _ = try await H4Transport.connect(to: .kernel(controller: 0), group: group, onPacket: { _ in })
        }
        try await group.shutdownGracefully()
    }
}
