import Testing

@testable import GattCore
@testable import GattHost
import GattTestFixtures

/// Several advertising sets on the H4 host (the config's `advertising_sets`, issue #19): on a
/// controller with extended advertising one Advertising_Handle per set, all on the air at once
/// (Core Spec Vol 4 Part E §7.8.53–§7.8.58); on a legacy controller the sets take turns
/// (`AdvertisingRotation`, one 2 s slice each); what does not fit is refused, naming why.
@Suite struct HostAdvertisingSetsTests {
    /// An iBeacon (legacy ADV_NONCONN_IND, 30 bytes) and 120 bytes of manufacturer data in
    /// extended PDUs, as in config/advertising-sets.json.
    static let beacon = AdvertisingSet(
        id: "beacon", path: "advertising_sets[0]",
        payloads: AdvertisingPayloads(
            advertisingData: [0x02, 0x01, 0x06, 0x1A, 0xFF, 0x4C, 0x00, 0x02, 0x15] + Array(repeating: 0xE2, count: 16) + [0x00, 0x07, 0x00, 0x09, 0xC5],
            scanResponseData: [], parameters: AdvertisingParameters(intervalMin: 0xA0, intervalMax: 0xF0, advertisingType: .nonConnectableUndirected),
            isBeaconOnly: true))
    static let long = AdvertisingSet(
        id: "long", path: "advertising_sets[1]",
        payloads: AdvertisingPayloads(
            advertisingData: [119, 0xFF, 0xFF, 0xFF] + (0..<116).map { UInt8($0) }, scanResponseData: [],
            parameters: AdvertisingParameters(intervalMin: 0xA0, intervalMax: 0xF0, advertisingType: .nonConnectableUndirected),
            isBeaconOnly: false, pdus: .extended1M))

    static func enable(_ handle: UInt8) -> HCICommand { .leSetExtendedAdvertisingEnable(enable: true, sets: [AdvertisingSetEnable(handle: handle)]) }
    static func disable(_ handle: UInt8) -> HCICommand { .leSetExtendedAdvertisingEnable(enable: false, sets: [AdvertisingSetEnable(handle: handle)]) }

    static func sets(_ h: HostHarness) -> [StackEvent] {
        h.events.filter { if case .setChanged = $0 { true } else { false } }
    }

    static func commands(_ cs: [HCICommand]) -> [H4Packet] { cs.map { H4Packet(command: $0) } }

    // MARK: Extended advertising: every set at once

