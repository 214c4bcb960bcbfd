import Testing
@testable import GattCore
import GattTestFixtures

/// Write requests, commands, Prepare/Execute, CCCDs, signed writes and Client
/// Supported Features (GATT test specification GAW cases where one applies).
@Suite struct ATTServerWriteTests {
    @Test func GAW_SR_BV_03_writeCharacteristicValue() {
        var h = ATTHarness()
        #expect(h.request([0x12, 0x12, 0x00, 0xAA, 0xBB, 0xCC]) == [0x13])
        #expect(h.events == [.written(h.c1, characteristic: ATTFixture.rw, value: [0xAA, 0xBB, 0xCC])])
        #expect(h.server.database.value(ofCharacteristic: ATTFixture.rw) == [0xAA, 0xBB, 0xCC])
        #expect(h.request([0x0A, 0x12, 0x00]) == [0x0B, 0xAA, 0xBB, 0xCC])
        // Empty values are values too.
        #expect(h.request([0x12, 0x12, 0x00]) == [0x13])
        #expect(h.request([0x0A, 0x12, 0x00]) == [0x0B])
    }

    @Test func GAW_SR_BI_02_writeInvalidHandle() {
        var h = ATTHarness()
        #expect(h.request([0x12, 0x00, 0x00, 0x01]) == [0x01, 0x12, 0x00, 0x00, 0x01])
        #expect(h.request([0x12, 0x2C, 0x00, 0x01]) == [0x01, 0x12, 0x2C, 0x00, 0x01])
    }

    @Test func GAW_SR_BI_03_writeNotPermitted() {
        var h = ATTHarness()
        #expect(h.request([0x12, 0x03, 0x00, 0x41]) == [0x01, 0x12, 0x03, 0x00, 0x03])
        #expect(h.request([0x12, 0x01, 0x00, 0x00, 0x18]) == [0x01, 0x12, 0x01, 0x00, 0x03])
        // Signed-write-only characteristic: no plain Write Request.
        #expect(h.request([0x12, 0x22, 0x00, 0x01]) == [0x01, 0x12, 0x22, 0x00, 0x03])
        #expect(h.events == [])
    }

    @Test func GAW_SR_BI_05_writeInsufficientEncryption() {
        var h = ATTHarness()
        #expect(h.request([0x12, 0x17, 0x00, 0x01]) == [0x01, 0x12, 0x17, 0x00, 0x0F])
        h.server.setSecurity(h.c1, .high)
        #expect(h.request([0x12, 0x17, 0x00, 0x01]) == [0x13])
    }

    @Test func GAW_SR_BI_33_writeInvalidAttributeValueLength() {
        var h = ATTHarness()
        h.exchangeMTU(100)
        #expect(h.request([0x12, 0x12, 0x00] + [UInt8](repeating: 1, count: 21)) == [0x01, 0x12, 0x12, 0x00, 0x0D])
        #expect(h.request([0x12, 0x12, 0x00] + [UInt8](repeating: 1, count: 20)) == [0x13])
    }

    @Test func GAW_SR_BV_01_writeWithoutResponse() {
        var h = ATTHarness()
        h.exchangeMTU(100)
        #expect(h.send([0x52, 0x12, 0x00, 0x99]) == [])
        #expect(h.events == [.written(h.c1, characteristic: ATTFixture.rw, value: [0x99])])
        // Errors are silently ignored.
        #expect(h.send([0x52, 0x03, 0x00, 0x41]) == [])
        #expect(h.send([0x52, 0x00, 0x00, 0x41]) == [])
        #expect(h.send([0x52, 0x12, 0x00] + [UInt8](repeating: 1, count: 21)) == [])
        // The value has no Write Without Response property.
        #expect(h.send([0x52, 0x1B, 0x00, 0x01]) == [])
        #expect(h.events == [])
        #expect(h.server.database.value(ofCharacteristic: ATTFixture.rw) == [0x99])
        #expect(h.server.database.value(ofCharacteristic: ATTFixture.long).count == 100)
    }

    // MARK: Signed Write

