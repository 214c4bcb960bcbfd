#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import GattCore
import Logging
import NIOCore
import NIOPosix
import Testing

@testable import GattDaemon

/// A peripheral that records what the control server asks of it.
final class FakePeripheral: PeripheralControl, @unchecked Sendable {
    var database: GATTDatabase
    var notifyResults: [NotifyResult] = []
    var notified: [(CharacteristicIndex, [UInt8], ConnectionID?)] = []
    var attachedHistory: [Bool] = []
    var advertising: [Bool] = []
    var centrals: [BluetoothAddress: ConnectionID] = [:]
    var pending: Set<UInt64> = []
    var controlEventHandler: ((ControlEvent) -> Void)?
    /// Characteristics whose `set`/`notify` wait for `persistPromises` (answered by the test).
    var persistedCharacteristics: Set<CharacteristicIndex> = []
    var persistPromises: [EventLoopPromise<PersistedValueOutcome>] = []
    /// Called (on the loop) when a durable write is asked for.
    var onPersist: (() -> Void)?
    var eventLoop: (any EventLoop)?

    init() {
        database = GATTDatabase(deviceName: "Fake", services: [
            ServiceDefinition(id: "s", uuid: 0x180D, characteristics: [
                CharacteristicDefinition(id: "hr", uuid: 0x2A37, properties: [.notify], value: [0], maxLength: 4),
                CharacteristicDefinition(id: "plain", uuid: 0x2A19, properties: [.read], value: [0x64], maxLength: 1),
            ])
        ])
    }

    func connection(of central: BluetoothAddress) -> ConnectionID? { centrals[central] }
    func notify(characteristic: CharacteristicIndex, value: [UInt8], only: ConnectionID?) -> NotifyResult {
        notified.append((characteristic, value, only))
        // As the core answers: the control server maps this, it does not check it first.
        if let refusal = database.valueUpdateRefusal(characteristic: characteristic, value: value, notifying: true) { return refusal }
        let r = notifyResults.isEmpty ? .queued(1) : notifyResults.removeFirst()
        if case .queued = r { _ = setValue(characteristic: characteristic, value: value) }
        return r
    }
    var notifiedValues: [[(CharacteristicIndex, [UInt8])]] = []
    func notify(values: [(characteristic: CharacteristicIndex, value: [UInt8])], only: ConnectionID?) -> NotifyResult {
        let r = notifyResults.isEmpty ? .queued(1) : notifyResults.removeFirst()
        if case .queued = r {
            notifiedValues.append(values.map { ($0.characteristic, $0.value) })
            for v in values { _ = setValue(characteristic: v.characteristic, value: v.value) }
        }
        return r
    }
    func setValue(characteristic: CharacteristicIndex, value: [UInt8]) -> Bool {
        guard database.valueUpdateRefusal(characteristic: characteristic, value: value, notifying: false) == nil else { return false }
        database.setValue(value, at: database[characteristic].valueHandle)
        return true
    }
    func status() -> ControlStatus { ControlStatus(advertising: advertising.last ?? true, address: .zero, connections: []) }
    func setAdvertising(_ enabled: Bool, set: String?) { advertising.append(enabled) }
    var advertisingSetIDs: [String] { ["primary", "beacon"] }
    var advertisingData: [(String?, AdvertisingDataUpdate)] = []
    /// What `setAdvertisingData` answers next (nil: taken).
    var advertisingDataRefusal: AdvertisingDataUpdateError?
    func setAdvertisingData(_ update: AdvertisingDataUpdate, set: String?) -> AdvertisingDataUpdateError? {
        if let advertisingDataRefusal { return advertisingDataRefusal }
        advertisingData.append((set, update))
        return nil
    }
    func disconnect(_ connection: ConnectionID) { centrals = centrals.filter { $0.value != connection } }
    func respond(to request: PendingRequestID, result: Result<[UInt8], ATTError>) -> Bool { pending.remove(request.rawValue) != nil }
    func setControlClientAttached(_ attached: Bool) { attachedHistory.append(attached) }
    var watchedHistory: [Bool] = []
    func setControlWatched(_ watched: Bool) { watchedHistory.append(watched) }
    var pairingAnswers: [(BluetoothAddress?, Bool?, UInt32?, Bool?)] = []
    var bondList: [StoredBond] = []
    func respondToPairing(central: BluetoothAddress?, accept: Bool?, passkey: UInt32?, confirm: Bool?) -> PairingAnswerFailure? {
        guard let central else { return .ambiguous(0) }
        guard centrals[central] != nil else { return .unknownCentral }
        guard passkey != 13 else { return .refused("this prompt needs \"confirm\": true or false") }
        pairingAnswers.append((central, accept, passkey, confirm))
        return nil
    }
    func unbond(_ address: BluetoothAddress) -> Bool {
        let before = bondList.count
        bondList.removeAll { $0.bond.address == address }
        return bondList.count < before
    }
    func persist(_ writes: [PersistedValue], central: String?) -> EventLoopFuture<PersistedValueOutcome>? {
        guard let eventLoop, writes.contains(where: { persistedCharacteristics.contains($0.characteristic) }) else { return nil }
        let p = eventLoop.makePromise(of: PersistedValueOutcome.self)
        persistPromises.append(p)
        onPersist?()
        return p.futureResult
    }
}

