import Testing
@testable import GattCore
@testable import GattHost
import GattTestFixtures

@Suite struct HCICommandTests {
    @Test func opcodeSplitsIntoOGFAndOCF() {
        let op = HCIOpcode.leSetAdvertisingParameters
        #expect(op.rawValue == 0x2006)
        #expect(op.ogf == 0x08)
        #expect(op.ocf == 0x0006)
        #expect(HCIOpcode(ogf: 0x03, ocf: 0x0003) == .reset)
        #expect(HCIOpcode.reset.rawValue == 0x0C03)
        #expect(HCIOpcode.leReadBufferSizeV2.rawValue == 0x2060)
    }

    @Test func parameterlessCommands() {
        let cases: [(HCICommand, String)] = [
            (.reset, "03 0C 00"),
            (.readLocalVersionInformation, "01 10 00"),
            (.readLocalSupportedCommands, "02 10 00"),
            (.readLocalSupportedFeatures, "03 10 00"),
            (.readBufferSize, "05 10 00"),
            (.readBDADDR, "09 10 00"),
            (.leReadBufferSize, "02 20 00"),
            (.leReadBufferSizeV2, "60 20 00"),
            (.leReadLocalSupportedFeatures, "03 20 00"),
            (.leReadAdvertisingPhysicalChannelTxPower, "07 20 00"),
            (.leReadSuggestedDefaultDataLength, "23 20 00"),
            (.leReadMaximumDataLength, "2F 20 00"),
        ]
        for (command, bytes) in cases {
            #expect(command.encoded() == h(bytes), "\(command.name)")
        }
    }

    @Test func commandsWithParameters() {
        let peer = BluetoothAddress("C0:11:22:33:44:55")!
        let params = LEConnectionParameters(intervalMin: 0x18, intervalMax: 0x28, latency: 0, supervisionTimeout: 0x1F4)
        let cases: [(HCICommand, String)] = [
            (.setEventMask(.lePeripheral), "01 0C 08 90 80 00 02 00 80 00 20"),
            (.leSetEventMask(.controllerDefault), "01 20 08 1F 00 00 00 00 00 00 00"),
            (.disconnect(handle: 0x0040, reason: .remoteUserTerminatedConnection), "06 04 03 40 00 13"),
            (.leSetRandomAddress(peer), "05 20 06 55 44 33 22 11 C0"),
            (
                .leSetAdvertisingParameters(AdvertisingParameters(intervalMin: 0xA0, intervalMax: 0xF0, advertisingType: .connectableUndirected)),
                "06 20 0F A0 00 F0 00 00 00 00 00 00 00 00 00 00 07 00"
            ),
            (
                .leSetAdvertisingParameters(
                    AdvertisingParameters(intervalMin: 0x20, intervalMax: 0x4000, advertisingType: .nonConnectableUndirected, ownAddressType: .random)),
                "06 20 0F 20 00 00 40 03 01 00 00 00 00 00 00 00 07 00"
            ),
            (.leSetAdvertisingEnable(true), "0A 20 01 01"),
            (.leSetAdvertisingEnable(false), "0A 20 01 00"),
            (.leConnectionUpdate(handle: 0x40, parameters: params, minCELength: 0, maxCELength: 0), "13 20 0E 40 00 18 00 28 00 00 00 F4 01 00 00 00 00"),
            (.leLongTermKeyRequestNegativeReply(handle: 0x0040), "1B 20 02 40 00"),
            (
                .leLongTermKeyRequestReply(handle: 0x0040, longTermKey: Array(0x01...0x10)),
                "1A 20 12 40 00 01 02 03 04 05 06 07 08 09 0A 0B 0C 0D 0E 0F 10"
            ),
            (
                .leRemoteConnectionParameterRequestReply(handle: 0x41, parameters: params, minCELength: 1, maxCELength: 2),
                "20 20 0E 41 00 18 00 28 00 00 00 F4 01 01 00 02 00"
            ),
            (.leRemoteConnectionParameterRequestNegativeReply(handle: 0x41, reason: .unacceptableConnectionParameters), "21 20 03 41 00 3B"),
            (.leSetDataLength(handle: 0x40, txOctets: 251, txTime: 2120), "22 20 06 40 00 FB 00 48 08"),
            (.leWriteSuggestedDefaultDataLength(txOctets: 251, txTime: 2120), "24 20 04 FB 00 48 08"),
            (.leSetDefaultPHY(allPHYs: 0, txPHYs: 0x03, rxPHYs: 0x03), "31 20 03 00 03 03"),
            (.leSetPHY(handle: 0x40, allPHYs: 0, txPHYs: 2, rxPHYs: 2, phyOptions: 0), "32 20 07 40 00 00 02 02 00 00"),
            (.raw(HCIOpcode(rawValue: 0xFC01), [0xAA]), "01 FC 01 AA"),
        ]
        for (command, bytes) in cases {
            #expect(command.encoded() == h(bytes), "\(command.name)")
        }
    }