    @Test func everySetHasItsHandleAndAllAreOnTheAirTogether() {
        var h = HostHarness(controller: .extended, otherSets: [Self.beacon, Self.long])
        h.start()  // (bring-up and the primary set on handle 0 are checked in HostExtendedAdvertisingTests)
        let sent = h.sentCommands
        guard let i = sent.firstIndex(of: H4Packet(command: Self.enable(0))) else {
            Issue.record("set 0 never enabled")
            return
        }
        let beacon = ExtendedAdvertisingParameters(handle: 1, payloads: Self.beacon.payloads)
        let long = ExtendedAdvertisingParameters(handle: 2, payloads: Self.long.payloads)
        #expect(Array(sent[(i + 1)...]) == Self.commands([
            .leSetExtendedAdvertisingParameters(beacon),
            .leSetExtendedAdvertisingData(handle: 1, operation: .complete, fragmentPreference: .minimize, data: Self.beacon.payloads.advertisingData),
            Self.enable(1),
            .leSetExtendedAdvertisingParameters(long),
            .leSetExtendedAdvertisingData(handle: 2, operation: .complete, fragmentPreference: .minimize, data: Self.long.payloads.advertisingData),
            Self.enable(2),
        ]))
        // Set 1: legacy ADV_NONCONN_IND (0x0010), SID 1; set 2: extended, neither connectable nor
        // scannable (0x0000), LE 1M both, SID 2.
        #expect(sent[i + 1].encoded == [0x01, 0x36, 0x20, 0x19, 0x01, 0x10, 0x00, 0xA0, 0x00, 0x00, 0xF0, 0x00, 0x00, 0x07, 0x00, 0x00,
                                        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x7F, 0x01, 0x00, 0x01, 0x01, 0x00])
        #expect(sent[i + 4].encoded == [0x01, 0x36, 0x20, 0x19, 0x02, 0x00, 0x00, 0xA0, 0x00, 0x00, 0xF0, 0x00, 0x00, 0x07, 0x00, 0x00,
                                        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x7F, 0x01, 0x00, 0x01, 0x02, 0x00])
        // LE Set Extended Advertising Data, set 2, Complete, 120 bytes; LE Set Extended Advertising Enable, set 2.
        #expect(sent[i + 5].encoded.prefix(8) == [0x01, 0x37, 0x20, 124, 0x02, 0x03, 0x01, 120])
        #expect(sent[i + 6].encoded == [0x01, 0x39, 0x20, 0x06, 0x01, 0x01, 0x02, 0x00, 0x00, 0x00])
        #expect(Self.sets(h) == [.setChanged("beacon", true), .setChanged("long", true)])
        #expect(h.host.core.isOnAir("beacon") && h.host.core.isOnAir("long") && h.host.isAdvertising)
        #expect(h.host.host.advertisingSetsTakeTurns == false && h.violations.isEmpty && h.fatals.isEmpty)
    }

    /// Every set advertises with the address `advertising.own_address_type` chooses: each
    /// extended set gets it with LE Set Advertising Set Random Address (§7.8.52).
    @Test func everySetGetsTheRandomAddress() {
        let address = BluetoothAddress("C1:22:33:44:55:66")!
        var beacon = Self.beacon
        beacon.payloads.parameters.ownAddressType = .random
        var h = HostHarness(configuration: .test(random: address), controller: .extended, otherSets: [beacon])
        h.start()
        #expect(HostExtendedAdvertisingTests.setAddresses(h) == [address, address])
        #expect(h.sentCommands.contains(H4Packet(command: .leSetAdvertisingSetRandomAddress(handle: 1, address: address))))
        #expect(h.host.core.isOnAir("beacon") && h.host.isAdvertising)
    }

    /// max_connections 1: the connection to the primary set ends handle 0 only (LE Enhanced
    /// Connection Complete, LE Advertising Set Terminated naming it); 1 and 2 stay enabled.
    @Test func aConnectionToThePrimarySetLeavesTheOthersOnTheAir() {
        var h = HostHarness(configuration: .test(maxConnections: 1), controller: .extended, otherSets: [Self.beacon, Self.long])
        h.bringUp()
        h.connectToSet(0x40, set: 0)
        #expect(!h.sentOpcodes.contains(.leSetExtendedAdvertisingEnable) && !h.sentOpcodes.contains(.leRemoveAdvertisingSet))
        #expect(h.events.contains(.advertisingChanged(false)) && Self.sets(h).isEmpty)
        #expect(!h.host.isAdvertising && h.host.core.isOnAir("beacon") && h.host.core.isOnAir("long"))
        // The disconnection brings the primary set back with an enable alone.
        h.clearLogs()
        h.disconnected(0x40)
        #expect(h.sentCommands == Self.commands([Self.enable(0)]) && h.host.isAdvertising)
    }

    @Test func moreSetsThanTheControllerHasAreRefusedNamingItsLimit() {
        var c = FakeController.extended
        c.advertisingSets = 2
        var h = HostHarness(controller: c, otherSets: [Self.beacon, Self.long])
        h.start()
        #expect(h.warnings == [#"advertising refused: the controller has 2 advertising sets, all in use: set "long" cannot be added"#])
        #expect(h.host.core.isOnAir("beacon") && !h.host.core.isOnAir("long") && h.fatals.isEmpty)
        #expect(!h.sent.contains(H4Packet(command: Self.enable(2))))
    }

    @Test func dataLongerThanTheControllerTakesIsRefused() {
        var c = FakeController.extended
        c.maximumAdvertisingDataLength = 31
        var h = HostHarness(controller: c, otherSets: [Self.beacon, Self.long])
        h.start()
        #expect(h.warnings == [#"advertising refused: set "long" has 120 bytes of data; the controller takes at most 31 per set"#])
        #expect(h.host.core.isOnAir("beacon") && !h.host.core.isOnAir("long") && h.host.isAdvertising)
    }

    /// `advertise off` for a set disables its handle alone; on again re-enables it as it was.
    @Test func aSetTurnedOffIsDisabledAlone() {
        var h = HostHarness(controller: .extended, otherSets: [Self.beacon, Self.long])
        h.bringUp()
        h.take(h.host.setAdvertising(false, set: "beacon", now: h.now))
        #expect(h.sentCommands == Self.commands([Self.disable(1)]))
        #expect(Self.sets(h) == [.setChanged("beacon", false)])
        h.clearLogs()
        h.take(h.host.setAdvertising(true, set: "beacon", now: h.now))
        #expect(h.sentCommands == Self.commands([Self.enable(1)]))
    }

    /// Runs `first` and every batch after it, each command succeeding: the commands and events.
    static func run(_ sets: inout ExtendedAdvertisingSets, _ first: ExtendedAdvertisingDriver.Batch?) -> ([HCICommand], [TransportEvent]) {
        var commands: [HCICommand] = []
        var events: [TransportEvent] = []
        var next = first
        while let batch = next {
            commands += batch.commands
            let (e, n) = sets.batchFinished(failure: nil, connected: false)
            events += e
            next = n
        }
        return (commands, events)
    }

    /// A reload replacing the beacon with the long set on a controller with two sets: the
    /// beacon's handle goes to the long set (disabled, removed, configured, enabled).
    @Test func aHandleNoLongerWantedGoesToTheNextSet() {
        var sets = ExtendedAdvertisingSets(limit: 2, maximumDataLength: 1650)
        let primary = AdvertisingSet(id: AdvertisingSet.primaryID, path: AdvertisingSet.primaryPath, payloads: PeripheralFixture.payloads)
        let (first, firstBatch) = sets.setDesired([primary, Self.beacon], randomAddress: nil)
        #expect(first.isEmpty)
        let (_, on) = Self.run(&sets, firstBatch)
        #expect(on == [.advertisingChanged(true), .advertisingChanged(true, set: "beacon")])
        #expect(sets.handle(of: "beacon") == 1)

        let (events, batch) = sets.setDesired([primary, Self.long], randomAddress: nil)
        #expect(events == [.advertisingChanged(false, set: "beacon")])
        let (commands, after) = Self.run(&sets, batch)
        #expect(commands == [
            Self.disable(1), .leRemoveAdvertisingSet(handle: 1),
            .leSetExtendedAdvertisingParameters(ExtendedAdvertisingParameters(handle: 1, payloads: Self.long.payloads)),
            .leSetExtendedAdvertisingData(handle: 1, operation: .complete, fragmentPreference: .minimize, data: Self.long.payloads.advertisingData),
            Self.enable(1),
        ])
        #expect(after == [.advertisingChanged(true, set: "long")])
        #expect(sets.handle(of: "long") == 1 && sets.handle(of: "beacon") == nil)
        // A third set has no handle left.
        let (refused, none) = sets.setDesired([primary, Self.long, Self.beacon], randomAddress: nil)
        #expect(none == nil)
        #expect(refused == [.advertisingRefused(
            whileConnected: false, reason: #"the controller has 2 advertising sets, all in use: set "beacon" cannot be added"#, set: "beacon")])
    }

    // MARK: Legacy advertising: the sets take turns

    @Test func onALegacyControllerTheSetsTakeTurns() {
        var h = HostHarness(otherSets: [Self.beacon])
        h.start()
        #expect(h.host.host.advertisingSetsTakeTurns == true)
        #expect(h.host.isAdvertising && Self.sets(h).isEmpty)
        #expect(h.host.nextDeadline == .seconds(2))
        let primary = h.payloads
        let beacon = Self.beacon.payloads
        h.clearLogs()
        h.advance(to: .seconds(2))
        #expect(h.sentCommands == Self.commands([
            .leSetAdvertisingEnable(false), .leSetAdvertisingParameters(beacon.parameters), .leSetAdvertisingData(beacon.advertisingData),
            .leSetScanResponseData([]), .leSetAdvertisingEnable(true),
        ]))
        // ADV_NONCONN_IND (0x03) for the beacon's turn.
        #expect(h.sentCommands[1].encoded == [0x01, 0x06, 0x20, 0x0F, 0xA0, 0x00, 0xF0, 0x00, 0x03, 0x00, 0x00, 0, 0, 0, 0, 0, 0, 0x07, 0x00])
        #expect(Self.sets(h) == [.setChanged("beacon", true)])
        #expect(h.host.nextDeadline == .seconds(4))
        h.clearLogs()
        h.advance(to: .seconds(4))
        #expect(h.sentCommands == Self.commands([
            .leSetAdvertisingEnable(false), .leSetAdvertisingParameters(primary.parameters), .leSetAdvertisingData(primary.advertisingData),
            .leSetScanResponseData(primary.scanResponseData), .leSetAdvertisingEnable(true),
        ]))
        #expect(h.events.isEmpty, "both sets stay on while they take turns")
        #expect(h.host.core.isOnAir("beacon") && h.host.isAdvertising && h.violations.isEmpty)
        // Before the turn is up, nothing.
        h.clearLogs()
        h.advance(to: .milliseconds(5999))
        #expect(h.sent.isEmpty)
    }

    /// A connection ends legacy advertising: the set on the air (the primary) leaves the
    /// rotation; with max_connections reached the beacon goes on alone, without turns.
    @Test func aLegacyConnectionLeavesTheOtherSetsAdvertising() {
        var config = HostConfiguration.test(maxConnections: 1)
        config.requestDataLengthAndPHY = false
        var h = HostHarness(configuration: config, otherSets: [Self.beacon])
        h.bringUp()
        h.connect(0x40)
        let beacon = Self.beacon.payloads
        #expect(h.sentCommands == Self.commands([
            .leSetAdvertisingParameters(beacon.parameters), .leSetAdvertisingData(beacon.advertisingData), .leSetScanResponseData([]),
            .leSetAdvertisingEnable(true),
        ]))
        #expect(h.events.contains(.advertisingChanged(false)) && Self.sets(h) == [.setChanged("beacon", true)])
        #expect(h.host.nextDeadline == nil, "one set: no turns")
        // The disconnection brings the primary back: turns again.
        h.clearLogs()
        h.disconnected(0x40)
        #expect(h.host.nextDeadline == h.now + .seconds(2))
        h.advance(to: h.now + .seconds(2))
        #expect(h.sentCommands.last == H4Packet(command: .leSetAdvertisingEnable(true)) && h.host.isAdvertising)
        #expect(h.sentCommands.contains(H4Packet(command: .leSetAdvertisingParameters(h.payloads.parameters))))
    }

    @Test func anExtendedSetIsRefusedOnALegacyController() {
        var h = HostHarness(otherSets: [Self.long])
        h.start()
        #expect(h.warnings == [#"advertising refused: set "long" needs extended advertising, which the controller lacks"#])
        #expect(h.host.isAdvertising && !h.host.core.isOnAir("long") && h.fatals.isEmpty)
        #expect(h.host.nextDeadline == nil, "one set left: no turns")
        #expect(h.sentCommands.suffix(4) == Self.commands(HostBringUpTests.tail(h.payloads)))
    }

    /// One set on a legacy controller: no turns, the commands as before sets existed.
    @Test func oneSetOnALegacyControllerHasNoTurns() {
        var h = HostHarness()
        h.start()
        #expect(h.host.nextDeadline == nil && h.host.host.advertisingSetsTakeTurns == true)
        #expect(h.sentCommands.suffix(4) == Self.commands(HostBringUpTests.tail(h.payloads)))
    }
}