/// A blocking Unix-socket client reading lines with a timeout.
final class LineClient {
    let fd: Int32
    private var buffer: [UInt8] = []

    init(path: String) throws {
        fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard var addr = ControlSocketPath.socketAddress(path) else { throw ControlSocketError("bad path") }
        let r = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard r == 0 else { throw ControlSocketError("connect failed: \(errno)") }
        var tv = timeval(tv_sec: 0, tv_usec: 200_000)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
    }

    deinit { close(fd) }

    func send(_ text: String) {
        let bytes = Array(text.utf8)
        _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
    }

    /// The next line, or nil when none arrives within `timeout`.
    func line(timeout: Double = 3) -> String? {
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            if let nl = buffer.firstIndex(of: 0x0A) {
                let line = String(decoding: buffer[..<nl], as: UTF8.self)
                buffer.removeSubrange(...nl)
                return line
            }
            if Date() > deadline { return nil }
            var chunk = [UInt8](repeating: 0, count: 65536)
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n > 0 { buffer += chunk[..<n] } else if n == 0 { return nil }
        }
    }

    func request(_ text: String) -> String? {
        send(text + "\n")
        return line()
    }
}

/// A server on a fresh temp directory, stopped at the end.
final class ServerFixture: @unchecked Sendable {
    let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
    let peripheral = FakePeripheral()
    let directory: String
    let path: String
    let server: ControlServer

    final class Lines: @unchecked Sendable {
        private let lock = NSLock()
        private var list: [String] = []
        func append(_ l: String) { lock.lock(); list.append(l); lock.unlock() }
        var all: [String] { lock.lock(); defer { lock.unlock() }; return list }
    }
    let logged = Lines()

    init(maximumOutputBytes: Int? = nil, maximumClients: Int? = nil) throws {
        directory = NSTemporaryDirectory() + "gattd-control-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        path = directory + "/control.sock"
        var options = ControlServer.Options(path: path)
        if let maximumOutputBytes { options.maximumOutputBytes = maximumOutputBytes }
        if let maximumClients { options.maximumClients = maximumClients }
        var handler = JournalLogHandler(label: "test", format: .journal) { [logged] line in logged.append(line) }
        handler.logLevel = .info
        server = ControlServer(peripheral: peripheral, eventLoop: group.next(), options: options, logger: Logger(label: "test", factory: { _ in handler }))
        peripheral.eventLoop = server.eventLoop
        try server.start().wait()
    }

    /// Runs `body` on the server's event loop (where the peripheral lives).
    func onLoop<T: Sendable>(_ body: @escaping @Sendable () -> T) throws -> T {
        try server.eventLoop.submit(body).wait()
    }

    func shutdown() {
        try? server.stop().wait()
        try? group.syncShutdownGracefully()
        try? FileManager.default.removeItem(atPath: directory)
    }
}