    @Test func GAW_SR_BV_02_signedWrite() {
        var h = ATTHarness()
        let key: [UInt8] = (0..<16).map { UInt8($0 * 7 + 1) }
        func signed(_ value: [UInt8], counter: UInt32) -> [UInt8] {
            let m: [UInt8] = [0xD2, 0x22, 0x00] + value
            return m + ATTSigning.signature(csrk: key, message: m, signCounter: counter)
        }
        // No CSRK yet: ignored.
        #expect(h.send(signed([0x01], counter: 1)) == [])
        #expect(h.events == [])
        h.server.setCSRK(h.c1, key: key)
        #expect(h.send(signed([0x01], counter: 1)) == [])
        #expect(h.events == [.written(h.c1, characteristic: ATTFixture.signed, value: [0x01])])
        #expect(h.server.signCounter(for: h.c1) == 1)
        // Replayed counter: ignored.
        _ = h.send(signed([0x02], counter: 1))
        #expect(h.events == [])
        // Bad MAC: ignored.
        var bad = signed([0x03], counter: 5)
        bad[bad.count - 1] ^= 0x01
        _ = h.send(bad)
        #expect(h.events == [])
        _ = h.send(signed([0x04], counter: 5))
        #expect(h.events == [.written(h.c1, characteristic: ATTFixture.signed, value: [0x04])])
        #expect(h.server.database.value(ofCharacteristic: ATTFixture.signed) == [0x04])
        // A valid signature on a characteristic without the signed-write property does nothing.
        let m: [UInt8] = [0xD2, 0x12, 0x00, 0x09]
        _ = h.send(m + ATTSigning.signature(csrk: key, message: m, signCounter: 6))
        #expect(h.events == [])
    }

    // MARK: CCCD

    @Test func GAN_SR_BV_01_cccdWriteAndReadPerConnection() {
        var h = ATTHarness(connections: 2)
        #expect(h.request([0x12, 0x15, 0x00, 0x01, 0x00]) == [0x13])
        #expect(h.events == [.subscriptionChanged(h.c1, characteristic: ATTFixture.notify, notify: true, indicate: false)])
        #expect(h.request([0x0A, 0x15, 0x00]) == [0x0B, 0x01, 0x00])
        #expect(h.request([0x0A, 0x15, 0x00], from: h.c2) == [0x0B, 0x00, 0x00])
        // Same value again: no event.
        #expect(h.request([0x12, 0x15, 0x00, 0x01, 0x00]) == [0x13])
        #expect(h.events == [])
        #expect(h.request([0x12, 0x15, 0x00, 0x03, 0x00]) == [0x13])
        #expect(h.events == [.subscriptionChanged(h.c1, characteristic: ATTFixture.notify, notify: true, indicate: true)])
        #expect(h.server.clientConfiguration(for: h.c1, characteristic: ATTFixture.notify) == 3)
        #expect(h.server.clientConfiguration(for: h.c2, characteristic: ATTFixture.notify) == 0)
    }

    @Test func cccdErrors() {
        var h = ATTHarness()
        #expect(h.request([0x12, 0x15, 0x00, 0x01]) == [0x01, 0x12, 0x15, 0x00, 0x0D])
        #expect(h.request([0x12, 0x15, 0x00, 0x01, 0x00, 0x00]) == [0x01, 0x12, 0x15, 0x00, 0x0D])
        #expect(h.request([0x12, 0x15, 0x00, 0x04, 0x00]) == [0x01, 0x12, 0x15, 0x00, 0x13])
        // Indications on a notify-only characteristic.
        #expect(h.request([0x12, 0x28, 0x00, 0x02, 0x00]) == [0x01, 0x12, 0x28, 0x00, 0xFD])
        #expect(h.request([0x12, 0x28, 0x00, 0x01, 0x00]) == [0x13])
        #expect(h.server.clientConfiguration(for: h.c1, characteristic: ATTFixture.notify) == 0)
    }

