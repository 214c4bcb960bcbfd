#if canImport(Glibc)
import Glibc
#endif
import Foundation
import GattControlProtocol
import GattCore
import GattTransport
import Logging
import NIOCore
import NIOPosix
import Testing

@testable import GattDaemon

/// App L2CAP channels in the daemon: PSMs picked and kept, the PSM characteristic, the
/// transport told which channels programs listen for, and each opened channel's socket
/// passed to a listening control client (SCM_RIGHTS) or closed when nobody listens.
@Suite(.serialized) struct L2CAPChannelTests {
    let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
    let state: String

    static func config(channels: String = #"[{"id": "stream"}]"#) -> String {
        #"{"name": "t", "l2cap_channels": \#(channels), "services": [{"uuid": "FFF0", "characteristics": [{"id": "psm", "uuid": "ABDD3056-28FA-441D-A470-55A75A52553A", "properties": ["read"], "value": {"l2cap_psm": "stream"}}]}]}"#
    }

    init() {
        state = NSTemporaryDirectory() + "gattd-l2cap-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        mkdir(state, 0o755)
    }

    func daemon(_ config: String = Self.config()) throws -> (PeripheralDaemon, FakeTransport) {
        let configuration = try ConfigLoader.load(data: Array(config.utf8)).gatt
        let transport = FakeTransport(eventLoop: group.next())
        var options = DaemonOptions()
        options.stateDirectory = state
        let d = PeripheralDaemon(
            configuration: configuration, payloads: try configuration.advertisingPayloads(), transport: transport, logger: Logger(label: "test"), options: options)
        try d.start().wait()
        return (d, transport)
    }

    func psmValue(_ d: PeripheralDaemon) throws -> [UInt8] {
        try group.next().submit {
            let db = d.database
            let i = db.characteristicIndex(id: "psm")!
            return db.value(ofCharacteristic: i)
        }.wait()
    }

