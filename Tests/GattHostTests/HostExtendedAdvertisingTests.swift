import Testing
@testable import GattCore
@testable import GattHost
import GattTestFixtures

/// The H4 host on a Bluetooth 5 controller: extended advertising chosen once per reset when
/// the controller has the feature and the commands, legacy otherwise, never mixed (Core Spec
/// Vol 4 Part E §3.1.1); connections through LE Enhanced Connection Complete and LE
/// Advertising Set Terminated.
@Suite struct HostExtendedAdvertisingTests {
    static let enable = HCICommand.leSetExtendedAdvertisingEnable(enable: true, sets: [AdvertisingSetEnable(handle: 0)])
    static let disable = HCICommand.leSetExtendedAdvertisingEnable(enable: false, sets: [AdvertisingSetEnable(handle: 0)])

    static func install(_ p: AdvertisingPayloads, address: BluetoothAddress? = nil) -> [HCICommand] {
        [.leSetExtendedAdvertisingParameters(ExtendedAdvertisingParameters(handle: 0, legacy: p.parameters))]
            + (address.map { [.leSetAdvertisingSetRandomAddress(handle: 0, address: $0)] } ?? [])
            + HCICommand.extendedAdvertisingData(handle: 0, p.advertisingData) + HCICommand.extendedScanResponseData(handle: 0, p.scanResponseData)
    }

    /// The set's random address commands sent.
    static func setAddresses(_ h: HostHarness) -> [BluetoothAddress] {
        h.sent.compactMap { p in
            guard let (op, params) = FakeController.parse(p), op == .leSetAdvertisingSetRandomAddress, params.count == 7 else { return nil }
            return BluetoothAddress(littleEndian: params[1..<7])
        }
    }

    // MARK: The choice

    @Test func bringUpChoosesExtendedAdvertisingWithTheFeatureAndTheCommands() {
        var h = HostHarness(controller: .extended)
        h.start()
        let expected: [HCICommand] =
            HostBringUpTests.expectedPrefix + [
                .leReadBufferSizeV2, .setEventMask(.lePeripheral), .leSetEventMask(.lePeripheralExtendedAdvertising),
                .leReadNumberOfSupportedAdvertisingSets, .leReadMaximumAdvertisingDataLength,
                .leWriteSuggestedDefaultDataLength(txOctets: 251, txTime: 2120), .leSetDefaultPHY(allPHYs: 0, txPHYs: 0b11, rxPHYs: 0b11),
            ] + Self.install(h.payloads) + [Self.enable]
        #expect(h.sent == expected.map { H4Packet(command: $0) })
        #expect(h.violations.isEmpty)
        // The LE event mask adds LE Enhanced Connection Complete (bit 9) and LE Advertising Set Terminated (bit 17).
        #expect(h.sent[8].encoded == [0x01, 0x01, 0x20, 0x08, 0x7D, 0x0A, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00])
        // ADV_IND as legacy PDUs of set 0 (properties 0x0013), then its data, then enable set 0.
        #expect(h.sent[13].encoded.prefix(7) == [0x01, 0x36, 0x20, 0x19, 0x00, 0x13, 0x00])
        #expect(h.sent.last?.encoded == [0x01, 0x39, 0x20, 0x06, 0x01, 0x01, 0x00, 0x00, 0x00, 0x00])

        #expect(h.host.controller.advertisingCommands == .extended(sets: 16, maximumDataLength: 1650))
        #expect(h.host.controller.summary.hasSuffix("LE ACL 27 bytes x 2; extended advertising (16 sets, 1650 bytes of data per set)"))
        var info = ControllerInfo()
        info.address = h.controller.address
        info.version = h.controller.version
        info.leFeatures = h.controller.leFeatures
        info.aclDataPacketLength = 27
        info.totalACLDataPackets = 2
        info.advertisingCommands = .extended(sets: 16, maximumDataLength: 1650)
        #expect(h.events == [.controllerReady(info), .advertisingChanged(true)])
        #expect(h.host.isAdvertising)
    }

    enum Lacking: CaseIterable, Sendable {
        case theCommands, leRemoveAdvertisingSet, theFeature
    }

