import GattCore
import GattHost
import NIOCore
import NIOPosix
import Testing

#if canImport(Glibc)
import Glibc
#endif

@testable import GattTransport

// <bits/socket_type.h>'s SOCK_RAW, SOCK_SEQPACKET and SOCK_CLOEXEC, spelled out: which Clang
// module owns that header (Glibc's or CBlueZ's, which includes it too) varies between builds,
// and with it whether the names are visible here.
private let socketRaw: CInt = 3
private let socketSeqpacket: CInt = 5
private let socketCloexec: CInt = 0o2_000_000

/// A pseudo-terminal pair: the transport opens the subsidiary side by path, the test plays the
/// controller on the main side.
struct PseudoTerminal: ~Copyable {
    let main: CInt
    let subsidiary: CInt
    let path: String

    init() throws {
        // openpty(3) lives in libc on glibc ≥ 2.34 but is not exported by the Glibc module.
        typealias OpenPTY = @convention(c) (
            UnsafeMutablePointer<CInt>?, UnsafeMutablePointer<CInt>?, UnsafeMutablePointer<CChar>?,
            UnsafeRawPointer?, UnsafeRawPointer?
        ) -> CInt
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "openpty") else {
            throw TestTimeout(what: "openpty (not found in libc)")
        }
        let openpty = unsafeBitCast(symbol, to: OpenPTY.self)
        var main: CInt = -1
        var subsidiary: CInt = -1
        // ttyname_r: ttyname's static buffer is shared with tests running in parallel (it read
        // "/dev/pts/" once, another thread's name half written).
        var name = [CChar](repeating: 0, count: 128)
        guard openpty(&main, &subsidiary, nil, nil, nil) == 0, ttyname_r(subsidiary, &name, name.count) == 0 else {
            throw TestTimeout(what: "openpty")
        }
        self.main = main
        self.subsidiary = subsidiary
        self.path = String(decoding: name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    deinit {
        close(main)
        close(subsidiary)
    }

    func write(_ bytes: [UInt8]) {
        _ = bytes.withUnsafeBytes { Glibc.write(main, $0.baseAddress, $0.count) }
    }

    /// Reads from the main side until `count` bytes arrived or two seconds passed.
    func read(_ count: Int) -> [UInt8] {
        var out: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while out.count < count {
            var poller = pollfd(fd: main, events: Int16(POLLIN), revents: 0)
            guard poll(&poller, 1, 2000) > 0 else { break }
            let got = buffer.withUnsafeMutableBytes { Glibc.read(main, $0.baseAddress, $0.count) }
            guard got > 0 else { break }
            out += buffer[..<got]
        }
        return out
    }
}

@Suite("Serial and HCI user channel transports")
struct SerialAndUserChannelTests {
    @Test("serial over a pty: fragmented bytes become whole packets; writes arrive intact")
    func serialPTY() async throws {
        let pty = try PseudoTerminal()
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let collector = PacketCollector()
        let transport = try await H4Transport.connect(
            to: .serial(device: pty.path, baudRate: 115_200, flowControl: false), group: group,
            onPacket: collector.onPacket, onClose: collector.onClose)

        // The transport put the line in raw mode at the requested speed.
        var attributes = termios()
        #expect(tcgetattr(pty.subsidiary, &attributes) == 0)
        #expect(cfgetospeed(&attributes) == speed_t(B115200))
        #expect(attributes.c_lflag & tcflag_t(ICANON | ECHO) == 0)

        for fragment in SampleTraffic.fragments {
            pty.write(fragment)
            try await Task.sleep(for: .milliseconds(2))
        }
        #expect(try await collector.next(SampleTraffic.packets.count) == SampleTraffic.packets)

        // 0x0A and 0x0D must pass unchanged (no newline translation in raw mode).
        let packet: [UInt8] = [0x01, 0x0A, 0x0D, 0x02, 0x0D, 0x0A]
        try await transport.send(H4Packet(decoding: packet)).get()
        #expect(pty.read(packet.count) == packet)

        try await transport.close().get()
        #expect(collector.closes.withLock { $0 } == [nil])
        try await group.shutdownGracefully()
    }

    @Test("serial with RTS/CTS sets CRTSCTS")
    func serialFlowControl() async throws {
        let pty = try PseudoTerminal()
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let transport = try await H4Transport.connect(
            to: .serial(device: pty.path, baudRate: 1_000_000, flowControl: true), group: group,
            onPacket: { _ in })
        var attributes = termios()
        #expect(tcgetattr(pty.subsidiary, &attributes) == 0)
        #expect(attributes.c_cflag & tcflag_t(CRTSCTS) != 0)
        #expect(cfgetospeed(&attributes) == speed_t(B1000000))
        try await transport.close().get()
        try await group.shutdownGracefully()
    }

