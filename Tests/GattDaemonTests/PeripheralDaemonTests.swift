import GattCore
import GattTransport
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import Testing

@testable import GattDaemon

/// A transport that records what the daemon asks and reports what the test scripts.
final class FakeTransport: SelfDrivenTransport, @unchecked Sendable {
    let eventLoop: any EventLoop
    var onEvent: ((TransportEvent) -> Void)?
    var onAvailable: (() -> Void)?
    /// What `open()` answers, in turn (the last one repeats).
    var openResults: [TransportOpenFailure?] = [nil]
    var refusal: String?
    /// What `.ready` says the controller can do (nil: not reported).
    var controller: ControllerInfo?
    private(set) var opens = 0
    private(set) var sent: [(BearerID, [UInt8])] = []
    private(set) var advertising: [AdvertisingPayloads?] = []
    private(set) var advertisingRequests: [[AdvertisingSet]] = []
    private(set) var disconnects: [ConnectionID] = []
    private(set) var closed = false
    private(set) var pairingAnswers: [PairingUserAnswer] = []
    private(set) var loadedBonds: [Bond]?
    private(set) var removedBonds: [Bond] = []

    init(eventLoop: any EventLoop) { self.eventLoop = eventLoop }

    func refusal(of configuration: GattConfiguration) -> String? { refusal }
    func open() -> EventLoopFuture<Void> {
        let result = openResults[min(opens, openResults.count - 1)]
        opens += 1
        if let result { return eventLoop.makeFailedFuture(result) }
        onEvent?(.ready(address: BluetoothAddress("C0:FF:EE:00:00:01")!, description: "fake", controller: controller))
        return eventLoop.makeSucceededVoidFuture()
    }
    func send(_ pdu: [UInt8], on id: BearerID) { sent.append((id, pdu)) }
    func closeEnhancedBearer(_ id: BearerID, now: Duration) -> [Never] { [] }
    /// No Enhanced ATT: a fake reports no bearer but the unenhanced one.
    var supportsEnhancedATT: Bool { false }
    func setEnhancedATT(_ enabled: Bool) {}
    func setLocalIRK(_ irk: [UInt8]) {}
    func probe(timeout: TimeAmount) -> EventLoopFuture<ControllerProbe> { probeByOpening(timeout: timeout) }
    func flush(now: Duration) -> [Never] { [] }
    /// Records the primary set's payloads (nil: not asked for) and every request whole.
    func setAdvertising(_ sets: [AdvertisingSet], now: Duration) -> [Never] {
        advertising.append(sets.first(where: \.isPrimary)?.payloads)
        advertisingRequests.append(sets)
        return []
    }
    func disconnect(_ id: ConnectionID, reason: HCIStatus, now: Duration) -> [Never] {
        disconnects.append(id)
        return []
    }
    func requestSecurity(_ id: ConnectionID, level: SecurityLevel, reason: ATTError, now: Duration) -> [Never] { [] }
    func respondToPairing(_ id: ConnectionID, _ answer: PairingUserAnswer, now: Duration) -> [Never] {
        pairingAnswers.append(answer)
        return []
    }
    /// Link requests as asked; with `refusesLinkRequests` refused at once, as a transport that cannot.
    private(set) var linkRequests: [(ConnectionID, LinkRequest)] = []
    var refusesLinkRequests = false
    private(set) var cancelledLinkRequests: [(ConnectionID, LinkRequestKind)] = []
    func cancelLinkRequest(_ id: ConnectionID, _ kind: LinkRequestKind, now: Duration) -> [Never] {
        cancelledLinkRequests.append((id, kind))
        return []
    }
    var servedDatabases = 0
    func serveDatabase(_ database: GATTDatabase) { servedDatabases += 1 }
    var gattAnswers: [(GATTAccessID, Result<[UInt8], ATTError>)] = []
    var gattUpdates: [(AttributeHandle, [UInt8])] = []
    func answerGATT(_ id: GATTAccessID, _ result: Result<[UInt8], ATTError>, now: Duration) -> [Never] {
        gattAnswers.append((id, result))
        return []
    }
    func updateGATT(_ handle: AttributeHandle, _ value: [UInt8], now: Duration) -> [Never] {
        gattUpdates.append((handle, value))
        return []
    }
    func requestLink(_ id: ConnectionID, _ request: LinkRequest, now: Duration) -> [Never] {
        if refusesLinkRequests {
            onEvent?(.linkRequestFinished(id, request.kind, .refused("this transport cannot")))
        } else {
            linkRequests.append((id, request))
        }
        return []
    }
    func setBonds(_ bonds: [Bond]) { loadedBonds = bonds }
    func removeBond(_ bond: Bond) { removedBonds.append(bond) }
    /// Every `setL2CAPChannelServers` call.
    private(set) var l2capServers: [[L2CAPChannelServer]] = []
    func setL2CAPChannelServers(_ servers: [L2CAPChannelServer]) { l2capServers.append(servers) }
    /// Channel sockets reported by the test (`channel(_:)`), until the daemon takes them.
    private var channelSockets: [L2CAPChannelTicket: Int32] = [:]
    private var tickets: UInt64 = 0
    /// Keeps `socket` as an accepted channel's, as a transport does; its ticket.
    func channel(_ socket: Int32) -> L2CAPChannelTicket {
        tickets += 1
        let ticket = L2CAPChannelTicket(tickets)
        channelSockets[ticket] = socket
        return ticket
    }
    func takeL2CAPChannel(_ ticket: L2CAPChannelTicket) -> Int32? { channelSockets.removeValue(forKey: ticket) }
    func configure(_ configuration: GattConfiguration, now: Duration) -> [Never] { [] }
    func close() -> EventLoopFuture<Void> {
        closed = true
        return eventLoop.makeSucceededVoidFuture()
    }
    /// Reports an event as the transport would, on its loop.
    func report(_ events: TransportEvent...) throws {
        try eventLoop.submit { for e in events { self.onEvent?(e) } }.wait()
    }
}

