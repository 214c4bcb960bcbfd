import Testing
@testable import GattCore
@testable import GattHost
import GattTestFixtures

private func commandComplete(_ bytes: String) throws -> HCICommandComplete {
    guard case .commandComplete(let c) = try HCIEvent(decoding: h(bytes)) else {
        Issue.record("not a Command Complete")
        return HCICommandComplete(numHCICommandPackets: 0, opcode: .reset, returnParameters: [])
    }
    return c
}

@Suite struct HCIEventTests {
    @Test func commandCompleteStatusOnly() throws {
        let c = try commandComplete("0E 04 01 03 0C 00")
        #expect(c.numHCICommandPackets == 1)
        #expect(c.opcode == .reset)
        #expect(c.status == .success)
        try c.checkStatus()

        let failed = try commandComplete("0E 04 01 03 0C 0C")
        #expect(throws: HCIDecodingError.commandFailed(.reset, .commandDisallowed)) { try failed.checkStatus() }
        #expect(HCIDecodingError.commandFailed(.reset, .commandDisallowed).description == "Reset failed: Command Disallowed (0x0C)")
    }

    @Test func readBDADDR() throws {
        let c = try commandComplete("0E 0A 01 09 10 00 55 44 33 22 11 C0")
        #expect(try c.decode(HCIReadBDADDR.self).address.description == "C0:11:22:33:44:55")
    }

    @Test func readLocalVersion() throws {
        let c = try commandComplete("0E 0C 01 01 10 00 0C 34 12 0C 5F 00 78 56")
        let v = try c.decode(HCILocalVersionInformation.self)
        #expect(v == HCILocalVersionInformation(hciVersion: 0x0C, hciSubversion: 0x1234, lmpVersion: 0x0C, companyIdentifier: 0x005F, lmpSubversion: 0x5678))
    }

    @Test func bufferSizes() throws {
        let shared = try commandComplete("0E 0B 01 05 10 00 FD 03 40 08 00 00 00").decode(HCIBufferSize.self)
        #expect(shared == HCIBufferSize(aclDataPacketLength: 1021, synchronousDataPacketLength: 0x40, totalNumACLDataPackets: 8, totalNumSynchronousDataPackets: 0))
        let le = try commandComplete("0E 07 01 02 20 00 1B 00 0F").decode(HCILEBufferSize.self)
        #expect(le == HCILEBufferSize(leACLDataPacketLength: 27, totalNumLEACLDataPackets: 15))
        let v2 = try commandComplete("0E 0A 01 60 20 00 FB 00 10 00 00 00").decode(HCILEBufferSizeV2.self)
        #expect(v2 == HCILEBufferSizeV2(leACLDataPacketLength: 251, totalNumLEACLDataPackets: 16, isoDataPacketLength: 0, totalNumISODataPackets: 0))
    }

