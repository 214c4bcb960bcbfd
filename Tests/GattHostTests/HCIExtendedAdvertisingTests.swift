import Testing
@testable import GattCore
@testable import GattHost
import GattTestFixtures

/// The extended advertising commands, return parameters and events (Core Spec Vol 4 Part E
/// §7.8.52–§7.8.60, §7.7.65.18), byte for byte.
@Suite struct HCIExtendedAdvertisingTests {
    static let random = BluetoothAddress("C5:00:00:00:00:01")!

    @Test func opcodesNamesAndSupportedCommandsBits() {
        // Vol 4 Part E §6.27: octet 36 bits 1–7, octet 37 bits 0–1.
        let table: [(HCIOpcode, UInt16, String, Int, Int)] = [
            (.leSetAdvertisingSetRandomAddress, 0x2035, "LE Set Advertising Set Random Address", 36, 1),
            (.leSetExtendedAdvertisingParameters, 0x2036, "LE Set Extended Advertising Parameters", 36, 2),
            (.leSetExtendedAdvertisingData, 0x2037, "LE Set Extended Advertising Data", 36, 3),
            (.leSetExtendedScanResponseData, 0x2038, "LE Set Extended Scan Response Data", 36, 4),
            (.leSetExtendedAdvertisingEnable, 0x2039, "LE Set Extended Advertising Enable", 36, 5),
            (.leReadMaximumAdvertisingDataLength, 0x203A, "LE Read Maximum Advertising Data Length", 36, 6),
            (.leReadNumberOfSupportedAdvertisingSets, 0x203B, "LE Read Number of Supported Advertising Sets", 36, 7),
            (.leRemoveAdvertisingSet, 0x203C, "LE Remove Advertising Set", 37, 0),
            (.leClearAdvertisingSets, 0x203D, "LE Clear Advertising Sets", 37, 1),
        ]
        for (opcode, raw, name, octet, bit) in table {
            #expect(opcode.rawValue == raw)
            #expect(opcode.description == name)
            #expect(opcode.supportedCommandsBit?.octet == octet && opcode.supportedCommandsBit?.bit == bit, "\(name)")
        }
        // A controller listing exactly these (octet 36 = 0xFE, octet 37 = 0x03).
        var octets = [UInt8](repeating: 0, count: 64)
        octets[36] = 0xFE
        octets[37] = 0x03
        let mask = HCISupportedCommands(octets: octets)
        #expect(table.allSatisfy { mask.isSupported($0.0) })
        #expect(!mask.isSupported(.leSetAdvertisingParameters) && !mask.isSupported(.leReadBufferSizeV2))
        octets[36] = 0x7E
        #expect(!HCISupportedCommands(octets: octets).isSupported(.leReadNumberOfSupportedAdvertisingSets))
    }

    @Test func legacyAdvertisingTypesAsEventProperties() {
        // Table 7.2: the legacy PDUs as Advertising_Event_Properties.
        #expect(AdvertisingEventProperties(legacy: .connectableUndirected).rawValue == 0x0013)
        #expect(AdvertisingEventProperties(legacy: .connectableDirectedLowDuty).rawValue == 0x0015)
        #expect(AdvertisingEventProperties(legacy: .connectableDirectedHighDuty).rawValue == 0x001D)
        #expect(AdvertisingEventProperties(legacy: .scannableUndirected).rawValue == 0x0012)
        #expect(AdvertisingEventProperties(legacy: .nonConnectableUndirected).rawValue == 0x0010)
        #expect(AdvertisingEventProperties(legacy: .connectableUndirected).carriesAdvertisingData)
        #expect(!AdvertisingEventProperties(legacy: .connectableDirectedLowDuty).carriesAdvertisingData)
        #expect(AdvertisingEventProperties.connectable.carriesAdvertisingData, "extended, not scannable")
        #expect(!AdvertisingEventProperties.scannable.carriesAdvertisingData, "extended scannable: scan response only")
    }