    @Test func cccdEncryptionRequired() {
        let svc = ServiceDefinition(uuid: 0xBBB0, characteristics: [
            CharacteristicDefinition(uuid: 0xBBB1, properties: [.read, .notifyEncryptionRequired], value: [1]),
        ])
        var server = ATTServer(database: GATTDatabase(deviceName: "x", services: [svc]))
        let c = ConnectionID(9)
        server.connect(c, security: .low)
        // Value 0x0010, CCCD 0x0011.
        _ = server.receive([0x12, 0x13, 0x00, 0x01, 0x00], from: .fixed(c), now: .zero)
        #expect(server.dequeueOutgoing(for: .fixed(c))?.pdu == [0x01, 0x12, 0x13, 0x00, 0x0F])
        server.setSecurity(c, .medium)
        _ = server.receive([0x12, 0x13, 0x00, 0x01, 0x00], from: .fixed(c), now: .zero)
        #expect(server.dequeueOutgoing(for: .fixed(c))?.pdu == [0x13])
    }

    // MARK: Client Supported Features

    @Test func clientSupportedFeaturesCannotBeCleared() {
        var h = ATTHarness(connections: 2)
        #expect(h.request([0x12, 0x0B, 0x00, 0x05]) == [0x13])
        #expect(h.events == [.clientFeaturesChanged(h.c1, features: [0x05])])
        #expect(h.request([0x0A, 0x0B, 0x00]) == [0x0B, 0x05])
        #expect(h.request([0x0A, 0x0B, 0x00], from: h.c2) == [0x0B, 0x00])
        #expect(h.request([0x12, 0x0B, 0x00, 0x04]) == [0x01, 0x12, 0x0B, 0x00, 0x13])
        #expect(h.request([0x12, 0x0B, 0x00, 0x07]) == [0x13])
        #expect(h.request([0x0A, 0x0B, 0x00]) == [0x0B, 0x07])
        #expect(h.request([0x12, 0x0B, 0x00, 0x07, 0x00]) == [0x01, 0x12, 0x0B, 0x00, 0x0D])
    }

    // MARK: Prepare / Execute

    @Test func GAW_SR_BV_05_writeLongCharacteristicValue() {
        var h = ATTHarness()
        let value = (0..<40).map { UInt8(200 - $0) }
        #expect(h.request([0x16, 0x1B, 0x00, 0x00, 0x00] + value[0..<18]) == [0x17, 0x1B, 0x00, 0x00, 0x00] + value[0..<18])
        #expect(h.request([0x16, 0x1B, 0x00, 0x12, 0x00] + value[18..<36]) == [0x17, 0x1B, 0x00, 0x12, 0x00] + value[18..<36])
        #expect(h.request([0x16, 0x1B, 0x00, 0x24, 0x00] + value[36..<40]) == [0x17, 0x1B, 0x00, 0x24, 0x00] + value[36..<40])
        // Nothing is applied before Execute Write.
        #expect(h.server.database.value(ofCharacteristic: ATTFixture.long).count == 100)
        #expect(h.events == [])
        #expect(h.request([0x18, 0x01]) == [0x19])
        #expect(h.events == [.written(h.c1, characteristic: ATTFixture.long, value: value)])
        #expect(h.server.database.value(ofCharacteristic: ATTFixture.long) == value)
    }

    @Test func GAW_SR_BV_07_executeCancel() {
        var h = ATTHarness()
        #expect(h.request([0x16, 0x1B, 0x00, 0x00, 0x00, 0xAB]) == [0x17, 0x1B, 0x00, 0x00, 0x00, 0xAB])
        #expect(h.request([0x18, 0x00]) == [0x19])
        #expect(h.server.database.value(ofCharacteristic: ATTFixture.long).count == 100)
        // The queue is gone: a later execute writes nothing.
        #expect(h.request([0x18, 0x01]) == [0x19])
        #expect(h.events == [])
    }

    @Test func executeWriteInvalidFlags() {
        var h = ATTHarness()
        #expect(h.request([0x18, 0x02]) == [0x01, 0x18, 0x00, 0x00, 0x04])
        #expect(h.request([0x18, 0xFF]) == [0x01, 0x18, 0x00, 0x00, 0x04])
    }

