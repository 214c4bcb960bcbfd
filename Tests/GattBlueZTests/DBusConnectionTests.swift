import Foundation
import GattDBus
import Testing

/// The D-Bus shell over sd-bus, against a private dbus-daemon: values of every kind survive a
/// round trip, errors and fds pass, signals are heard once the match is installed, a call left
/// unanswered is refused, and a bus that goes away is reported.
@Suite struct DBusConnectionTests {
    static let everything: [DBusValue] = [
        .byte(0xA5), .boolean(true), .int16(-2), .uint16(0xFFFE), .int32(-70_000), .uint32(4_000_000_000),
        .int64(-5_000_000_000), .uint64(18_000_000_000_000_000_000), .double(0.5), .string("héllo"),
        .objectPath("/org/gattd/service0001"), .signature("a{sv}"), .bytes([]), .bytes([0, 1, 2, 0xFF]),
        .strings(["a", "b"]), .objectPaths([]),
        .properties(["UUID": .string("180f"), "Value": .bytes([100]), "Flags": .strings(["read", "notify"]), "Handle": .uint16(3)]),
        .structure([.string("x"), .uint32(7)]), .variant(.variant(.boolean(false))),
        .array(element: "{oa{sa{sv}}}", [.dictEntry(.objectPath("/a"), .array(element: "{sa{sv}}", [.dictEntry(.string("org.bluez.GattService1"), .properties(["Primary": .boolean(true)]))]))]),
    ]

    @Test func valuesOfEveryKindRoundTrip() throws {
        let bus = try PrivateBus()
        let server = try bus.connect(), client = try bus.connect()
        defer { client.close(); server.close() }
        server.export(prefix: "/org/gattd") { call in
            server.reply(call, .success(call.arguments + [.string(call.path), .string(call.interface + "." + call.member)]))
        }
        // Exported once a round trip through the bus thread is done.
        let serverName = try uniqueName(server)
        let got = Delivery<Result<[DBusValue], DBusError>>()
        client.call(DBusCall(destination: serverName, path: "/org/gattd/service0001/char0002", interface: "org.test.Echo", member: "Echo", Self.everything)) { got.deliver($0) }
        let values = try #require(got.wait()).get()
        #expect(values == Self.everything + [.string("/org/gattd/service0001/char0002"), .string("org.test.Echo.Echo")])
        #expect(values[16].dictionary?["Handle"]?.integer == 3)
        #expect(values[16].dictionary?["Flags"]?.items?.compactMap(\.string) == ["read", "notify"])
    }

    @Test func errorsReachTheCaller() throws {
        let bus = try PrivateBus()
        let server = try bus.connect(), client = try bus.connect()
        defer { client.close(); server.close() }
        server.export(prefix: "/p") { call in server.reply(call, .failure(DBusError("org.bluez.Error.NotPermitted", "Write not permitted"))) }
        // Exported once a round trip through the bus thread is done.
        let serverName = try uniqueName(server)
        let got = Delivery<Result<[DBusValue], DBusError>>()
        client.call(DBusCall(destination: serverName, path: "/p", interface: "org.bluez.GattCharacteristic1", member: "WriteValue")) { got.deliver($0) }
        #expect(throws: DBusError("org.bluez.Error.NotPermitted", "Write not permitted")) { try #require(got.wait()).get() }
    }

    @Test func aCallNobodyAnswersIsRefusedNotLeftHanging() throws {
        let bus = try PrivateBus()
        let server = try bus.connect(), client = try bus.connect()
        defer { client.close(); server.close() }
        server.export(prefix: "/p") { _ in }  // dropped unanswered
        // Exported once a round trip through the bus thread is done.
        let serverName = try uniqueName(server)
        let got = Delivery<Result<[DBusValue], DBusError>>()
        client.call(DBusCall(destination: serverName, path: "/p", interface: "org.test", member: "Drop"), timeout: .seconds(20)) { got.deliver($0) }
        let result = try #require(got.wait())
        guard case .failure(let e) = result else { Issue.record("answered: \(result)"); return }
        #expect(e == DBusError("org.freedesktop.DBus.Error.Failed", "gattd dropped this call unanswered"))
    }

