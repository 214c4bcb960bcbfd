import GattControlProtocol
import GattCore
import GattHost
import GattTestSupport
import GattTransport
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import Testing

@testable import GattDaemon

/// The composition that ships, over H4: `PeripheralDaemon` on `H4PeripheralTransport`, whose
/// host runs in the daemon's stack (`PeripheralStack<H4Host>`) on the daemon's one loop, timer and
/// clock, against a controller at the other end of a TCP socket (`ScriptedController`).
@Suite(.serialized) struct H4DaemonTests {
    static let config = """
        {"name": "h4", "services": [{"uuid": "180D", "characteristics": [
          {"id": "hr", "uuid": "2A37", "properties": ["read", "notify"], "value": {"hex": "00"}}]}]}
        """

    /// A controller on a TCP socket: answers every command with `ScriptedController`, except
    /// on the connections `silent` names (counted from 1), where it answers nothing.
    final class ControllerServer: ChannelInboundHandler, @unchecked Sendable {
        typealias InboundIn = ByteBuffer
        let silent: Set<Int>
        /// Each connection's commands, in order.
        let commands = NIOLockedValueBox<[[HCIOpcode]]>([])
        private var buffer = ByteBuffer()
        private var connection = 0

        init(silent: Set<Int>) { self.silent = silent }

        func channelActive(context: ChannelHandlerContext) {
            connection = commands.withLockedValue { $0.append([]); return $0.count }
            context.fireChannelActive()
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            var bytes = unwrapInboundIn(data)
            buffer.writeBuffer(&bytes)
            while let packet = nextPacket() {
                guard let (opcode, _) = ScriptedController.parse(packet) else { continue }
                let n = connection
                commands.withLockedValue { $0[n - 1].append(opcode) }
                guard !silent.contains(n) else { continue }
                let answer = H4Packet(event: ScriptedController().answer(packet)).encoded
                context.writeAndFlush(wrapOutboundOut(ByteBuffer(bytes: answer)), promise: nil)
            }
        }
        typealias OutboundOut = ByteBuffer

        /// One whole command or ACL packet from the host, if the buffer holds one.
        private func nextPacket() -> H4Packet? {
            guard let type = buffer.getInteger(at: buffer.readerIndex, as: UInt8.self) else { return nil }
            let (header, length): (Int, Int?) =
                type == 0x01
                ? (4, buffer.getInteger(at: buffer.readerIndex + 3, as: UInt8.self).map(Int.init))
                : (5, buffer.getInteger(at: buffer.readerIndex + 3, endianness: .little, as: UInt16.self).map(Int.init))
            guard let length, buffer.readableBytes >= header + length, let bytes = buffer.readBytes(length: header + length) else { return nil }
            return try? H4Packet(decoding: bytes)
        }
    }

    struct NotAdvertising: Error, CustomStringConvertible {
        var description: String { "the daemon did not advertise within 30 s" }
    }

    @Test func theDaemonsTimerResetsAControllerThatDoesNotAnswerAndTheHostComesUpOnTheNextLink() throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        defer { try? group.syncShutdownGracefully() }
        let controller = ControllerServer(silent: [1])
        let server = try ServerBootstrap(group: group)
            .childChannelInitializer { $0.pipeline.addHandler(controller) }
            .bind(host: "127.0.0.1", port: 0).wait()
        defer { try? server.close().wait() }
        let port = try #require(server.localAddress?.port)
        let configuration = try ConfigLoader.load(data: Array(Self.config.utf8)).gatt
        let payloads = try AdvertisingPayloadBuilder.build(configuration.advertising, deviceName: configuration.name)
        let loop = group.next()
        let logger = Logger(label: "test")
        let transport = H4PeripheralTransport(spec: .tcp(host: "127.0.0.1", port: port), eventLoop: loop, configuration: configuration, logger: logger)
        let daemon = PeripheralDaemon(configuration: configuration, payloads: payloads, transport: transport, logger: logger)
        let events = NIOLockedValueBox<[ControlEvent]>([])
        let advertising = loop.makePromise(of: Void.self)
        try loop.submit {
            daemon.controlEventHandler = { e in
                events.withLockedValue { $0.append(e) }
                if case .advertising(set: "primary", .started, _) = e { advertising.succeed() }
            }
        }.wait()
        let deadline = loop.scheduleTask(in: .seconds(30)) { advertising.fail(NotAdvertising()) }
        try daemon.start().wait()
        try advertising.futureResult.wait()
        deadline.cancel()

        let commands = controller.commands.withLockedValue { $0 }
        // The first link: HCI_Reset and nothing else, until the command timeout (the host's,
        // run by the daemon's timer) gave the controller up.
        #expect(commands.count == 2)
        #expect(commands.first == [.reset])
        #expect(commands.last?.first == .reset)
        #expect(try #require(commands.last).contains { $0 == .leSetAdvertisingEnable || $0 == .leSetExtendedAdvertisingEnable })
        let states = events.withLockedValue { $0 }.compactMap { e -> ControlControllerState? in
            if case .state(let s, _) = e { s } else { nil }
        }
        #expect(states == [.resetting, .poweredOn])
        #expect(try loop.submit { daemon.status().advertising }.wait())
        try daemon.stop().wait()
    }
}
