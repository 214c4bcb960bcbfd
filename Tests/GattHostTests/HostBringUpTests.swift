import Testing
@testable import GattCore
@testable import GattHost
import GattTestFixtures

/// Controller bring-up and HCI command flow control (Vol 4 Part E §4.4).
@Suite struct HostBringUpTests {
    static let expectedPrefix: [HCICommand] = [
        .reset, .readLocalVersionInformation, .readBDADDR, .readLocalSupportedCommands, .readLocalSupportedFeatures,
        .leReadLocalSupportedFeatures,
    ]

    static func tail(_ p: AdvertisingPayloads) -> [HCICommand] {
        [.leSetAdvertisingParameters(p.parameters), .leSetAdvertisingData(p.advertisingData), .leSetScanResponseData(p.scanResponseData),
         .leSetAdvertisingEnable(true)]
    }

    @Test func fullBringUpWithEveryFeature() {
        var h = HostHarness()
        h.start()
        let expected: [HCICommand] =
            Self.expectedPrefix + [
                .leReadBufferSizeV2, .setEventMask(.lePeripheral), .leSetEventMask(.lePeripheral),
                .leWriteSuggestedDefaultDataLength(txOctets: 251, txTime: 2120),
                .leSetDefaultPHY(allPHYs: 0, txPHYs: 0b11, rxPHYs: 0b11),
            ] + Self.tail(h.payloads)
        #expect(h.sent == expected.map { H4Packet(command: $0) })
        #expect(h.violations.isEmpty)
        // A few packets spelled out, independent of the command codec.
        #expect(h.sent.first?.encoded == [0x01, 0x03, 0x0C, 0x00])
        #expect(h.sent.last?.encoded == [0x01, 0x0A, 0x20, 0x01, 0x01])
        #expect(h.sent[7].encoded == [0x01, 0x01, 0x0C, 0x08, 0x90, 0x80, 0x00, 0x02, 0x00, 0x80, 0x00, 0x20])
        #expect(h.sent[9].encoded == [0x01, 0x24, 0x20, 0x04, 0xFB, 0x00, 0x48, 0x08])
        #expect(h.sent[10].encoded == [0x01, 0x31, 0x20, 0x03, 0x00, 0x03, 0x03])
        // The advertising data command carries the builder's bytes, zero-padded to 31.
        let adv = h.sent[12].body
        #expect(Array(adv[0..<4]) == [0x08, 0x20, 0x20, UInt8(h.payloads.advertisingData.count)])
        #expect(Array(adv[4..<(4 + h.payloads.advertisingData.count)]) == h.payloads.advertisingData)
        #expect(adv.count == 3 + 32)

        var info = ControllerInfo()
        info.address = h.controller.address
        info.version = h.controller.version
        info.leFeatures = h.controller.leFeatures
        info.aclDataPacketLength = 27
        info.totalACLDataPackets = 2
        #expect(h.events == [.controllerReady(info), .advertisingChanged(true)])
        #expect(h.host.isReady && h.host.isAdvertising)
        #expect(h.host.controller == info)
        #expect(h.host.nextDeadline == nil)
    }

    @Test func minimalControllerUsesV1AndSkipsOptionalCommands() {
        var c = FakeController()
        c.supportedCommands.removeAll { $0 == .leReadBufferSizeV2 || $0 == .leWriteSuggestedDefaultDataLength || $0 == .leSetDefaultPHY }
        c.leFeatures = [.dataPacketLengthExtension, .le2MPHY]  // features without the commands: skip them
        var h = HostHarness(controller: c)
        h.start()
        let expected = Self.expectedPrefix + [.leReadBufferSize, .setEventMask(.lePeripheral), .leSetEventMask(.lePeripheral)] + Self.tail(h.payloads)
        #expect(h.sent == expected.map { H4Packet(command: $0) })

        // Commands supported but features absent: skipped too.
        var c2 = FakeController()
        c2.leFeatures = [.encryption]
        var h2 = HostHarness(controller: c2)
        h2.start()
        let expected2 = Self.expectedPrefix + [.leReadBufferSizeV2, .setEventMask(.lePeripheral), .leSetEventMask(.lePeripheral)] + Self.tail(h2.payloads)
        #expect(h2.sent == expected2.map { H4Packet(command: $0) })
    }