    @Test func aFileDescriptorPassesBothWays() throws {
        let bus = try PrivateBus()
        let server = try bus.connect(), client = try bus.connect()
        defer { client.close(); server.close() }
        var ends: [Int32] = [-1, -1]
        #expect(socketpair(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue), 0, &ends) == 0)
        let (kept, given) = (ends[0], ends[1])
        defer { close(kept) }
        server.export(prefix: "/p") { call in
            server.reply(call, .success([.unixFD(given), .uint16(185)]))  // the connection closes `given`
        }
        // Exported once a round trip through the bus thread is done.
        let serverName = try uniqueName(server)
        let got = Delivery<Result<[DBusValue], DBusError>>()
        client.call(DBusCall(destination: serverName, path: "/p", interface: "org.bluez.GattCharacteristic1", member: "AcquireNotify", [.properties([:])])) { got.deliver($0) }
        let values = try #require(got.wait()).get()
        guard case .unixFD(let fd) = values.first else { Issue.record("no fd: \(values)"); return }
        defer { close(fd) }
        #expect(values.last == .uint16(185))
        let sent: [UInt8] = [0x01, 0x02, 0x03]
        #expect(write(fd, sent, 3) == 3)
        var buffer = [UInt8](repeating: 0, count: 8)
        #expect(read(kept, &buffer, 8) == 3)
        #expect(Array(buffer.prefix(3)) == [1, 2, 3])
    }

    @Test func signalsAreHeardOnceTheMatchIsInstalled() throws {
        let bus = try PrivateBus()
        let sender = try bus.connect(), listener = try bus.connect()
        defer { listener.close(); sender.close() }
        let installed = Delivery<DBusError?>()
        let heard = Delivery<DBusSignal>()
        listener.subscribe(sender: nil, interface: "org.freedesktop.DBus.Properties", member: "PropertiesChanged", installed: { installed.deliver($0) }) { heard.deliver($0) }
        #expect(installed.wait() == .some(nil))
        let changed: [DBusValue] = [.string("org.bluez.Device1"), .properties(["Connected": .boolean(true)]), .strings([])]
        sender.emit(path: "/org/bluez/hci0/dev_00_AA_01_01_00_01", interface: "org.freedesktop.DBus.Properties", member: "PropertiesChanged", changed)
        let signal = try #require(heard.wait())
        #expect(signal.path == "/org/bluez/hci0/dev_00_AA_01_01_00_01")
        #expect(signal.member == "PropertiesChanged")
        #expect(signal.arguments == changed)
    }

    @Test func aBusThatGoesAwayIsReported() throws {
        let bus = try PrivateBus()
        let connection = try bus.connect()
        defer { connection.close() }
        _ = try uniqueName(connection)
        let lost = Delivery<DBusError>()
        connection.onDisconnect { lost.deliver($0) }
        // The handler is in place once a round trip through the bus thread is done.
        _ = try uniqueName(connection)
        bus.kill()
        #expect(lost.wait()?.name == "org.freedesktop.DBus.Error.Disconnected")
        // Calls after that fail at once.
        let got = Delivery<Result<[DBusValue], DBusError>>()
        connection.call(DBusCall(destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus", member: "GetId")) { got.deliver($0) }
        guard case .failure? = got.wait() else { Issue.record("a call on a broken bus did not fail"); return }
    }

    @Test func noBusIsAClearError() {
        #expect(throws: DBusError.self) { _ = try DBusConnection(.address("unix:path=/nonexistent/gattd-test-bus")) }
    }

    /// The connection's unique name, asked of the bus (`GetConnectionUnixProcessID` needs it):
    /// sd-bus has no synchronous getter we use, so it is read back from `Hello`'s effect.
    private func uniqueName(_ c: DBusConnection) throws -> String {
        let got = Delivery<Result<[DBusValue], DBusError>>()
        c.uniqueName { got.deliver($0.map { [.string($0)] }) }
        let values = try #require(got.wait()).get()
        return try #require(values.first?.string)
    }
}