    @Test func setParametersAndRandomAddress() {
        let adv = ExtendedAdvertisingParameters(
            handle: 0, legacy: AdvertisingParameters(intervalMin: 0xA0, intervalMax: 0xF0, advertisingType: .connectableUndirected))
        // Handle, properties 0x0013, 24-bit intervals, channels 37–39, public own address, no peer,
        // no filter, no TX power preference (0x7F), LE 1M, max skip 0, LE 1M, SID 0, no notifications.
        #expect(HCICommand.leSetExtendedAdvertisingParameters(adv).encoded() == h("36 20 19 00 13 00 A0 00 00 F0 00 00 07 00 00 00 00 00 00 00 00 00 7F 01 00 01 00 00"))
        let beacon = ExtendedAdvertisingParameters(
            handle: 3, legacy: AdvertisingParameters(intervalMin: 0x20, intervalMax: 0x4000, advertisingType: .nonConnectableUndirected, ownAddressType: .random))
        #expect(beacon.encoded == h("03 10 00 20 00 00 00 40 00 07 01 00 00 00 00 00 00 00 00 7F 01 00 01 00 00"))
        // Every field in place: a 24-bit interval above 16 bits, Coded primary, 2M secondary.
        let ext = ExtendedAdvertisingParameters(
            advertisingHandle: 1, eventProperties: [.connectable], primaryIntervalMin: 0x012345, primaryIntervalMax: 0xFFFFFF,
            primaryChannelMap: 0x05, ownAddressType: .random, peerAddressType: .random, peerAddress: Self.random, filterPolicy: 0x03,
            txPower: -8, primaryPHY: .leCoded, secondaryMaxSkip: 2, secondaryPHY: .le2M, sid: 0x0F, scanRequestNotification: true)
        #expect(ext.encoded == h("01 01 00 45 23 01 FF FF FF 05 01 01 01 00 00 00 00 C5 03 F8 03 02 02 0F 01"))
        #expect(HCICommand.leSetAdvertisingSetRandomAddress(handle: 0, address: Self.random).encoded() == h("35 20 07 00 01 00 00 00 00 C5"))
    }

    @Test func dataThatFitsOneCommandIsComplete() {
        let data: [UInt8] = [0x02, 0x01, 0x06, 0x03, 0x03, 0x0D, 0x18]
        // Handle, Operation 0x03 (complete), Fragment_Preference 0x01 (minimize), length, data.
        #expect(HCICommand.extendedAdvertisingData(handle: 0, data).map { $0.encoded() } == [h("37 20 0B 00 03 01 07 02 01 06 03 03 0D 18")])
        #expect(HCICommand.extendedScanResponseData(handle: 2, data).map { $0.encoded() } == [h("38 20 0B 02 03 01 07 02 01 06 03 03 0D 18")])
        // Empty data: one Complete command of length 0 (clears the set's data).
        #expect(HCICommand.extendedAdvertisingData(handle: 0, []).map { $0.encoded() } == [h("37 20 04 00 03 01 00")])
        // 251 bytes: the most one command carries (255 parameter octets).
        let full = [UInt8](repeating: 0xAB, count: 251)
        let one = HCICommand.extendedAdvertisingData(handle: 0, full)
        #expect(one == [.leSetExtendedAdvertisingData(handle: 0, operation: .complete, fragmentPreference: .minimize, data: full)])
        #expect(one.first?.encoded().prefix(7) == h("37 20 FF 00 03 01 FB")[...])
        #expect(one.first?.encoded().count == 3 + 255)
    }

    @Test func longerDataIsFragmentedWithTheOperationField() {
        let data = (0..<600).map { UInt8(truncatingIfNeeded: $0) }
        let commands = HCICommand.extendedAdvertisingData(handle: 1, data, fragmentPreference: .mayFragment)
        #expect(commands.count == 3)
        let encoded = commands.map { $0.encoded() }
        // First fragment 0x01 (251 bytes), intermediate 0x00 (251), last 0x02 (98).
        #expect(encoded[0].prefix(7) == h("37 20 FF 01 01 00 FB")[...])
        #expect(encoded[1].prefix(7) == h("37 20 FF 01 00 00 FB")[...])
        #expect(encoded[2].prefix(7) == h("37 20 66 01 02 00 62")[...])
        #expect(encoded.flatMap { $0.dropFirst(7) } == data, "the fragments rejoin to the data")
        // Just over one command: first and last, no intermediate.
        let two = HCICommand.extendedScanResponseData(handle: 0, [UInt8](repeating: 1, count: 252))
        #expect(two.map { $0.encoded().prefix(7) } == [h("38 20 FF 00 01 01 FB")[...], h("38 20 05 00 02 01 01")[...]])
        // A fragment given longer than a command carries is cut, never trapping.
        let long = HCICommand.leSetExtendedAdvertisingData(handle: 0, operation: .complete, fragmentPreference: .minimize, data: data)
        #expect(long.encoded().count == 3 + 255)
    }

