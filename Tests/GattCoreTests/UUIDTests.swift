import Testing
@testable import GattCore

@Suite struct BluetoothUUIDTests {
    @Test func parses16BitAndEncodesShortest() {
        let u = BluetoothUUID("180D")!
        #expect(u.uuid16 == 0x180D)
        #expect(u.attBytes == [0x0D, 0x18])
        #expect(u.canonicalString == "0000180d-0000-1000-8000-00805f9b34fb")
        #expect(BluetoothUUID("0000180D-0000-1000-8000-00805F9B34FB") == u)
    }

    @Test func thirtyTwoBitIsServedAs128() {
        let u = BluetoothUUID("1234ABCD")!
        #expect(u.uuid16 == nil)
        #expect(u.uuid32 == 0x1234ABCD)
        #expect(u.attBytes.count == 16)
        #expect(u.description == "1234ABCD")
    }

    @Test func rejectsGarbage() {
        for s in ["", "XYZ", "18", "180G", "0000180d-0000-1000-8000-00805f9b34f", "0000180d00000-1000-8000-00805f9b34fb"] {
            #expect(BluetoothUUID(s) == nil, "\(s)")
        }
    }

    @Test func littleEndianRoundTrip() {
        let u = BluetoothUUID("6e400001-b5a3-f393-e0a9-e50e24dcca9e")!
        #expect(BluetoothUUID(littleEndian: u.attBytes) == u)
        #expect(BluetoothUUID(littleEndian: [0x0D, 0x18]) == BluetoothUUID(uuid16: 0x180D))
    }
}