    @Test func GAW_SR_BI_07_prepareWriteInvalidHandleAndNotPermitted() {
        var h = ATTHarness()
        #expect(h.request([0x16, 0x00, 0x00, 0x00, 0x00, 0x01]) == [0x01, 0x16, 0x00, 0x00, 0x01])
        #expect(h.request([0x16, 0x52, 0x00, 0x00, 0x00, 0x01]) == [0x01, 0x16, 0x52, 0x00, 0x01])
        #expect(h.request([0x16, 0x03, 0x00, 0x00, 0x00, 0x01]) == [0x01, 0x16, 0x03, 0x00, 0x03])
        #expect(h.request([0x16, 0x17, 0x00, 0x00, 0x00, 0x01]) == [0x01, 0x16, 0x17, 0x00, 0x0F])
    }

    @Test func GAW_SR_BI_09_executeInvalidOffset() {
        var h = ATTHarness()
        #expect(h.request([0x16, 0x1B, 0x00, 0x65, 0x00, 0x01]) == [0x17, 0x1B, 0x00, 0x65, 0x00, 0x01])
        #expect(h.request([0x18, 0x01]) == [0x01, 0x18, 0x1B, 0x00, 0x07])
        #expect(h.events == [])
        #expect(h.server.database.value(ofCharacteristic: ATTFixture.long).count == 100)
        // Offset == length appends.
        #expect(h.request([0x16, 0x1B, 0x00, 0x64, 0x00, 0xEE]) == [0x17, 0x1B, 0x00, 0x64, 0x00, 0xEE])
        #expect(h.request([0x18, 0x01]) == [0x19])
        #expect(h.server.database.value(ofCharacteristic: ATTFixture.long) == (0..<100).map { UInt8($0) } + [0xEE])
    }

    @Test func GAW_SR_BI_35_executeInvalidAttributeValueLength() {
        var h = ATTHarness()
        h.exchangeMTU(517)
        let part = [UInt8](repeating: 0x11, count: 300)
        #expect(h.request([0x16, 0x1B, 0x00, 0x00, 0x00] + part).count == 305)
        #expect(h.request([0x16, 0x1B, 0x00, 0x2C, 0x01] + part).count == 305)
        #expect(h.request([0x18, 0x01]) == [0x01, 0x18, 0x1B, 0x00, 0x0D])
        #expect(h.server.database.value(ofCharacteristic: ATTFixture.long).count == 100)
    }