    @Test func enableDisableReadRemoveAndClear() {
        let cases: [(HCICommand, String)] = [
            // Enable, Num_Sets, then per set: handle, Duration (10 ms), Max_Extended_Advertising_Events.
            (.leSetExtendedAdvertisingEnable(enable: true, sets: [AdvertisingSetEnable(handle: 0)]), "39 20 06 01 01 00 00 00 00"),
            (.leSetExtendedAdvertisingEnable(enable: false, sets: [AdvertisingSetEnable(handle: 0)]), "39 20 06 00 01 00 00 00 00"),
            // Disable with no sets: every set.
            (.leSetExtendedAdvertisingEnable(enable: false, sets: []), "39 20 02 00 00"),
            (
                .leSetExtendedAdvertisingEnable(
                    enable: true, sets: [AdvertisingSetEnable(handle: 0, duration: 0x0064), AdvertisingSetEnable(handle: 1, maxExtendedAdvertisingEvents: 5)]),
                "39 20 0A 01 02 00 64 00 00 01 00 00 05"
            ),
            (.leReadMaximumAdvertisingDataLength, "3A 20 00"),
            (.leReadNumberOfSupportedAdvertisingSets, "3B 20 00"),
            (.leRemoveAdvertisingSet(handle: 2), "3C 20 01 02"),
            (.leClearAdvertisingSets, "3D 20 00"),
        ]
        for (command, bytes) in cases {
            #expect(command.encoded() == h(bytes), "\(command.name)")
        }
        // At most 63 sets fit in 255 parameter octets.
        let many = (0..<70).map { AdvertisingSetEnable(handle: UInt8($0)) }
        #expect(HCICommand.leSetExtendedAdvertisingEnable(enable: true, sets: many).encoded().count == 3 + 2 + 4 * 63)
    }

    @Test func returnParameters() throws {
        func complete(_ opcode: HCIOpcode, _ bytes: String) -> HCICommandComplete {
            HCICommandComplete(numHCICommandPackets: 1, opcode: opcode, returnParameters: h(bytes))
        }
        // 0x0672 = 1650 octets, the most the specification allows.
        #expect(try complete(.leReadMaximumAdvertisingDataLength, "00 72 06").decode(HCIMaximumAdvertisingDataLength.self).maximumAdvertisingDataLength == 1650)
        #expect(try complete(.leReadNumberOfSupportedAdvertisingSets, "00 10").decode(HCINumberOfSupportedAdvertisingSets.self).numberOfSupportedAdvertisingSets == 16)
        #expect(try complete(.leSetExtendedAdvertisingParameters, "00 F6").decode(HCISelectedTxPower.self).selectedTxPower == -10)
        #expect(throws: HCIDecodingError.invalidParameterLength(structure: "LE Read Maximum Advertising Data Length return parameters", expected: 3, actual: 2)) {
            try complete(.leReadMaximumAdvertisingDataLength, "00 72").decode(HCIMaximumAdvertisingDataLength.self)
        }
        #expect(throws: HCIDecodingError.commandFailed(.leReadNumberOfSupportedAdvertisingSets, .unknownCommand)) {
            try complete(.leReadNumberOfSupportedAdvertisingSets, "01").decode(HCINumberOfSupportedAdvertisingSets.self)
        }
        #expect(throws: HCIDecodingError.unexpectedOpcode(expected: .leReadMaximumAdvertisingDataLength, actual: .leReadMaximumDataLength)) {
            try complete(.leReadMaximumDataLength, "00 72 06").decode(HCIMaximumAdvertisingDataLength.self)
        }
    }

    @Test func advertisingSetTerminated() throws {
        // Subevent 0x12: Status, Advertising_Handle, Connection_Handle, Num_Completed_Extended_Advertising_Events.
        let bytes = h("3E 06 12 00 00 40 00 00")
        let event = try HCIEvent(decoding: bytes)
        #expect(event == .leMeta(.advertisingSetTerminated(status: .success, advertisingHandle: 0, connectionHandle: 0x0040, completedExtendedAdvertisingEvents: 0)))
        #expect(event.encoded() == bytes)
        // Advertising Timeout (0x3C) on set 2 after 7 events; the handle's flag bits are not part of it.
        let timeout = try HCIEvent(decoding: h("3E 06 12 3C 02 FF FF 07"))
        #expect(timeout == .leMeta(.advertisingSetTerminated(status: .advertisingTimeout, advertisingHandle: 2, connectionHandle: 0x0FFF, completedExtendedAdvertisingEvents: 7)))
        #expect(throws: HCIDecodingError.invalidParameterLength(structure: "LE Advertising Set Terminated", expected: 6, actual: 5)) {
            try HCIEvent(decoding: h("3E 05 12 00 00 40 00"))
        }
    }

    @Test func leEventMaskWithExtendedAdvertising() {
        // Bit 9: LE Enhanced Connection Complete (0x0A); bit 17: LE Advertising Set Terminated (0x12).
        #expect(LEEventMask.lePeripheral.rawValue == 0x087D)
        #expect(LEEventMask.lePeripheralExtendedAdvertising.rawValue == 0x0002_0A7D)
        #expect(HCICommand.leSetEventMask(.lePeripheralExtendedAdvertising).encoded() == h("01 20 08 7D 0A 02 00 00 00 00 00"))
    }
}