@Suite("Control server over a real socket")
struct ControlServerTests {
    @Test func requestsRepliesAndSocketMode() throws {
        let f = try ServerFixture()
        defer { f.shutdown() }
        var st = stat()
        #expect(lstat(f.path, &st) == 0)
        #expect(st.st_mode & 0o777 == 0o660)
        let c = try LineClient(path: f.path)
        #expect(c.request(#"{"op":"get","characteristic":"plain","id":1}"#) == #"{"ok":true,"value":{"hex":"64"},"id":1}"#)
        #expect(c.request(#"{"op":"notify","characteristic":"hr","value":{"hex":"0102"}}"#) == #"{"ok":true,"sent":1}"#)
        // The core refuses these (nothing changes); the server maps its answer.
        #expect(c.request(#"{"op":"notify","characteristic":"plain","value":{"hex":"01"}}"#)
            == #"{"ok":false,"error":"not_notifiable","message":"plain has neither notify nor indicate"}"#)
        #expect(c.request(#"{"op":"notify","characteristic":"hr","value":{"hex":"0102030405"}}"#)
            == #"{"ok":false,"error":"value_too_long","message":"5 bytes is longer than the maximum length of hr (4 bytes)"}"#)
        #expect(c.request(#"{"op":"set","characteristic":"plain","value":{"hex":"0102"}}"#)
            == #"{"ok":false,"error":"value_too_long","message":"2 bytes is longer than the maximum length of plain (1 bytes)"}"#)
        #expect(c.request(#"{"op":"get","characteristic":"hr"}"#) == #"{"ok":true,"value":{"hex":"0102"}}"#)
        #expect(c.request(#"{"op":"get","characteristic":"plain"}"#) == #"{"ok":true,"value":{"hex":"64"}}"#)
        #expect(c.request(#"{"op":"get","characteristic":"nope"}"#)?.contains(#""error":"unknown_characteristic""#) == true)
        #expect(c.request(#"{"op":"respond","request":4,"status":"success"}"#)?.contains(#""error":"unknown_request""#) == true)
        #expect(c.request(#"{"op":"disconnect","central":"01:02:03:04:05:06"}"#)?.contains(#""error":"unknown_central""#) == true)
        #expect(c.request(#"{"op":"advertise","enable":false}"#) == #"{"ok":true}"#)
        #expect(c.request(#"{"op":"status"}"#) == #"{"ok":true,"advertising":false,"address":"00:00:00:00:00:00","connections":[]}"#)
        let notified = try f.onLoop { f.peripheral.notified.map { "\($0.0.rawValue):\($0.1)" } }
        #expect(notified == ["6:[1, 2]", "7:[1]", "6:[1, 2, 3, 4, 5]"])
    }