    @Test func sharedBuffersReadWithReadBufferSize() {
        var c = FakeController()
        c.leBuffers = (0, 0)
        c.aclBuffers = (251, 3)
        c.leFeatures = []
        var h = HostHarness(controller: c)
        h.start()
        let expected = Self.expectedPrefix + [.leReadBufferSizeV2, .readBufferSize, .setEventMask(.lePeripheral), .leSetEventMask(.lePeripheral)] + Self.tail(h.payloads)
        #expect(h.sent == expected.map { H4Packet(command: $0) })
        #expect(h.host.controller.aclDataPacketLength == 251)
        #expect(h.host.controller.totalACLDataPackets == 3)
    }

    @Test func noACLBuffersAtAllIsFatal() {
        var c = FakeController()
        c.leBuffers = (0, 0)
        c.aclBuffers = (0, 0)
        var h = HostHarness(controller: c)
        h.start()
        #expect(h.fatals == ["the controller reports no ACL data buffers (Read Buffer Size: 0 × 0 bytes)"])
        #expect(h.sentOpcodes.last == .readBufferSize)
    }

    @Test func randomOwnAddressIsSetBeforeAdvertisingParameters() {
        let random = BluetoothAddress("C5:00:00:00:00:01")!
        var c = FakeController()
        c.leFeatures = []
        var h = HostHarness(configuration: .test(random: random), controller: c)
        h.start()
        let expected = Self.expectedPrefix + [.leReadBufferSizeV2, .setEventMask(.lePeripheral), .leSetEventMask(.lePeripheral), .leSetRandomAddress(random)] + Self.tail(h.payloads)
        #expect(h.sent == expected.map { H4Packet(command: $0) })
        #expect(h.sent[9].encoded == [0x01, 0x05, 0x20, 0x06, 0x01, 0x00, 0x00, 0x00, 0x00, 0xC5])
        #expect(h.payloads.parameters.ownAddressType == .random)
    }

    @Test func randomOwnAddressWithoutOneConfiguredIsDerivedFromTheControllerAddress() {
        var config = HostConfiguration.test(random: BluetoothAddress("C5:00:00:00:00:01")!)
        config.randomAddress = nil
        var c = FakeController()
        c.leFeatures = []
        var h = HostHarness(configuration: config, controller: c)
        h.start()
        // C0:FF:EE:00:00:01 reversed and XORed with A5, top two bits set: stable across restarts.
        let derived = BluetoothAddress("E4:A5:A5:4B:5A:65")!
        #expect(h.sent.contains(H4Packet(command: .leSetRandomAddress(derived))))
        #expect(h.host.advertisedAddress == derived)
        var again = HostHarness(configuration: config, controller: c)
        again.start()
        #expect(again.host.randomAddress == derived)
    }

    @Test func readBufferSizeV2FailureFallsBackToV1() {
        var c = FakeController()
        c.status[.leReadBufferSizeV2] = .unknownCommand
        c.leFeatures = []
        var h = HostHarness(controller: c)
        h.start()
        #expect(h.sentOpcodes[6...8] == [.leReadBufferSizeV2, .leReadBufferSize, .setEventMask])
        #expect(h.host.isReady)
        #expect(h.fatals.isEmpty)
    }

    @Test func controllerReadyIsReportedOnce() {
        var h = HostHarness()
        h.start()
        h.take(h.host.setAdvertising(false, now: h.now))
        h.take(h.host.setAdvertising(true, now: h.now))
        let ready = h.events.filter { if case .controllerReady = $0 { true } else { false } }
        #expect(ready.count == 1)
    }

    // MARK: Command flow control

    @Test func oneOutstandingCommandAtATime() {
        var h = HostHarness()
        h.autoAnswer = false
        h.start()
        #expect(h.sentOpcodes == [.reset])
        // Events that answer nothing do not release the next command.
        h.deliver(.numberOfCompletedPackets([]))
        h.deliver(.commandComplete(HCICommandComplete(numHCICommandPackets: 1, opcode: .readBDADDR, returnParameters: [0])))
        #expect(h.sentOpcodes == [.reset])
        h.answerNext()
        #expect(h.sentOpcodes == [.reset, .readLocalVersionInformation])
        h.answerNext()
        #expect(h.sentOpcodes == [.reset, .readLocalVersionInformation, .readBDADDR])
        #expect(h.violations.isEmpty)
    }