/// The one daemon around the core, driven through a scripted transport: start, connect,
/// subscribe, notify with backpressure, reload, stop.
@Suite(.serialized) struct PeripheralDaemonTests {
    static let config = """
        {"name": "fake", "services": [{"uuid": "180D", "characteristics": [
          {"id": "hr", "uuid": "2A37", "properties": ["notify"], "value": {"hex": "00"}}]}]}
        """
    static let central = TransportPeer(address: BluetoothAddress("11:22:33:44:55:66")!, addressType: .random, handle: 0x40)
    static let a = ConnectionID(0x40)

    let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
    let transport: FakeTransport
    let daemon: PeripheralDaemon
    let configuration: GattConfiguration
    let payloads: AdvertisingPayloads

    init() throws {
        configuration = try ConfigLoader.load(data: Array(Self.config.utf8)).gatt
        payloads = try AdvertisingPayloadBuilder.build(configuration.advertising, deviceName: configuration.name)
        transport = FakeTransport(eventLoop: group.next())
        daemon = PeripheralDaemon(configuration: configuration, payloads: payloads, transport: transport, logger: Logger(label: "test"))
    }

    func on<T: Sendable>(_ body: @escaping @Sendable () -> T) throws -> T { try group.next().submit(body).wait() }

    /// The central's CCCD write for `hr` (notifications on).
    func subscribe() throws {
        let db = try on { self.daemon.database }
        let cccd = db[try #require(db.characteristicIndex(named: "hr"))].valueHandle.rawValue + 1
        try transport.report(.connected(Self.a, Self.central), .received(.fixed(Self.a), [0x12, UInt8(cccd & 0xFF), UInt8(cccd >> 8), 0x01, 0x00]), .readyToSend(.fixed(Self.a)))
    }

    @Test func startAdvertisesAndANotificationReachesTheSubscriber() throws {
        try daemon.start().wait()
        #expect(transport.advertising == [payloads])
        try transport.report(.advertisingChanged(true))
        #expect(try on { self.daemon.status().advertising })
        try subscribe()
        #expect(transport.sent.map(\.1) == [[0x13]])
        let hr = try on { self.daemon.database.characteristicIndex(named: "hr")! }
        try transport.report(.readyToSend(.fixed(Self.a)))
        let r = try on { self.daemon.notify(characteristic: hr, value: [0x48], only: nil) }
        #expect(r == .queued(1))
        #expect(transport.sent.last?.1.suffix(1) == [0x48])
        try daemon.stop().wait()
    }

    /// Without a state directory a Write Request to a `"persist"` value is answered in the turn
    /// that received it: no event-loop turn of its own (#29's shorter walk).
    @Test func aWriteWithoutAStateDirectoryIsAnsweredInTheTurnThatReceivedIt() throws {
        let config = """
            {"name": "fake", "services": [{"uuid": "AAA0", "characteristics": [
              {"id": "p", "uuid": "AAA1", "persist": true, "max_length": 2, "value": {"hex": "0000"}, "properties": ["read", "write"]}]}]}
            """
        let configuration = try ConfigLoader.load(data: Array(config.utf8)).gatt
        let transport = FakeTransport(eventLoop: group.next())
        let daemon = PeripheralDaemon(configuration: configuration, payloads: payloads, transport: transport, logger: Logger(label: "test"))
        try daemon.start().wait()
        let handle = try on {
            let db = daemon.database
            return db[db.characteristicIndex(named: "p")!].valueHandle.rawValue
        }
        try transport.report(.connected(Self.a, Self.central), .readyToSend(.fixed(Self.a)))
        // The write goes in and the sent PDUs are read in one task on the loop: nothing after it ran.
        let sent = try on { () -> [[UInt8]] in
            transport.onEvent?(.received(.fixed(Self.a), [0x12, UInt8(handle & 0xFF), UInt8(handle >> 8), 0x34, 0x12]))
            return transport.sent.map(\.1)
        }
        #expect(sent.last == [0x13])
        #expect(try on { daemon.database.value(ofCharacteristic: daemon.database.characteristicIndex(named: "p")!) } == [0x34, 0x12])
        try daemon.stop().wait()
    }

    @Test func notifyIsBusyWhileTheTransportHasNoRoom() throws {
        try daemon.start().wait()
        try subscribe()
        let hr = try on { self.daemon.database.characteristicIndex(named: "hr")! }
        let results = try on { (0..<40).map { self.daemon.notify(characteristic: hr, value: [UInt8($0)], only: nil) } }
        #expect(results.filter { $0 == .busy }.count == 8)
        try daemon.stop().wait()
    }

    @Test func aReloadTheTransportRefusesChangesNothing() throws {
        try daemon.start().wait()
        transport.refusal = "not with this transport"
        var other = configuration
        other.name = "other"
        #expect(throws: PeripheralDaemon.ReloadRefused.self) { try daemon.reload(configuration: other, settings: DaemonSettings(), payloads: payloads).wait() }
        #expect(try on { self.daemon.configuration.name } == "fake")
        transport.refusal = nil
        try daemon.reload(configuration: other, settings: DaemonSettings(), payloads: payloads).wait()
        #expect(try on { self.daemon.configuration.name } == "other")
        try daemon.stop().wait()
    }

    @Test func stopWithdrawsAdvertisingDisconnectsAndWaitsForTheCentral() throws {
        try daemon.start().wait()
        try transport.report(.advertisingChanged(true), .connected(Self.a, Self.central), .advertisingChanged(false))
        let stopped = daemon.stop()
        _ = try on { () }
        #expect(transport.disconnects == [Self.a])
        #expect(!transport.closed)
        try transport.report(.disconnected(Self.a, reason: .connectionTerminatedByLocalHost))
        try stopped.wait()
        #expect(transport.closed)
        // One disable for the whole stop, whatever the disconnection does (issue 9: the kernel
        // transport sent it twice and logged a spurious Command Disallowed).
        #expect(transport.advertising.filter { $0 == nil }.count == 1)
    }

    @Test func aTransportThatCanNeverOpenFailsTheStart() throws {
        transport.openResults = [TransportOpenFailure("bluetoothd is running", retry: .never(exitCode: 69))]
        #expect(throws: TransportOpenFailure.self) { try daemon.start().wait() }
    }

    @Test func anUnreachableControllerIsRetriedWithBackoff() throws {
        transport.openResults = [TransportOpenFailure("cannot open", retry: .withBackoff), nil]
        try daemon.start().wait()
        #expect(transport.opens == 1)
        // 250 ms later: opened, ready, advertising asked for.
        for _ in 0..<40 where transport.advertising.isEmpty { try on { () }; usleep(25_000) }
        #expect(transport.opens == 2)
        #expect(transport.advertising == [payloads])
        try daemon.stop().wait()
    }

    /// Core Bluetooth's peripheralManagerDidUpdateState and didStartAdvertising, as control
    /// events: the controller's state on every open, loss and failure; the primary set's
    /// advertising started, stopped or refused; `status` carries the state.
    @Test func stateAndAdvertisingEvents() throws {
        transport.openResults = [TransportOpenFailure("hci0 is down; waiting for it to come back", retry: .whenAvailable), nil]
        let events = EventRecorder()
        try on { self.daemon.controlEventHandler = { events.items.append($0) } }
        try daemon.start().wait()
        #expect(try on { events.items } == [.state(.poweredOff, reason: "hci0 is down; waiting for it to come back")])
        #expect(try on { self.daemon.status().state } == .poweredOff)
        try on { self.transport.onAvailable?() }
        try transport.report(.advertisingChanged(true), .advertisingChanged(false), .advertisingRefused(whileConnected: false, reason: "Command Disallowed"))
        try transport.report(.lost(reason: "the controller went away"))
        #expect(try on { events.items.dropFirst() } == [
            .state(.poweredOn, reason: nil),
            .advertising(set: "primary", .started, reason: nil),
            .advertising(set: "primary", .stopped, reason: nil),
            .advertising(set: "primary", .failed, reason: "Command Disallowed"),
            .state(.resetting, reason: "the controller went away"),
        ])
        #expect(try on { self.daemon.status().state } == .resetting)
        try daemon.stop().wait()
    }

    @Test func aMissingCapabilityIsUnauthorized() throws {
        transport.openResults = [TransportOpenFailure("needs CAP_NET_ADMIN", retry: .never(exitCode: 77))]
        let events = EventRecorder()
        try on { self.daemon.controlEventHandler = { events.items.append($0) } }
        #expect(throws: TransportOpenFailure.self) { try daemon.start().wait() }
        #expect(try on { events.items } == [.state(.unauthorized, reason: "needs CAP_NET_ADMIN")])
    }

    @Test func promptsNobodyCanAnswerAreRefusedAndPasskeysOnlyShown() throws {
        try daemon.start().wait()
        try transport.report(.connected(Self.a, Self.central), .pairing(Self.a, .displayPasskey(1234)))
        #expect(transport.pairingAnswers.isEmpty, "a displayed passkey needs no answer")
        try transport.report(.pairing(Self.a, .numericComparison(654_321)), .pairing(Self.a, .passkeyRequest))
        #expect(transport.pairingAnswers == [.reject, .reject])
        try daemon.stop().wait()
    }

    @Test func answersAreCheckedAgainstThePendingPrompt() throws {
        try daemon.start().wait()
        let events = EventRecorder()
        try on { self.daemon.controlEventHandler = { events.items.append($0) } }
        try on { self.daemon.setControlWatched(true) }
        try transport.report(.connected(Self.a, Self.central), .pairing(Self.a, .numericComparison(654_321)))
        #expect(transport.pairingAnswers.isEmpty, "a watcher can answer: the prompt waits")
        #expect(try on { events.items.last } == .pairing(central: Self.central.address.description, .numericComparison("654321")))
        let central = Self.central.address
        #expect(try on { self.daemon.respondToPairing(central: central, accept: nil, passkey: 1, confirm: nil) }
            == .refused("this prompt needs \"confirm\": true or false"))
        #expect(try on { self.daemon.respondToPairing(central: nil, accept: nil, passkey: nil, confirm: true) } == nil, "the only prompt")
        #expect(transport.pairingAnswers == [.confirm(true)])
        try transport.report(.pairing(Self.a, .pairingFailed(.numericComparisonFailed, remote: false)))
        #expect(try on { self.daemon.respondToPairing(central: central, accept: nil, passkey: nil, confirm: true) }
            == .refused("no pairing prompt is waiting for this central"), "the pairing ended")
        #expect(try on { self.daemon.respondToPairing(central: BluetoothAddress("00:00:00:00:00:09")!, accept: true, passkey: nil, confirm: nil) }
            == .unknownCentral)
        #expect(try on { self.daemon.respondToPairing(central: nil, accept: true, passkey: nil, confirm: nil) } == .ambiguous(0))
        // A prompt left waiting is refused when the last watcher goes.
        try transport.report(.pairing(Self.a, .passkeyRequest))
        #expect(transport.pairingAnswers == [.confirm(true)])
        try on { self.daemon.setControlWatched(false) }
        #expect(transport.pairingAnswers == [.confirm(true), .reject])
        try daemon.stop().wait()
    }
}

/// Control events as the daemon delivers them (touched on its event loop only).
final class EventRecorder: @unchecked Sendable {
    var items: [ControlEvent] = []
}

extension PeripheralDaemon {
    /// A daemon serving `PeripheralDaemonTests.config` on `transport` (not started).
    static func serving(testConfigOn transport: FakeTransport) throws -> PeripheralDaemon {
        let configuration = try ConfigLoader.load(data: Array(PeripheralDaemonTests.config.utf8)).gatt
        let payloads = try AdvertisingPayloadBuilder.build(configuration.advertising, deviceName: configuration.name)
        return PeripheralDaemon(configuration: configuration, payloads: payloads, transport: transport, logger: Logger(label: "test"))
    }
}