    @Test func GAW_SR_BI_10_reliableWriteAllOrNothing() {
        var h = ATTHarness()
        #expect(h.request([0x16, 0x1B, 0x00, 0x00, 0x00, 0x01, 0x02]) == [0x17, 0x1B, 0x00, 0x00, 0x00, 0x01, 0x02])
        #expect(h.request([0x16, 0x24, 0x00, 0x00, 0x00, 0x0A, 0x0B, 0x0C, 0x0D, 0x0E]) == [0x17, 0x24, 0x00, 0x00, 0x00, 0x0A, 0x0B, 0x0C, 0x0D, 0x0E])
        // reliable2 allows 4 octets: the whole execute fails, long is unchanged too.
        #expect(h.request([0x18, 0x01]) == [0x01, 0x18, 0x24, 0x00, 0x0D])
        #expect(h.server.database.value(ofCharacteristic: ATTFixture.long).count == 100)
        #expect(h.server.database.value(ofCharacteristic: ATTFixture.reliable2) == [0, 0, 0, 0])
        // Valid reliable write across both.
        _ = h.send([0x16, 0x1B, 0x00, 0x00, 0x00, 0x01, 0x02])
        _ = h.send([0x16, 0x24, 0x00, 0x02, 0x00, 0x0A, 0x0B])
        #expect(h.request([0x18, 0x01]) == [0x19])
        #expect(h.events == [
            .written(h.c1, characteristic: ATTFixture.long, value: [0x01, 0x02]),
            .written(h.c1, characteristic: ATTFixture.reliable2, value: [0, 0, 0x0A, 0x0B]),
        ])
    }

    @Test func prepareAcrossHandlesNeedsReliableWrite() {
        var h = ATTHarness()
        _ = h.send([0x16, 0x1B, 0x00, 0x00, 0x00, 0x01])
        #expect(h.request([0x16, 0x12, 0x00, 0x00, 0x00, 0x01]) == [0x01, 0x16, 0x12, 0x00, 0x03])
        // A long write of one non-reliable handle is fine.
        _ = h.send([0x18, 0x00])
        #expect(h.request([0x16, 0x12, 0x00, 0x00, 0x00, 0x01]) == [0x17, 0x12, 0x00, 0x00, 0x00, 0x01])
        #expect(h.request([0x16, 0x12, 0x00, 0x01, 0x00, 0x02]) == [0x17, 0x12, 0x00, 0x01, 0x00, 0x02])
        #expect(h.request([0x18, 0x01]) == [0x19])
        #expect(h.server.database.value(ofCharacteristic: ATTFixture.rw) == [0x01, 0x02])
    }

    @Test func GAW_SR_BI_11_prepareQueueFull() {
        var h = ATTHarness()
        for i in 0..<64 {
            #expect(h.request([0x16, 0x1B, 0x00, UInt8(i), 0x00, 0x01]) == [0x17, 0x1B, 0x00, UInt8(i), 0x00, 0x01])
        }
        #expect(h.request([0x16, 0x1B, 0x00, 0x40, 0x00, 0x01]) == [0x01, 0x16, 0x1B, 0x00, 0x09])
        #expect(h.request([0x18, 0x01]) == [0x19])
        // Byte limit: 4096 octets.
        h.exchangeMTU(517)
        for i in 0..<13 { #expect(h.request([0x16, 0x1B, 0x00, UInt8(i), 0x00] + [UInt8](repeating: 0, count: 315)).count == 320) }
        #expect(h.request([0x16, 0x1B, 0x00, 0x00, 0x00] + [UInt8](repeating: 0, count: 2)) == [0x01, 0x16, 0x1B, 0x00, 0x09])
        #expect(h.request([0x16, 0x1B, 0x00, 0x00, 0x00, 0x00]).first == 0x17)
    }

    @Test func preparedCCCDWriteIsValidatedAtExecute() {
        var h = ATTHarness()
        _ = h.send([0x16, 0x15, 0x00, 0x00, 0x00, 0x02])
        _ = h.send([0x16, 0x15, 0x00, 0x01, 0x00, 0x00])
        #expect(h.request([0x18, 0x01]) == [0x19])
        #expect(h.events == [.subscriptionChanged(h.c1, characteristic: ATTFixture.notify, notify: false, indicate: true)])
        _ = h.send([0x16, 0x15, 0x00, 0x00, 0x00, 0x02])
        #expect(h.request([0x18, 0x01]) == [0x01, 0x18, 0x15, 0x00, 0x0D])
    }

    @Test func descriptorWriteRequiresPermission() {
        var h = ATTHarness()
        // The User Description is read-only without writable_auxiliaries.
        #expect(h.request([0x12, 0x1D, 0x00, 0x41]) == [0x01, 0x12, 0x1D, 0x00, 0x03])
        let svc = ServiceDefinition(uuid: 0xBBB0, characteristics: [
            CharacteristicDefinition(uuid: 0xBBB1, properties: [.read, .writableAuxiliaries], value: [1], userDescription: "a"),
        ])
        var server = ATTServer(database: GATTDatabase(deviceName: "x", services: [svc]))
        let c = ConnectionID(3)
        server.connect(c, security: .low)
        // Value 0x0010, Extended Properties 0x0011, User Description 0x0012.
        let out = server.receive([0x12, 0x14, 0x00, 0x62, 0x63], from: .fixed(c), now: .zero)
        #expect(out == [.event(.descriptorWritten(c, handle: 0x14, value: [0x62, 0x63])), .outgoingAvailable(.fixed(c))])
        #expect(server.dequeueOutgoing(for: .fixed(c))?.pdu == [0x13])
    }
}