    /// `notify` with `values`: every value checked first (nothing sent when one is refused),
    /// then all of them in one call to the peripheral; `busy` as for one value.
    @Test func notifyWithSeveralValues() throws {
        let f = try ServerFixture()
        defer { f.shutdown() }
        let c = try LineClient(path: f.path)
        try f.onLoop { f.peripheral.database = GATTDatabase(deviceName: "Fake", services: [
            ServiceDefinition(id: "s", uuid: 0x180D, characteristics: [
                CharacteristicDefinition(id: "hr", uuid: 0x2A37, properties: [.notify], value: [0], maxLength: 4),
                CharacteristicDefinition(id: "t", uuid: 0x2A6E, properties: [.read, .notify], value: [0], maxLength: 2),
                CharacteristicDefinition(id: "plain", uuid: 0x2A19, properties: [.read], value: [0x64], maxLength: 1),
            ])
        ]) }
        #expect(c.request(#"{"op":"notify","values":[{"characteristic":"hr","value":{"hex":"0102"}},{"characteristic":"t","value":{"hex":"0304"}}],"id":1}"#)
            == #"{"ok":true,"sent":1,"id":1}"#)
        #expect(c.request(#"{"op":"notify","values":[{"characteristic":"hr","value":{"hex":"05"}},{"characteristic":"t","value":{"hex":"060708"}}]}"#)
            == #"{"ok":false,"error":"value_too_long","message":"3 bytes is longer than the maximum length of t (2 bytes)"}"#)
        #expect(c.request(#"{"op":"notify","values":[{"characteristic":"hr","value":{"hex":"05"}},{"characteristic":"plain","value":{"hex":"01"}}]}"#)
            == #"{"ok":false,"error":"not_notifiable","message":"plain has neither notify nor indicate"}"#)
        #expect(c.request(#"{"op":"notify","values":[{"characteristic":"hr","value":{"hex":"05"}},{"characteristic":"hr","value":{"hex":"06"}}]}"#)?
            .contains(#""error":"invalid_value""#) == true)
        try f.onLoop { f.peripheral.notifyResults = [.busy] }
        #expect(c.request(#"{"op":"notify","values":[{"characteristic":"hr","value":{"hex":"09"}},{"characteristic":"t","value":{"hex":"09"}}]}"#)?
            .contains(#""error":"busy""#) == true)
        let sent = try f.onLoop { f.peripheral.notifiedValues.map { $0.map { "\($0.0.rawValue):\($0.1)" } } }
        #expect(sent == [["6:[1, 2]", "7:[3, 4]"]])
    }

    /// `notify` with `values`, persisted ones durable first: a value a central's newer Write
    /// Command overtook meanwhile is neither set nor sent (as for one value); the others are.
    @Test func notifyWithSeveralValuesSendsThoseNotOvertaken() throws {
        let f = try ServerFixture()
        defer { f.shutdown() }
        let c = try LineClient(path: f.path)
        try f.onLoop {
            f.peripheral.database = GATTDatabase(deviceName: "Fake", services: [
                ServiceDefinition(id: "s", uuid: 0x180D, characteristics: [
                    CharacteristicDefinition(id: "hr", uuid: 0x2A37, properties: [.notify], value: [0], maxLength: 4, valueSource: .persisted),
                    CharacteristicDefinition(id: "t", uuid: 0x2A6E, properties: [.read, .notify], value: [0], maxLength: 2, valueSource: .persisted),
                ])
            ])
            f.peripheral.persistedCharacteristics = [CharacteristicIndex(6), CharacteristicIndex(7)]
        }
        let asked = DispatchSemaphore(value: 0)
        try f.onLoop { f.peripheral.onPersist = { asked.signal() } }
        c.send(#"{"op":"notify","values":[{"characteristic":"hr","value":{"hex":"01"}},{"characteristic":"t","value":{"hex":"02"}}],"id":1}"# + "\n")
        // The request reaches the loop: one durable write for both values.
        #expect(asked.wait(timeout: .now() + 10) == .success)
        #expect(try f.onLoop { f.peripheral.persistPromises.count } == 1)
        guard try f.onLoop({ f.peripheral.persistPromises.count }) == 1 else { return }
        try f.onLoop { f.peripheral.persistPromises[0].succeed(.overtaken([CharacteristicIndex(6)])) }
        #expect(c.line() == #"{"ok":true,"sent":1,"id":1}"#)
        let sent = try f.onLoop { f.peripheral.notifiedValues.map { $0.map { "\($0.0.rawValue):\($0.1)" } } }
        #expect(sent == [["7:[2]"]], "t sent, hr (overtaken) not")
        #expect(c.request(#"{"op":"get","characteristic":"hr"}"#) == #"{"ok":true,"value":{"hex":"00"}}"#)
    }

    /// A `set` of a persisted value is answered once durable (or `persist_failed`), and the
    /// replies to later requests wait behind it, in request order.
    @Test func persistedSetRepliesLaterInRequestOrder() throws {
        let f = try ServerFixture()
        defer { f.shutdown() }
        try f.onLoop { f.peripheral.persistedCharacteristics = [CharacteristicIndex(7)] }
        let c = try LineClient(path: f.path)
        c.send(#"{"op":"set","characteristic":"plain","value":{"hex":"01"},"id":1}"# + "\n")
        c.send(#"{"op":"get","characteristic":"plain","id":2}"# + "\n")
        c.send(#"{"op":"set","characteristic":"plain","value":{"hex":"02"},"id":3}"# + "\n")
        c.send(#"{"op":"status","id":4}"# + "\n")
        #expect(c.line(timeout: 0.3) == nil)
        #expect(try f.onLoop { f.peripheral.persistPromises.count } == 2)
        // The second commit fails first: nothing is sent until the first reply is known.
        try f.onLoop { f.peripheral.persistPromises[1].fail(PersistentStore.Error("cannot write /s/values.log: No space left on device")) }
        #expect(c.line(timeout: 0.3) == nil)
        try f.onLoop { f.peripheral.persistPromises[0].succeed(.newest) }
        #expect(c.line() == #"{"ok":true,"id":1}"#)
        // The get was executed when it arrived, before the set was durable.
        #expect(c.line() == #"{"ok":true,"value":{"hex":"64"},"id":2}"#)
        #expect(c.line() == #"{"ok":false,"error":"persist_failed","message":"cannot write /s/values.log: No space left on device","id":3}"#)
        #expect(c.line()?.hasPrefix(#"{"ok":true,"advertising""#) == true)
        // Durable first, then set: only the successful value is in place.
        #expect(c.request(#"{"op":"get","characteristic":"plain"}"#) == #"{"ok":true,"value":{"hex":"01"}}"#)
    }

    @Test func busyThenReadyGoesToThatClientOnly() throws {
        let f = try ServerFixture()
        defer { f.shutdown() }
        try f.onLoop { f.peripheral.notifyResults = [.busy] }
        let a = try LineClient(path: f.path)
        let b = try LineClient(path: f.path)
        #expect(a.request(#"{"op":"notify","characteristic":"hr","value":{"hex":"01"},"id":"n"}"#)
            == #"{"ok":false,"error":"busy","message":"a subscriber's transmit queue is full; nothing was changed; wait for the \"ready\" event","id":"n"}"#)
        #expect(b.request(#"{"op":"get","characteristic":"hr"}"#) == #"{"ok":true,"value":{"hex":"00"}}"#)
        try f.onLoop { f.peripheral.controlEventHandler?(.ready) }
        #expect(a.line() == #"{"event":"ready"}"#)
        #expect(b.line(timeout: 0.3) == nil)
        // Owed once: a second ready is not sent to a non-watcher.
        try f.onLoop { f.peripheral.controlEventHandler?(.ready) }
        #expect(a.line(timeout: 0.3) == nil)
    }

    @Test func aWaitingNotifyHoldsTheClientsLaterRequestsUntilReady() throws {
        // "wait": true: a full queue is waited out instead of answered `busy`; what the
        // client pipelined behind it waits too, so values and replies keep their order.
        let f = try ServerFixture()
        defer { f.shutdown() }
        try f.onLoop { f.peripheral.notifyResults = [.busy, .busy] }
        let a = try LineClient(path: f.path)
        let b = try LineClient(path: f.path)
        a.send(#"{"op":"notify","characteristic":"hr","value":{"hex":"01"},"wait":true,"id":1}"# + "\n"
            + #"{"op":"notify","characteristic":"hr","value":{"hex":"02"},"wait":true,"id":2}"# + "\n"
            + #"{"op":"get","characteristic":"hr","id":3}"# + "\n")
        #expect(a.line(timeout: 0.3) == nil)
        // Another client is not held back (and a notify without "wait" is answered busy).
        #expect(b.request(#"{"op":"notify","characteristic":"hr","value":{"hex":"03"}}"#)?.contains(#""error":"busy""#) == true)
        #expect(b.request(#"{"op":"notify","characteristic":"hr","value":{"hex":"04"}}"#) == #"{"ok":true,"sent":1}"#)
        #expect(try f.onLoop { f.peripheral.notified.map { $0.1 } } == [[0x01], [0x03], [0x04]])
        try f.onLoop { f.peripheral.controlEventHandler?(.ready) }
        #expect(a.line() == #"{"ok":true,"sent":1,"id":1}"#)
        #expect(a.line() == #"{"ok":true,"sent":1,"id":2}"#)
        #expect(a.line() == #"{"ok":true,"value":{"hex":"02"},"id":3}"#)
        // `ready` went to b, which was answered busy; not to a, whose notify just waited.
        #expect(b.line() == #"{"event":"ready"}"#)
        #expect(a.line(timeout: 0.3) == nil)
        #expect(try f.onLoop { f.peripheral.notified.map { $0.1 } } == [[0x01], [0x03], [0x04], [0x01], [0x02]])
        // Reading resumed: the connection works as before.
        #expect(a.request(#"{"op":"notify","characteristic":"hr","value":{"hex":"05"},"wait":true}"#) == #"{"ok":true,"sent":1}"#)
    }

    @Test func aWaitingNotifyStillFullAtReadyKeepsWaiting() throws {
        let f = try ServerFixture()
        defer { f.shutdown() }
        try f.onLoop { f.peripheral.notifyResults = [.busy, .busy] }
        let a = try LineClient(path: f.path)
        a.send(#"{"op":"notify","characteristic":"hr","value":{"hex":"01"},"wait":true,"id":1}"# + "\n")
        #expect(a.line(timeout: 0.3) == nil)  // (and the request has been read by now)
        #expect(try f.onLoop { f.peripheral.notified.count } == 1)
        try f.onLoop { f.peripheral.controlEventHandler?(.ready) }
        #expect(a.line(timeout: 0.3) == nil)
        try f.onLoop { f.peripheral.controlEventHandler?(.ready) }
        #expect(a.line() == #"{"ok":true,"sent":1,"id":1}"#)
    }

    @Test func watchersGetEventsAndAttachState() throws {
        let f = try ServerFixture()
        defer { f.shutdown() }
        var w: LineClient? = try LineClient(path: f.path)
        let other = try LineClient(path: f.path)
        #expect(w?.request(#"{"op":"watch","id":1}"#) == #"{"ok":true,"id":1}"#)
        // Watching is passive: not a responder yet, but watched (pairing prompts can be answered).
        #expect(try f.onLoop { f.peripheral.attachedHistory } == [])
        #expect(try f.onLoop { f.peripheral.watchedHistory } == [true])
        #expect(w?.request(#"{"op":"watch","requests":true,"id":2}"#) == #"{"ok":true,"id":2}"#)
        try f.onLoop { f.peripheral.controlEventHandler?(.connected(central: "01:02:03:04:05:06")) }
        #expect(w?.line() == #"{"event":"connected","central":"01:02:03:04:05:06"}"#)
        #expect(other.line(timeout: 0.3) == nil)
        // A watcher can still send requests.
        #expect(w?.request(#"{"op":"get","characteristic":"plain"}"#) == #"{"ok":true,"value":{"hex":"64"}}"#)
        #expect(try f.onLoop { f.peripheral.attachedHistory } == [true])
        w = nil  // closes the socket
        var history: [Bool] = []
        for _ in 0..<50 {
            history = try f.onLoop { f.peripheral.attachedHistory }
            if history.count == 2 { break }
            usleep(20_000)
        }
        #expect(history == [true, false])
        #expect(try f.onLoop { f.peripheral.watchedHistory } == [true, false])
    }

    @Test func onlyWatchersAskingForRequestsAreResponders() throws {
        let f = try ServerFixture()
        defer { f.shutdown() }
        let passive = try LineClient(path: f.path)
        #expect(passive.request(#"{"op":"watch"}"#) == #"{"ok":true}"#)
        #expect(passive.request(#"{"op":"watch","requests":false}"#) == #"{"ok":true}"#)
        #expect(try f.onLoop { f.peripheral.attachedHistory } == [])
        let responder = try LineClient(path: f.path)
        #expect(responder.request(#"{"op":"watch","requests":true}"#) == #"{"ok":true}"#)
        #expect(try f.onLoop { (f.peripheral.attachedHistory, f.server.responderCount) } == ([true], 1))
        // Both see events (a passive watcher sees the requests too, without answering them).
        try f.onLoop { f.peripheral.controlEventHandler?(.readRequest(central: "01:02:03:04:05:06", request: 1, characteristic: "ctl", offset: 0)) }
        let event = #"{"event":"read_request","central":"01:02:03:04:05:06","request":1,"characteristic":"ctl","offset":0}"#
        #expect(passive.line() == event)
        #expect(responder.line() == event)
        // Leaving out "requests" keeps the role; false gives it up.
        #expect(responder.request(#"{"op":"watch"}"#) == #"{"ok":true}"#)
        #expect(try f.onLoop { f.server.responderCount } == 1)
        #expect(responder.request(#"{"op":"watch","requests":false}"#) == #"{"ok":true}"#)
        #expect(try f.onLoop { (f.peripheral.attachedHistory, f.server.responderCount) } == ([true, false], 0))
    }

    @Test func clientsOverTheLimitGetOneErrorLineAndAreClosed() throws {
        let f = try ServerFixture(maximumClients: 2)
        defer { f.shutdown() }
        let a = try LineClient(path: f.path)
        let b = try LineClient(path: f.path)
        #expect(a.request(#"{"op":"status","id":1}"#)?.hasPrefix(#"{"ok":true"#) == true)
        #expect(b.request(#"{"op":"status","id":2}"#)?.hasPrefix(#"{"ok":true"#) == true)
        let refused = #"{"ok":false,"error":"too_many_clients","message":"gattd already has 2 control clients (--max-control-clients); try again later"}"#
        for _ in 0..<3 {
            let c = try LineClient(path: f.path)
            #expect(c.line() == refused)
            #expect(c.line(timeout: 1) == nil)  // closed
        }
        #expect(try f.onLoop { f.server.clientCount.clients } == 2)
        // Logged once while the limit holds.
        #expect(f.logged.all.filter { $0.contains("refusing more") } == ["<4>control socket: 2 clients connected (--max-control-clients); refusing more until one leaves\n"])
        // The refused ones did not count: after one leaves, one more is accepted.
        _ = consume a
        for _ in 0..<50 where try f.onLoop({ f.server.clientCount.clients }) == 2 { usleep(20_000) }
        let d = try LineClient(path: f.path)
        #expect(d.request(#"{"op":"status","id":4}"#)?.hasPrefix(#"{"ok":true"#) == true)
        #expect(b.request(#"{"op":"status","id":5}"#)?.hasPrefix(#"{"ok":true"#) == true)
    }

    @Test func slowWatcherIsDropped() throws {
        let f = try ServerFixture(maximumOutputBytes: 4096)
        defer { f.shutdown() }
        let w = try LineClient(path: f.path)
        #expect(w.request(#"{"op":"watch","requests":true}"#) == #"{"ok":true}"#)
        // ~2 MB of events, never read: more than the kernel buffers plus 4 KiB.
        try f.onLoop {
            for _ in 0..<20_000 { f.peripheral.controlEventHandler?(.written(central: "01:02:03:04:05:06", characteristic: "plain", value: ControlValue(hex: Array(repeating: 0, count: 100)))) }
        }
        var count: (clients: Int, watchers: Int) = (1, 1)
        for _ in 0..<50 {
            count = try f.onLoop { f.server.clientCount }
            if count.clients == 0 { break }
            usleep(20_000)
        }
        #expect(count.clients == 0)
        #expect(try f.onLoop { f.peripheral.attachedHistory } == [true, false])
    }
}

@Suite("Control socket path")
struct ControlSocketPathTests {
    private func tempDir() throws -> String {
        let d = NSTemporaryDirectory() + "gattd-sock-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: d, withIntermediateDirectories: true)
        return d
    }

    /// A bound Unix socket at `path`, listening or not.
    private func bound(_ path: String, listening: Bool) -> Int32 {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        var addr = ControlSocketPath.socketAddress(path)!
        _ = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        if listening { listen(fd, 1) }
        return fd
    }

    @Test func staleSocketIsReplaced() throws {
        let d = try tempDir()
        defer { try? FileManager.default.removeItem(atPath: d) }
        let path = d + "/c.sock"
        #expect(ControlSocketPath.inspect(path) == .nothing)
        close(bound(path, listening: false))  // a crashed daemon leaves the file
        #expect(ControlSocketPath.inspect(path) == .stale)
        try ControlSocketPath.prepare(path)
        #expect(access(path, F_OK) != 0)
    }

    @Test func liveSocketIsAnError() throws {
        let d = try tempDir()
        defer { try? FileManager.default.removeItem(atPath: d) }
        let path = d + "/c.sock"
        let fd = bound(path, listening: true)
        defer { close(fd) }
        #expect(ControlSocketPath.inspect(path) == .live)
        #expect(throws: ControlSocketError("another gattd is running on \(path)")) { try ControlSocketPath.prepare(path) }
        #expect(access(path, F_OK) == 0)
    }

    @Test func regularFileIsNotRemoved() throws {
        let d = try tempDir()
        defer { try? FileManager.default.removeItem(atPath: d) }
        let path = d + "/c.sock"
        #expect(FileManager.default.createFile(atPath: path, contents: Data("x".utf8)))
        #expect(ControlSocketPath.inspect(path) == .notASocket)
        #expect(throws: ControlSocketError.self) { try ControlSocketPath.prepare(path) }
        #expect(access(path, F_OK) == 0)
    }

    @Test func unknownGroupIsAnError() {
        #expect(throws: ControlSocketError("group \"no-such-group-gattd\" does not exist (--control-group)")) {
            try ControlSocketPath.groupID("no-such-group-gattd")
        }
        #expect((try? ControlSocketPath.groupID("root")) == 0)
    }

    @Test func serverRefusesASecondServerOnTheSamePath() throws {
        let f = try ServerFixture()
        defer { f.shutdown() }
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        defer { try? group.syncShutdownGracefully() }
        let second = ControlServer(peripheral: FakePeripheral(), eventLoop: group.next(), options: .init(path: f.path), logger: Logger(label: "t"))
        #expect(throws: ControlSocketError("another gattd is running on \(f.path)")) { try second.start().wait() }
    }
}

@Suite("Control socket: pairing and bonds")
struct ControlPairingServerTests {
    static let central = "01:02:03:04:05:06"

    @Test func respondBondsAndUnbondOverTheSocket() throws {
        let f = try ServerFixture()
        defer { f.shutdown() }
        let a = BluetoothAddress(Self.central)!
        try f.onLoop {
            f.peripheral.centrals[a] = ConnectionID(0x40)
            f.peripheral.bondList = [StoredBond(bond: Bond(address: a, addressType: .public, longTermKey: nil, keySize: 16, authenticated: false, secureConnections: true, peerIRK: [UInt8](repeating: 1, count: 16)), created: 1_790_000_000)]
        }
        let c = try LineClient(path: f.path)
        #expect(c.request(#"{"op":"pairing_respond","central":"01:02:03:04:05:06","confirm":true}"#) == #"{"ok":true}"#)
        #expect(c.request(#"{"op":"pairing_respond","central":"01:02:03:04:05:06","passkey":13}"#)
            == #"{"ok":false,"error":"no_pairing_prompt","message":"this prompt needs \"confirm\": true or false"}"#)
        #expect(c.request(#"{"op":"pairing_respond","central":"01:02:03:04:05:07","accept":true}"#)?.contains(#""error":"unknown_central""#) == true)
        #expect(c.request(#"{"op":"pairing_respond","accept":true}"#) == #"{"ok":false,"error":"no_pairing_prompt","message":"no pairing prompt is waiting"}"#)
        #expect(try f.onLoop { f.peripheral.pairingAnswers.map { "\($0.0?.description ?? "-") \($0.3.map { "\($0)" } ?? "-")" } } == ["01:02:03:04:05:06 true"])
        #expect(c.request(#"{"op":"bonds"}"#)
            == #"{"ok":true,"bonds":[{"central":"01:02:03:04:05:06","address_type":"public","authenticated":false,"secure_connections":true,"key_size":16,"irk":true,"created":1790000000}]}"#)
        #expect(c.request(#"{"op":"unbond","central":"01:02:03:04:05:06"}"#) == #"{"ok":true}"#)
        #expect(c.request(#"{"op":"unbond","central":"01:02:03:04:05:06"}"#) == #"{"ok":false,"error":"unknown_bond","message":"no bond with 01:02:03:04:05:06"}"#)
        #expect(c.request(#"{"op":"unbond","central":"nope"}"#)?.contains(#""error":"invalid_value""#) == true)
        #expect(c.request(#"{"op":"bonds"}"#) == #"{"ok":true,"bonds":[]}"#)
    }
}

extension ControlServer {
    /// Number of connected clients and of watchers (on the server's event loop).
    var clientCount: (clients: Int, watchers: Int) {
        (clients.count, clients.values.filter(\.watching).count)
    }

    /// Number of responders (watchers that asked for requests).
    var responderCount: Int { clients.values.filter(\.responding).count }
}