    @Test func advertisingDataIsLengthPrefixedAndPaddedTo31() {
        let data = HCICommand.leSetAdvertisingData([0x02, 0x01, 0x06]).encoded()
        #expect(data == h("08 20 20 03 02 01 06") + [UInt8](repeating: 0, count: 28))
        #expect(data.count == 35)
        let scan = HCICommand.leSetScanResponseData([]).encoded()
        #expect(scan == h("09 20 20 00") + [UInt8](repeating: 0, count: 31))
        // More than 31 bytes is cut, never trapped on.
        let long = HCICommand.leSetAdvertisingData([UInt8](repeating: 0xAB, count: 40)).encoded()
        #expect(long.count == 35)
        #expect(long[3] == 31)
        #expect(long.last == 0xAB)
    }

    @Test func handleIsMaskedTo12Bits() {
        #expect(HCICommand.disconnect(handle: 0xF040, reason: .remoteUserTerminatedConnection).encoded() == h("06 04 03 40 00 13"))
    }

    @Test func names() {
        #expect(HCICommand.leSetAdvertisingParameters(AdvertisingParameters(intervalMin: 0x20, intervalMax: 0x20, advertisingType: .connectableUndirected)).name
            == "LE Set Advertising Parameters")
        #expect(HCICommand.reset.name == "Reset")
        #expect(HCICommand.readBDADDR.name == "Read BD_ADDR")
        #expect(HCICommand.leReadBufferSizeV2.name == "LE Read Buffer Size [v2]")
        #expect(HCICommand.raw(HCIOpcode(rawValue: 0xFC01), []).name == "opcode 0xFC01")
    }

    @Test func statusNames() {
        #expect(HCIStatus.success.description == "Success (0x00)")
        #expect(HCIStatus.unknownCommand.name == "Unknown HCI Command")
        #expect(HCIStatus.commandDisallowed.description == "Command Disallowed (0x0C)")
        #expect(HCIStatus.invalidCommandParameters.name == "Invalid HCI Command Parameters")
        #expect(HCIStatus.remoteUserTerminatedConnection.name == "Remote User Terminated Connection")
        #expect(HCIStatus.connectionTerminatedByLocalHost.name == "Connection Terminated By Local Host")
        #expect(HCIStatus.connectionFailedToBeEstablished.rawValue == 0x3E)
        #expect(HCIStatus(0x3E).name == "Connection Failed to be Established / Synchronization Timeout")
        #expect(HCIStatus(0x47).name == "Too Early")
        #expect(HCIStatus(0x2B).name == nil)
        #expect(HCIStatus(0xFF).description == "Reserved error code (0xFF)")
    }

    @Test func bluetoothAddress() {
        let a = BluetoothAddress("c0:11:22:33:44:5f")!
        #expect(a.description == "C0:11:22:33:44:5F")
        #expect(a.littleEndianBytes == [0x5F, 0x44, 0x33, 0x22, 0x11, 0xC0])
        #expect(BluetoothAddress(littleEndian: a.littleEndianBytes) == a)
        #expect(BluetoothAddress("C0-11-22-33-44-5F") == a)
        for bad in ["", "C0:11:22:33:44", "C0:11:22:33:44:5G", "C0:11:22:33:44:555", "C0:11:22:33:44:55:66"] {
            #expect(BluetoothAddress(bad) == nil, "\(bad)")
        }
        #expect(BluetoothAddress(littleEndian: [1, 2, 3]) == nil)
        #expect(BluetoothAddressType.random.description == "random")
    }

    @Test func h4PacketWrapsCommands() {
        #expect(H4Packet(command: .reset).encoded == h("01 03 0C 00"))
    }
}