    @Test func supportedCommands() throws {
        var octets = [UInt8](repeating: 0, count: 64)
        octets[0] = 1 << 5  // Disconnect
        octets[5] = 1 << 7  // Reset
        octets[25] = 1 << 5  // LE Set Advertising Parameters
        octets[35] = 1 << 3  // LE Read Maximum Data Length
        octets[41] = 1 << 5  // LE Read Buffer Size v2
        let c = HCICommandComplete(numHCICommandPackets: 1, opcode: .readLocalSupportedCommands, returnParameters: [0] + octets)
        let s = try HCICommandComplete(decodingEvent: HCIEvent.commandComplete(c).encoded()).decode(HCISupportedCommands.self)
        #expect(s.isSupported(.disconnect))
        #expect(s.isSupported(.reset))
        #expect(s.isSupported(.leSetAdvertisingParameters))
        #expect(s.isSupported(.leReadMaximumDataLength))
        #expect(s.isSupported(.leReadBufferSizeV2))
        #expect(s.isSupported(.readLocalSupportedCommands))
        #expect(!s.isSupported(.leSetAdvertisingData))
        #expect(!s.isSupported(.leSetDataLength))
        #expect(!s.isSupported(.leReadBufferSize))
        #expect(!s.isSupported(HCIOpcode(rawValue: 0xFC01)))
        #expect(HCIOpcode.leSetDataLength.supportedCommandsBit! == (33, 6))
        #expect(HCIOpcode.leLongTermKeyRequestNegativeReply.supportedCommandsBit! == (28, 2))
        #expect(HCIOpcode.readBDADDR.supportedCommandsBit! == (15, 1))
        // 64 octets + status, nothing else.
        let short = HCICommandComplete(numHCICommandPackets: 1, opcode: .readLocalSupportedCommands, returnParameters: [0] + octets.dropLast())
        #expect(throws: HCIDecodingError.invalidParameterLength(structure: "Read Local Supported Commands return parameters", expected: 65, actual: 64)) {
            try short.decode(HCISupportedCommands.self)
        }
    }

    @Test func featuresTxPowerAndDataLength() throws {
        let lmp = try commandComplete("0E 0C 01 03 10 00 00 00 00 00 40 00 00 00").decode(HCILocalSupportedFeatures.self)
        #expect(lmp.leSupported)
        let le = try commandComplete("0E 0C 01 03 20 00 21 01 00 00 00 00 00 00").decode(HCILELocalSupportedFeatures.self)
        #expect(le.features == [.encryption, .dataPacketLengthExtension, .le2MPHY])
        let tx = try commandComplete("0E 05 01 07 20 00 F9").decode(HCIAdvertisingTxPower.self)
        #expect(tx.txPowerLevel == -7)
        let suggested = try commandComplete("0E 08 01 23 20 00 1B 00 48 01").decode(HCISuggestedDefaultDataLength.self)
        #expect(suggested == HCISuggestedDefaultDataLength(maxTxOctets: 27, maxTxTime: 328))
        let max = try commandComplete("0E 0C 01 2F 20 00 FB 00 48 08 FB 00 48 08").decode(HCIMaximumDataLength.self)
        #expect(max == HCIMaximumDataLength(maxTxOctets: 251, maxTxTime: 2120, maxRxOctets: 251, maxRxTime: 2120))
        let dl = try commandComplete("0E 06 01 22 20 00 40 00").decode(HCIConnectionHandleReturn.self)
        #expect(dl.handle == 0x40)
    }

    @Test func returnParameterErrors() throws {
        let wrongOpcode = try commandComplete("0E 0A 01 01 10 00 55 44 33 22 11 C0")
        #expect(throws: HCIDecodingError.unexpectedOpcode(expected: .readBDADDR, actual: .readLocalVersionInformation)) {
            try wrongOpcode.decode(HCIReadBDADDR.self)
        }
        let failed = try commandComplete("0E 04 01 09 10 01")
        #expect(throws: HCIDecodingError.commandFailed(.readBDADDR, .unknownCommand)) { try failed.decode(HCIReadBDADDR.self) }
        let truncated = try commandComplete("0E 09 01 09 10 00 55 44 33 22 11")
        #expect(throws: HCIDecodingError.invalidParameterLength(structure: "Read BD_ADDR return parameters", expected: 7, actual: 6)) {
            try truncated.decode(HCIReadBDADDR.self)
        }
        let empty = try commandComplete("0E 03 01 00 00")
        #expect(empty.opcode.rawValue == 0)
        #expect(empty.status == nil)
        #expect(throws: HCIDecodingError.self) { try empty.checkStatus() }
    }

    @Test func simpleEvents() throws {
        let cases: [(String, HCIEvent)] = [
            ("0F 04 00 01 13 20", .commandStatus(status: .success, numHCICommandPackets: 1, opcode: .leConnectionUpdate)),
            ("05 04 00 40 00 13", .disconnectionComplete(status: .success, handle: 0x40, reason: .remoteUserTerminatedConnection)),
            ("08 04 00 40 00 01", .encryptionChange(status: .success, handle: 0x40, enabled: 1)),
            ("30 03 00 40 00", .encryptionKeyRefreshComplete(status: .success, handle: 0x40)),
            ("13 05 01 40 00 02 00", .numberOfCompletedPackets([HCICompletedPackets(handle: 0x40, count: 2)])),
            (
                "13 09 02 40 00 02 00 41 00 01 00",
                .numberOfCompletedPackets([HCICompletedPackets(handle: 0x40, count: 2), HCICompletedPackets(handle: 0x41, count: 1)])
            ),
            ("10 01 07", .hardwareError(code: 7)),
            ("1A 01 01", .dataBufferOverflow(linkType: 1)),
            ("FF 02 AA BB", .unknown(code: 0xFF, parameters: [0xAA, 0xBB])),
            ("57 00", .unknown(code: 0x57, parameters: [])),
        ]
        for (bytes, event) in cases {
            #expect(try HCIEvent(decoding: h(bytes)) == event, "\(bytes)")
            #expect(event.encoded() == h(bytes), "\(bytes)")
        }
    }

    @Test func leConnectionComplete() throws {
        let bytes = h("3E 13 01 00 40 00 01 01 55 44 33 22 11 C0 18 00 00 00 48 00 05")
        let event = try HCIEvent(decoding: bytes)
        let expected = LEConnectionComplete(
            status: .success, handle: 0x40, role: .peripheral, peerAddressType: .random, peerAddress: BluetoothAddress("C0:11:22:33:44:55")!,
            connectionInterval: 0x18, peripheralLatency: 0, supervisionTimeout: 0x48, centralClockAccuracy: 5)
        #expect(event == .leMeta(.connectionComplete(expected)))
        #expect(event.encoded() == bytes)
        if case .leMeta(let meta) = event { #expect(meta.connectionComplete == expected) }
    }

    @Test func leEnhancedConnectionCompleteV1AndV2() throws {
        let v1 = h("3E 1F 0A 00 41 00 01 02 06 05 04 03 02 01 00 00 00 00 00 00 66 55 44 33 22 51 28 00 01 00 F4 01 00")
        let e1 = try HCIEvent(decoding: v1)
        guard case .leMeta(.enhancedConnectionComplete(let c1)) = e1 else {
            Issue.record("\(e1)")
            return
        }
        #expect(c1.handle == 0x41)
        #expect(c1.peerAddressType == .publicIdentity)
        #expect(c1.peerAddress.description == "01:02:03:04:05:06")
        #expect(c1.localResolvablePrivateAddress == .zero)
        #expect(c1.peerResolvablePrivateAddress?.description == "51:22:33:44:55:66")
        #expect(c1.connectionInterval == 0x28)
        #expect(c1.peripheralLatency == 1)
        #expect(c1.supervisionTimeout == 0x1F4)
        #expect(c1.advertisingHandle == nil)
        #expect(e1.encoded() == v1)

        let v2 = Array(v1.prefix(2)) + [0x29] + Array(v1[3...]) + [0x00, 0xFF, 0xFF]
        var v2fixed = v2
        v2fixed[1] = 0x22
        let e2 = try HCIEvent(decoding: v2fixed)
        guard case .leMeta(.enhancedConnectionCompleteV2(let c2)) = e2 else {
            Issue.record("\(e2)")
            return
        }
        #expect(c2.advertisingHandle == 0)
        #expect(c2.syncHandle == 0xFFFF)
        #expect(c2.peerAddress == c1.peerAddress)
        #expect(e2.encoded() == v2fixed)
    }

    @Test func otherLESubevents() throws {
        let cases: [(String, HCILEMetaEvent)] = [
            (
                "3E 0A 03 00 40 00 18 00 00 00 48 00",
                .connectionUpdateComplete(status: .success, handle: 0x40, connectionInterval: 0x18, peripheralLatency: 0, supervisionTimeout: 0x48)
            ),
            ("3E 0C 04 00 40 00 01 00 00 00 00 00 00 00", .readRemoteFeaturesComplete(status: .success, handle: 0x40, features: .encryption)),
            ("3E 0D 05 40 00 01 02 03 04 05 06 07 08 34 12", .longTermKeyRequest(handle: 0x40, randomNumber: 0x0807_0605_0403_0201, encryptedDiversifier: 0x1234)),
            (
                "3E 0B 06 40 00 06 00 0C 00 00 00 C8 00",
                .remoteConnectionParameterRequest(handle: 0x40, parameters: LEConnectionParameters(intervalMin: 6, intervalMax: 12, latency: 0, supervisionTimeout: 200))
            ),
            ("3E 0B 07 40 00 FB 00 48 08 FB 00 48 08", .dataLengthChange(handle: 0x40, maxTxOctets: 251, maxTxTime: 2120, maxRxOctets: 251, maxRxTime: 2120)),
            ("3E 06 0C 00 40 00 02 02", .phyUpdateComplete(status: .success, handle: 0x40, txPHY: 2, rxPHY: 2)),
            ("3E 03 02 01 02", .unknown(subevent: 0x02, parameters: [0x01, 0x02])),
        ]
        for (bytes, meta) in cases {
            #expect(try HCIEvent(decoding: h(bytes)) == .leMeta(meta), "\(bytes)")
            #expect(HCIEvent.leMeta(meta).encoded() == h(bytes), "\(bytes)")
        }
    }

    @Test func malformedEventsThrow() {
        #expect(throws: HCIDecodingError.truncatedHeader(packet: "HCI event", needed: 2, actual: 0)) { try HCIEvent(decoding: []) }
        #expect(throws: HCIDecodingError.truncatedHeader(packet: "HCI event", needed: 2, actual: 1)) { try HCIEvent(decoding: [0x0E]) }
        #expect(throws: HCIDecodingError.lengthMismatch(packet: "HCI event 0x0E", declared: 5, actual: 4)) { try HCIEvent(decoding: h("0E 05 01 03 0C 00")) }
        #expect(throws: HCIDecodingError.lengthMismatch(packet: "HCI event 0x0E", declared: 3, actual: 4)) { try HCIEvent(decoding: h("0E 03 01 03 0C 00")) }
        #expect(throws: HCIDecodingError.invalidParameterLength(structure: "Command Complete", expected: 3, actual: 2)) { try HCIEvent(decoding: h("0E 02 01 03")) }
        #expect(throws: HCIDecodingError.invalidParameterLength(structure: "LE Meta event", expected: 1, actual: 0)) { try HCIEvent(decoding: h("3E 00")) }
        #expect(throws: HCIDecodingError.invalidParameterLength(structure: "Number Of Completed Packets", expected: 9, actual: 5)) {
            try HCIEvent(decoding: h("13 05 02 40 00 02 00"))
        }
        #expect(throws: HCIDecodingError.invalidParameterLength(structure: "Number Of Completed Packets", expected: 1, actual: 0)) {
            try HCIEvent(decoding: h("13 00"))
        }
        // Every fixed-size known event, one byte short and one byte long.
        let good = [
            "0F 04 00 01 13 20", "05 04 00 40 00 13", "08 04 00 40 00 01", "30 03 00 40 00", "10 01 07", "1A 01 01",
            "3E 13 01 00 40 00 01 01 55 44 33 22 11 C0 18 00 00 00 48 00 05", "3E 0A 03 00 40 00 18 00 00 00 48 00",
            "3E 0C 04 00 40 00 01 00 00 00 00 00 00 00", "3E 0D 05 40 00 01 02 03 04 05 06 07 08 34 12",
            "3E 0B 06 40 00 06 00 0C 00 00 00 C8 00", "3E 0B 07 40 00 FB 00 48 08 FB 00 48 08", "3E 06 0C 00 40 00 02 02",
        ]
        for g in good {
            let bytes = h(g)
            #expect(throws: Never.self) { try HCIEvent(decoding: bytes) }
            var short = Array(bytes.dropLast())
            short[1] -= 1
            #expect(throws: HCIDecodingError.self, "\(g) short") { try HCIEvent(decoding: short) }
            var long = bytes + [0]
            long[1] += 1
            #expect(throws: HCIDecodingError.self, "\(g) long") { try HCIEvent(decoding: long) }
        }
    }
}

extension HCICommandComplete {
    fileprivate init(decodingEvent bytes: [UInt8]) throws {
        guard case .commandComplete(let c) = try HCIEvent(decoding: bytes) else { throw HCIDecodingError.truncatedHeader(packet: "", needed: 0, actual: 0) }
        self = c
    }
}