    @Test func zeroCommandCreditsBlockUntilACreditArrives() {
        var h = HostHarness()
        h.autoAnswer = false
        h.start()
        h.answerNext(numHCICommandPackets: 0)  // Reset complete, but no room for another command
        #expect(h.sentOpcodes == [.reset])
        // A NOP Command Status (opcode 0) grants one credit.
        h.deliver(.commandStatus(status: .success, numHCICommandPackets: 1, opcode: HCIOpcode(rawValue: 0)))
        #expect(h.sentOpcodes == [.reset, .readLocalVersionInformation])
        h.answerNext(numHCICommandPackets: 0)
        #expect(h.sentOpcodes.count == 2)
        // …or a NOP Command Complete.
        h.deliver(.commandComplete(HCICommandComplete(numHCICommandPackets: 1, opcode: HCIOpcode(rawValue: 0), returnParameters: [])))
        #expect(h.sentOpcodes == [.reset, .readLocalVersionInformation, .readBDADDR])
        #expect(h.violations.isEmpty)
    }

    @Test func commandTimeoutIsFatalAndNamesTheCommand() {
        var h = HostHarness()
        h.autoAnswer = false
        h.start()
        for _ in 0..<11 { h.answerNext() }
        #expect(h.sentOpcodes.last == .leSetAdvertisingParameters)
        #expect(h.host.nextDeadline == .seconds(5))
        h.advance(to: .milliseconds(4999))
        #expect(h.fatals.isEmpty)
        h.advance(to: .seconds(5))
        #expect(h.fatals == ["the controller did not answer LE Set Advertising Parameters within 5.0 seconds"])
        #expect(h.fatals.first?.contains("LE Set Advertising Parameters") == true)
    }

    @Test(arguments: [
        (HCIOpcode.reset, "Reset"), (.readLocalVersionInformation, "Read Local Version Information"), (.readBDADDR, "Read BD_ADDR"),
        (.readLocalSupportedCommands, "Read Local Supported Commands"), (.readLocalSupportedFeatures, "Read Local Supported Features"),
        (.leReadLocalSupportedFeatures, "LE Read Local Supported Features"), (.leReadBufferSize, "LE Read Buffer Size"),
        (.setEventMask, "Set Event Mask"), (.leSetEventMask, "LE Set Event Mask"), (.leSetRandomAddress, "LE Set Random Address"),
        (.leSetAdvertisingParameters, "LE Set Advertising Parameters"), (.leSetAdvertisingData, "LE Set Advertising Data"),
        (.leSetScanResponseData, "LE Set Scan Response Data"), (.leSetAdvertisingEnable, "LE Set Advertising Enable"),
    ])
    func essentialCommandFailureIsFatal(opcode: HCIOpcode, name: String) {
        var c = FakeController()
        c.supportedCommands.removeAll { $0 == .leReadBufferSizeV2 }
        c.status[opcode] = .commandDisallowed
        var h = HostHarness(configuration: .test(random: BluetoothAddress("C5:00:00:00:00:01")!), controller: c)
        h.start()
        #expect(h.fatals == ["\(name) failed: Command Disallowed (0x0C)"])
        #expect(h.sentOpcodes.last == opcode)
        let advertising = h.host.isAdvertising
        #expect(!advertising)
    }

    @Test(arguments: [HCIOpcode.leWriteSuggestedDefaultDataLength, .leSetDefaultPHY])
    func optionalCommandFailureIsAWarning(opcode: HCIOpcode) {
        var c = FakeController()
        c.status[opcode] = .unsupportedFeatureOrParameterValue
        var h = HostHarness(controller: c)
        h.start()
        #expect(h.fatals.isEmpty)
        #expect(h.warnings == ["\(opcode) failed: Unsupported Feature or Parameter Value (0x11)"])
        #expect(h.host.isReady && h.host.isAdvertising)
    }

    @Test func malformedReturnParametersAreFatal() {
        var h = HostHarness()
        h.autoAnswer = false
        h.start()
        h.answerNext()
        // Read Local Version Information with a truncated answer.
        h.unanswered = []
        h.deliver(.commandComplete(HCICommandComplete(numHCICommandPackets: 1, opcode: .readLocalVersionInformation, returnParameters: [0, 1])))
        #expect(h.fatals.count == 1)
        #expect(h.fatals.first?.hasPrefix("Read Local Version Information returned malformed parameters") == true)
    }

    @Test func hardwareErrorIsFatal() {
        var h = HostHarness()
        h.bringUp()
        h.deliver(.hardwareError(code: 0x2A))
        #expect(h.fatals == ["the controller reported hardware error 0x2a"])
    }
}