    @Test("a missing serial device fails with its name")
    func serialMissing() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        await #expect(throws: HCITransportError("cannot open serial device /dev/nonexistent-tty: No such file or directory", errno: ENOENT)) {
            _ = try await H4Transport.connect(
                to: .serial(device: "/dev/nonexistent-tty", baudRate: 1_000_000, flowControl: false),
                group: group, onPacket: { _ in })
        }
        try await group.shutdownGracefully()
    }

    @Test("a file that is not a tty is refused")
    func serialNotATTY() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        await #expect {
            _ = try await H4Transport.connect(
                to: .serial(device: "/dev/null", baudRate: 1_000_000, flowControl: false),
                group: group, onPacket: { _ in })
        } throws: { error in
            (error as? HCITransportError)?.message.hasPrefix("/dev/null is not a serial port") == true
        }
        try await group.shutdownGracefully()
    }

    @Test("user channel: the error says what is wrong on this machine")
    func userChannelError() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        // Probe what this kernel offers so the test checks the matching sentence.
        let probe = socket(31, socketRaw | socketCloexec, 1)
        let probeErrno = errno
        if probe >= 0 { close(probe) }
        let error = await #expect(throws: HCITransportError.self) {
            // hci9999 does not exist on any machine running these tests.
            _ = try await H4Transport.connect(to: .userChannel(controller: 9999), group: group, onPacket: { _ in })
        }
        if probe < 0 && probeErrno == EAFNOSUPPORT {
            #expect(error?.errno == EAFNOSUPPORT)
            #expect(error?.message.hasPrefix("this kernel has no Bluetooth support") == true)
        } else {
            #expect(error?.errno == ENODEV || error?.errno == EPERM || error?.errno == EACCES)
        }
        try await group.shutdownGracefully()
    }

    @Test("user channel errno sentences")
    func userChannelSentences() {
        #expect(HCIUserChannel.describe(errno: EBUSY, controller: "hci0", during: "bind").message
            == "hci0 is up or in use: bring it down first (`sudo btmgmt -i hci0 power off` or `hciconfig hci0 down`) or stop bluetoothd")
        #expect(HCIUserChannel.describe(errno: EPERM, controller: "hci1", during: "bind").message
            .hasPrefix("opening the HCI user channel on hci1 needs CAP_NET_ADMIN"))
        #expect(HCIUserChannel.describe(errno: ENODEV, controller: "hci2", during: "bind").message
            == "there is no Bluetooth controller hci2")
        #expect(HCIUserChannel.describe(errno: EAFNOSUPPORT, controller: "hci0", during: "socket").errno == EAFNOSUPPORT)
    }
}

@Suite("Datagram (user channel) framing")
struct DatagramFramingTests {
    @Test("one packet per datagram, both ways, even when writes are queued back to back")
    func seqpacketPair() async throws {
        var pair: [CInt] = [-1, -1]
        let type = socketSeqpacket | socketCloexec
        try #require(socketpair(AF_UNIX, type, 0, &pair) == 0)
        let controllerSide = pair[1]
        defer { close(controllerSide) }
        _ = fcntl(pair[0], F_SETFL, fcntl(pair[0], F_GETFL) | O_NONBLOCK)

        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let collector = PacketCollector()
        let transport = try await H4Transport.connectDatagram(
            descriptor: pair[0], spec: .userChannel(controller: 0), eventLoop: group.next(),
            handlers: .init(packet: collector.onPacket, readComplete: {}, close: collector.onClose)
        ).get()

        // Controller → host: each datagram is a packet, including a large ACL one.
        for packet in SampleTraffic.packets {
            _ = packet.withUnsafeBytes { send(controllerSide, $0.baseAddress, $0.count, 0) }
        }
        #expect(try await collector.next(SampleTraffic.packets.count) == SampleTraffic.packets)

        // Host → controller: three writes without waiting must stay three datagrams.
        let sent: [[UInt8]] = [[0x01, 0x03, 0x0C, 0x00], [0x01, 0x01, 0x10, 0x00], [0x02, 0x40, 0x00, 0x01, 0x00, 0xAB]]
        let writes = try sent.map { try transport.send(H4Packet(decoding: $0)) }
        for write in writes { try await write.get() }
        var received: [[UInt8]] = []
        var buffer = [UInt8](repeating: 0, count: 512)
        for _ in sent {
            var poller = pollfd(fd: controllerSide, events: Int16(POLLIN), revents: 0)
            guard poll(&poller, 1, 2000) > 0 else { break }
            let count = buffer.withUnsafeMutableBytes { recv(controllerSide, $0.baseAddress, $0.count, 0) }
            guard count > 0 else { break }
            received.append(Array(buffer[..<count]))
        }
        #expect(received == sent)

        try await transport.close().get()
        #expect(collector.closes.withLock { $0 } == [nil])
        try await group.shutdownGracefully()
    }
}