    @Test func aDynamicPSMIsPublishedInItsCharacteristicAndKeptAcrossRestarts() throws {
        let (first, _) = try daemon()
        let value = try psmValue(first)
        let psm = UInt16(value[0]) | UInt16(value[1]) << 8
        #expect(L2CAPChannelServer.dynamicPSMs.contains(psm))
        try first.stop().wait()
        // A new channel that would hash to the same PSM cannot take it: the id keeps its PSM.
        let clash = (0..<5000).map { "c\($0)" }.first { id in
            L2CAPPSMAssignment.assign([L2CAPChannelConfiguration(id: id)], kept: [:])[0].psm == psm
        }!
        let (second, _) = try daemon(Self.config(channels: #"[{"id": "\#(clash)"}, {"id": "stream"}]"#))
        #expect(try psmValue(second) == value, "the same PSM after a restart")
        try second.stop().wait()
    }

    /// The daemon's control server, started, and a client connected to it.
    func controlServer(_ d: PeripheralDaemon) throws -> (ControlServer, LineClient) {
        let path = state + "/control.sock"
        let server = ControlServer(peripheral: d, eventLoop: d.eventLoop, options: .init(path: path), logger: Logger(label: "test"))
        try server.start().wait()
        return (server, try LineClient(path: path))
    }

    @Test func aListeningClientGetsEachChannelsSocketAndNobodyListeningClosesIt() throws {
        let (d, transport) = try daemon()
        let (server, client) = try controlServer(d)
        defer { try? server.stop().wait() }

        let reply = try #require(client.request(#"{"op":"l2cap_listen","channel":"stream"}"#))
        #expect(reply.contains(#""ok":true"#) && reply.contains(#""id":"stream""#), "\(reply)")
        let servers = try d.eventLoop.submit { transport.l2capServers.last ?? [] }.wait()
        #expect(servers.map(\.id) == ["stream"], "the transport accepts the listened channel")
        #expect(try #require(client.request(#"{"op":"l2cap_listen","channel":"nope"}"#)).contains("unknown_channel"))

        // A central opens it: the client gets the event line and the socket with it.
        var pair: [Int32] = [-1, -1]
        #expect(socketpair(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue), 0, &pair) == 0)
        let central = BluetoothAddress("11:22:33:44:55:66")!
        let end = pair[0]
        try d.eventLoop.submit {
            transport.onEvent?(.connected(ConnectionID(1), TransportPeer(address: central, addressType: .random)))
            transport.onEvent?(.l2capChannelOpened(ConnectionID(1), L2CAPChannelOpened(server: "stream", psm: servers[0].psm, peerMTU: 512, mtu: 2048, ticket: transport.channel(end))))
        }.wait()
        let (line, fds) = try receiveLine(client.fd)
        #expect(line.contains(#""event":"l2cap_channel""#) && line.contains(#""central":"11:22:33:44:55:66""#) && line.contains(#""peer_mtu":512"#), "\(line)")
        let received = try #require(fds.first)
        // It is the channel: an SDU written to it comes out of the transport's end, and back.
        #expect(write(received, "ping", 4) == 4)
        var buffer = [UInt8](repeating: 0, count: 16)
        #expect(read(pair[1], &buffer, 16) == 4)
        #expect(write(pair[1], "pong", 4) == 4)
        #expect(read(received, &buffer, 16) == 4 && Array(buffer[0..<4]) == Array("pong".utf8))
        close(received)
        close(pair[1])

        // Unlistened: the transport accepts nothing, and a channel that still arrives is closed.
        #expect(try #require(client.request(#"{"op":"l2cap_unlisten","channel":"stream"}"#)).contains(#""ok":true"#))
        #expect(try d.eventLoop.submit { transport.l2capServers.last ?? [] }.wait().isEmpty)
        #expect(socketpair(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue), 0, &pair) == 0)
        let second = pair[0]
        try d.eventLoop.submit {
            transport.onEvent?(.l2capChannelOpened(ConnectionID(1), L2CAPChannelOpened(server: "stream", psm: servers[0].psm, peerMTU: 512, mtu: 2048, ticket: transport.channel(second))))
        }.wait()
        #expect(read(pair[1], &buffer, 16) == 0, "gattd closed its end: EOF")
        close(pair[1])
        try d.stop().wait()
    }

    @Test func aClientThatDoesNotReadHoldsAtMostEightChannelsAndTheRestAreClosed() throws {
        let (d, transport) = try daemon()
        let (server, client) = try controlServer(d)
        defer { try? server.stop().wait() }
        #expect(try #require(client.request(#"{"op":"l2cap_listen","channel":"stream"}"#)).contains(#""ok":true"#))
        let psm = try d.eventLoop.submit { transport.l2capServers.last?.first?.psm ?? 0 }.wait()
        // gattd's side of the control connection holds a few lines only: the client, not
        // reading, soon has channels waiting to be passed.
        try d.eventLoop.submit {
            var small: Int32 = 1
            for c in server.clients.values {
                if let fd = c.socketFD { setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &small, socklen_t(MemoryLayout<Int32>.size)) }
            }
        }.wait()
        var centralEnds: [Int32] = []
        try d.eventLoop.submit {
            transport.onEvent?(.connected(ConnectionID(1), TransportPeer(address: BluetoothAddress("11:22:33:44:55:66")!, addressType: .random)))
        }.wait()
        for _ in 0..<40 {
            var pair: [Int32] = [-1, -1]
            #expect(socketpair(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue), 0, &pair) == 0)
            centralEnds.append(pair[1])
            let end = pair[0]
            try d.eventLoop.submit {
                transport.onEvent?(.l2capChannelOpened(ConnectionID(1), L2CAPChannelOpened(server: "stream", psm: psm, peerMTU: 512, mtu: 2048, ticket: transport.channel(end))))
            }.wait()
        }
        let waiting = try d.eventLoop.submit { server.clients.values.map(\.passing.count).max() ?? 0 }.wait()
        #expect(waiting == L2CAPChannelHandover.maximumPassing, "the client has \(waiting) channels waiting")
        // The channels beyond that were closed (their other ends see the hang-up), the rest not.
        func hungUp(_ fd: Int32) -> Bool {
            var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            return poll(&p, 1, 0) > 0 && p.revents & Int16(POLLHUP) != 0
        }
        let closed = centralEnds.filter(hungUp).count
        #expect(closed > 0 && closed < 40, "\(closed) of 40 closed")
        // Reading, the client gets every channel that was not closed, each a live socket.
        var received: [Int32] = []
        while received.count < 40 - closed {
            let (line, fds) = try receiveLine(client.fd)
            guard !line.isEmpty || !fds.isEmpty else { break }  // nothing more within 5 s
            received += fds
        }
        #expect(received.count == 40 - closed)
        #expect(centralEnds.filter(hungUp).count == closed, "no channel passed to the client was closed")
        for fd in received + centralEnds { close(fd) }
        try d.stop().wait()
    }

    @Test func publishAndUnpublishAtRunTime() throws {
        let (d, _) = try daemon()
        func run(_ command: ControlCommand) throws -> ControlReply {
            try d.eventLoop.submit {
                guard case .now(let reply) = ControlDispatcher.execute(command, on: d) else { return .failure(ControlError(.busy, "later")) }
                return reply
            }.wait()
        }
        let json = try JSONParser.parse(Array(#"{"id": "logs", "security": "encryption", "mtu": 512}"#.utf8))
        guard case .l2capChannel(let c) = try run(.publishL2CAPChannel(channel: json)) else { Issue.record("not published"); return }
        #expect(c.id == "logs" && c.security == .encryption && c.mtu == 512 && L2CAPChannelServer.dynamicPSMs.contains(c.psm))
        guard case .l2capChannels(let list) = try run(.listL2CAPChannels) else { Issue.record("no list"); return }
        #expect(list.map(\.id) == ["stream", "logs"] && list[1].runtime && list[1].listeners == 0)
        guard case .failure(let dup) = try run(.publishL2CAPChannel(channel: json)) else { Issue.record("published twice"); return }
        #expect(dup.code == .invalidValue)
        guard case .failure(let inUse) = try run(.unpublishL2CAPChannel(id: "stream")) else { Issue.record("config channel unpublished"); return }
        #expect(inUse.code == .unknownChannel)
        #expect(try run(.unpublishL2CAPChannel(id: "logs")) == .success)
        try d.stop().wait()
        // Published channels come back after a restart (state restoration); this one is gone.
        let (again, _) = try daemon()
        guard case .l2capChannels(let after) = try again.eventLoop.submit({ () -> ControlReply in
            guard case .now(let r) = ControlDispatcher.execute(.listL2CAPChannels, on: again) else { return .success }
            return r
        }).wait() else { Issue.record("no list"); return }
        #expect(after.map(\.id) == ["stream"])
        try again.stop().wait()
    }

    @Test func aNewConfigChannelNeverTakesAPublishedChannelsPSM() throws {
        func list(_ d: PeripheralDaemon) throws -> [ControlL2CAPChannel] {
            try d.eventLoop.submit { () -> [ControlL2CAPChannel] in
                guard case .now(.l2capChannels(let l)) = ControlDispatcher.execute(.listL2CAPChannels, on: d) else { return [] }
                return l
            }.wait()
        }
        let (d, _) = try daemon()
        let json = try JSONParser.parse(Array(#"{"id": "logs"}"#.utf8))
        let published = try d.eventLoop.submit { () -> ControlL2CAPChannel? in
            guard case .now(.l2capChannel(let c)) = ControlDispatcher.execute(.publishL2CAPChannel(channel: json), on: d) else { return nil }
            return c
        }.wait()
        let psm = try #require(published?.psm)
        try d.stop().wait()
        // The config now declares a channel whose id hashes to that PSM: the published one keeps it.
        let clash = (0..<5000).map { "c\($0)" }.first { id in
            L2CAPPSMAssignment.assign([L2CAPChannelConfiguration(id: id)], kept: [:])[0].psm == psm
        }!
        let (again, _) = try daemon(Self.config(channels: #"[{"id": "stream"}, {"id": "\#(clash)"}]"#))
        let channels = try list(again)
        #expect(channels.first { $0.id == "logs" }?.psm == psm, "\(channels)")
        #expect(channels.first { $0.id == clash }.map { $0.psm != psm } == true, "\(channels)")
        try again.stop().wait()
    }

    /// One line from the control socket with the descriptors passed along with it.
    func receiveLine(_ fd: Int32) throws -> (String, [Int32]) {
        var bytes: [UInt8] = []
        var fds: [Int32] = []
        let deadline = Date().addingTimeInterval(5)
        while !bytes.contains(0x0A), Date() < deadline {
            var data = [UInt8](repeating: 0, count: 4096)
            var control = [UInt8](repeating: 0, count: 256)
            let n = data.withUnsafeMutableBytes { d in
                control.withUnsafeMutableBytes { c in
                    var iov = iovec(iov_base: d.baseAddress, iov_len: d.count)
                    return withUnsafeMutablePointer(to: &iov) { iovp in
                        var m = msghdr()
                        m.msg_iov = iovp
                        m.msg_iovlen = 1
                        m.msg_control = c.baseAddress
                        m.msg_controllen = c.count
                        let n = recvmsg(fd, &m, 0)
                        if n > 0, m.msg_controllen >= MemoryLayout<cmsghdr>.size {
                            let h = c.baseAddress!.assumingMemoryBound(to: cmsghdr.self)
                            if h.pointee.cmsg_type == Int32(SCM_RIGHTS) {
                                let count = (Int(h.pointee.cmsg_len) - MemoryLayout<cmsghdr>.size) / 4
                                for i in 0..<count { fds.append(c.load(fromByteOffset: MemoryLayout<cmsghdr>.size + 4 * i, as: Int32.self)) }
                            }
                        }
                        return n
                    }
                }
            }
            if n > 0 { bytes += data[0..<n] }
        }
        let line = bytes.prefix { $0 != 0x0A }
        return (String(decoding: line, as: UTF8.self), fds)
    }
}