    @Test(arguments: Lacking.allCases)
    func anythingLessMeansLegacy(lacking: Lacking) {
        var c = FakeController.extended
        switch lacking {
        case .theCommands: c.supportedCommands.removeAll { FakeController.extendedAdvertisingCommands.contains($0) }
        case .leRemoveAdvertisingSet: c.supportedCommands.removeAll { $0 == .leRemoveAdvertisingSet }
        case .theFeature: c.leFeatures.remove(.extendedAdvertising)
        }
        var h = HostHarness(controller: c)
        h.start()
        let expected: [HCICommand] =
            HostBringUpTests.expectedPrefix + [
                .leReadBufferSizeV2, .setEventMask(.lePeripheral), .leSetEventMask(.lePeripheral),
                .leWriteSuggestedDefaultDataLength(txOctets: 251, txTime: 2120), .leSetDefaultPHY(allPHYs: 0, txPHYs: 0b11, rxPHYs: 0b11),
            ] + HostBringUpTests.tail(h.payloads)
        #expect(h.sent == expected.map { H4Packet(command: $0) }, "lacking \(lacking)")
        #expect(h.host.controller.advertisingCommands == .legacy)
        #expect(h.host.controller.summary.hasSuffix("; legacy advertising"))
        #expect(h.host.isAdvertising)
    }

    @Test func limitsThatCannotBeReadAreLoggedAndTheMinimumAssumed() {
        var c = FakeController.extended
        c.status[.leReadNumberOfSupportedAdvertisingSets] = .unknownCommand
        var h = HostHarness(controller: c)
        h.start()
        #expect(h.warnings == ["LE Read Number of Supported Advertising Sets failed: Unknown HCI Command (0x01)"])
        #expect(h.host.controller.advertisingCommands == .extended(sets: 1, maximumDataLength: 1650))
        #expect(h.host.isReady && h.host.isAdvertising && h.fatals.isEmpty)
    }

    /// Never a legacy advertising command after an extended one, over a whole session: bring-up,
    /// connections (enhanced and legacy completes), advertising off and on, private address
    /// renewals, disconnections, a second bring-up.
    @Test func neverMixedOverAWholeSession() {
        var config = HostPrivacyTests.rpaConfiguration(timeout: .seconds(30))
        config.advertising.maxConnections = 2
        for controller in [FakeController.extended, FakeController()] {
            var h = HostHarness(configuration: config, controller: controller)
            h.bringUp()
            h.connectToSet(0x40)
            h.advance(to: .seconds(31))  // renewal while advertising
            h.connect(0x41, peer: BluetoothAddress("11:22:33:44:55:77")!)  // a controller ignoring the mask
            h.advance(to: .seconds(62))  // renewal while full: not advertising
            h.disconnected(0x40)
            h.take(h.host.setAdvertising(false, now: h.now))
            h.take(h.host.setAdvertising(true, now: h.now))
            h.disconnected(0x41)
            h.start()  // Reset and bring-up again
            h.connectToSet(0x42)
            #expect(h.host.isAdvertising && h.fatals.isEmpty && h.violations.isEmpty)
            let kinds = Set(h.sentOpcodes.compactMap(AdvertisingCommandKind.init))
            #expect(kinds == [controller.leFeatures.contains(.extendedAdvertising) ? .extended : .legacy])
            #expect(AdvertisingCommandKind.violations(h.sentOpcodes).isEmpty)
        }
        // The check itself: a mix is caught, a Reset in between is not a mix.
        #expect(AdvertisingCommandKind.violations([.leSetExtendedAdvertisingParameters, .leSetRandomAddress, .leSetAdvertisingEnable]) == [
            "command 2: LE Set Advertising Enable after extended advertising commands",
        ])
        #expect(AdvertisingCommandKind.violations([.leSetAdvertisingData, .leReadNumberOfSupportedAdvertisingSets]).count == 1)
        #expect(AdvertisingCommandKind.violations([.leSetAdvertisingEnable, .reset, .leSetExtendedAdvertisingEnable]).isEmpty)
    }

    // MARK: Connections

    @Test func aConnectionEndsTheSetAndAdvertisingResumesWithAnEnableAlone() {
        var h = HostHarness(configuration: .test(maxConnections: 2), controller: .extended)
        h.bringUp()
        h.connectToSet(0x40)
        #expect(h.host.connections[0x40] != nil)
        #expect(h.sent == [H4Packet(command: .leSetDataLength(handle: 0x40, txOctets: 251, txTime: 2120)),
                           H4Packet(command: .leSetPHY(handle: 0x40, allPHYs: 0, txPHYs: 0b10, rxPHYs: 0b10, phyOptions: 0)),
                           H4Packet(command: Self.enable)])
        #expect(h.events.filter { if case .advertisingChanged = $0 { true } else { false } } == [.advertisingChanged(false), .advertisingChanged(true)])
        #expect(h.host.isAdvertising && h.warnings.isEmpty)
    }

    @Test func atTheConnectionLimitTheSetStaysOffUntilADisconnection() {
        var h = HostHarness(configuration: .test(maxConnections: 1), controller: .extended)
        h.bringUp()
        h.connectToSet(0x40)
        #expect(!h.host.isAdvertising && !h.sentOpcodes.contains(.leSetExtendedAdvertisingEnable))
        h.clearLogs()
        h.disconnected(0x40)
        #expect(h.sent == [H4Packet(command: Self.enable)] && h.host.isAdvertising)
    }

    @Test func aLegacyConnectionCompleteEndsTheSetToo() {
        // A controller that sends LE Connection Complete despite the mask, and Terminated later.
        var h = HostHarness(configuration: .test(maxConnections: 1), controller: .extended)
        h.bringUp()
        h.connect(0x40)
        #expect(h.events.contains(.advertisingChanged(false)) && !h.host.isAdvertising)
        h.clearLogs()
        h.deliver(.leMeta(.advertisingSetTerminated(status: .success, advertisingHandle: 0, connectionHandle: 0x40, completedExtendedAdvertisingEvents: 3)))
        #expect(h.events.isEmpty && h.sent.isEmpty, "the confirmation changes nothing")
    }

    @Test func aConnectionDuringTheEnablingBatch() {
        var h = HostHarness(configuration: .test(maxConnections: 2), controller: .extended)
        h.bringUp()
        h.take(h.host.setAdvertising(false, now: h.now))
        h.autoAnswer = false
        h.clearLogs()
        h.take(h.host.setAdvertising(true, now: h.now))
        #expect(h.sentOpcodes == [.leSetExtendedAdvertisingEnable])
        // The central connects before the enable is answered: its "on" is stale.
        h.connectToSet(0x40)
        while !h.unanswered.isEmpty { h.answerNext() }
        // Enable (stale), the disable that makes sure, the tuning of the link, the enable the core asks again.
        #expect(h.sent.filter { $0.type == .command } == [Self.enable, .leSetDataLength(handle: 0x40, txOctets: 251, txTime: 2120),
                                                        .leSetPHY(handle: 0x40, allPHYs: 0, txPHYs: 0b10, rxPHYs: 0b10, phyOptions: 0),
                                                        Self.disable, Self.enable].map { H4Packet(command: $0) })
        #expect(h.host.isAdvertising && h.violations.isEmpty && h.fatals.isEmpty)
    }

    @Test func pairingUsesTheAdvertisedAddressUnlessTheControllerMadeAPrivateOne() {
        // LE Enhanced Connection Complete's Local_Resolvable_Private_Address is 00:00:00:00:00:00
        // unless the controller generated one (§7.7.65.10); SMP's f5/f6 need the real address.
        var config = HostConfiguration.test()
        config.security = SecurityManagerConfiguration()
        var h = HostHarness(configuration: config, controller: .extended)
        h.bringUp()
        h.connectToSet(0x40)
        #expect(h.host.host.security.responders[0x40]?.local == SMPDeviceAddress(h.host.advertisedAddress, type: .public))
        let rpa = BluetoothAddress("4A:00:00:00:00:01")!
        var c = HostHarness.connectionComplete(handle: 0x41, peer: BluetoothAddress("11:22:33:44:55:77")!)
        c.localResolvablePrivateAddress = rpa
        h.deliver(.leMeta(.enhancedConnectionComplete(c)))
        #expect(h.host.host.security.responders[0x41]?.local.address == rpa)
    }

    // MARK: Addresses

    @Test func aRandomStaticAddressIsTheSetsOwnNotTheControllers() {
        let random = BluetoothAddress("C5:00:00:00:00:01")!
        var h = HostHarness(configuration: .test(random: random), controller: .extended)
        h.start()
        #expect(!h.sentOpcodes.contains(.leSetRandomAddress))
        #expect(Self.setAddresses(h) == [random])
        #expect(h.sentOpcodes.suffix(5) == [.leSetExtendedAdvertisingParameters, .leSetAdvertisingSetRandomAddress, .leSetExtendedAdvertisingData,
                                           .leSetExtendedScanResponseData, .leSetExtendedAdvertisingEnable])
        #expect(h.host.advertisedAddress == random)
    }

    @Test func privateAddressesAreRenewedOnTheSet() {
        var config = HostPrivacyTests.rpaConfiguration()
        config.advertising.maxConnections = 1
        var h = HostHarness(configuration: config, controller: .extended)
        h.start()
        let first = Self.setAddresses(h)
        #expect(first.count == 1 && !h.sentOpcodes.contains(.leSetRandomAddress))
        #expect(first.allSatisfy { ResolvablePrivateAddress.resolves($0, irk: HostPrivacyTests.irk) })
        #expect(h.host.advertisedAddress == first.first)
        h.clearLogs()
        // Due while advertising: the set pauses around its new address.
        h.advance(to: .seconds(60))
        let second = Self.setAddresses(h)
        #expect(h.sentOpcodes == [.leSetExtendedAdvertisingEnable, .leSetAdvertisingSetRandomAddress, .leSetExtendedAdvertisingEnable])
        #expect(second.count == 1 && second != first && ResolvablePrivateAddress.resolves(second[0], irk: HostPrivacyTests.irk))
        #expect(h.host.isAdvertising && !h.events.contains(.advertisingChanged(false)))
        // Due while connected (not advertising): nothing to send; the next enable carries it.
        h.connectToSet(0x40)
        h.clearLogs()
        h.advance(to: .seconds(120))
        #expect(h.sent.isEmpty)
        let third = h.host.advertisedAddress
        h.disconnected(0x40)
        #expect(h.sent == [H4Packet(command: .leSetAdvertisingSetRandomAddress(handle: 0, address: third)), H4Packet(command: Self.enable)])
        #expect(third != second[0] && h.host.isAdvertising)
    }

    // MARK: Failures

    @Test func aControllerThatWillNotConfigureTheSetIsFatal() {
        for (opcode, status) in [(HCIOpcode.leSetExtendedAdvertisingParameters, HCIStatus.commandDisallowed), (.leSetExtendedAdvertisingData, .memoryCapacityExceeded)] {
            var c = FakeController.extended
            c.status[opcode] = status
            var h = HostHarness(controller: c)
            h.start()
            #expect(h.fatals == ["\(opcode) failed: \(status)"])
            #expect(!h.sentOpcodes.contains(.leSetExtendedAdvertisingEnable), "the rest of the batch is dropped")
        }
    }

    @Test func anEnableRefusedWhileConnectedWaitsForADisconnection() {
        var h = HostHarness(configuration: .test(maxConnections: 2), controller: .extended)
        h.bringUp()
        h.controller.status[.leSetExtendedAdvertisingEnable] = .commandDisallowed
        h.connectToSet(0x40)
        #expect(h.fatals.isEmpty && !h.host.isAdvertising)
        #expect(h.warnings == ["the controller refused to advertise while connected (LE Set Extended Advertising Enable: Command Disallowed (0x0C)); advertising resumes after a disconnection"])
        h.controller.status = [:]
        h.clearLogs()
        h.disconnected(0x40)
        #expect(h.sent == [H4Packet(command: Self.enable)] && h.host.isAdvertising)
    }

    @Test func removingASetTheControllerDoesNotHaveIsHarmless() {
        var h = HostHarness(controller: .extended)
        h.bringUp()
        h.take(h.host.setAdvertising(false, now: h.now))
        // The set is gone (e.g. removed behind our back): Remove answers Unknown Advertising Identifier.
        h.controller.status[.leRemoveAdvertisingSet] = .unknownAdvertisingIdentifier
        h.host.host.advertising = .extended({
            var d = ExtendedAdvertisingDriver()
            _ = d.setDesired(.init(payloads: PeripheralFixture.payloads, randomAddress: nil))
            _ = d.batchFinished(failure: nil, connected: false)
            _ = d.setDesired(nil)
            _ = d.batchFinished(failure: nil, connected: false)
            var sets = ExtendedAdvertisingSets(limit: 16, maximumDataLength: 1650)
            sets.driver = d
            return sets
        }())
        h.clearLogs()
        h.take(h.host.setAdvertising(true, now: h.now))
        #expect(h.sentOpcodes == [.leRemoveAdvertisingSet] + Self.install(h.payloads).map(\.opcode) + [.leSetExtendedAdvertisingEnable])
        #expect(h.host.isAdvertising && h.fatals.isEmpty && h.warnings.isEmpty)
    }
}
