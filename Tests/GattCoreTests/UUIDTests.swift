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

@Suite struct StaticRandomAddressTests {
    /// Core Spec Vol 6 Part B §1.3.2.1: top two bits 0b11, the rest neither all 0 nor all 1.
    @Test func derivedAddressIsAValidStaticRandomAddress() {
        for text in ["00:00:00:00:00:00", "FF:FF:FF:FF:FF:FF", "C0:FF:EE:00:00:01", "5A:5A:5A:5A:5A:5A", "A5:A5:A5:A5:A5:A5"] {
            let a = BluetoothAddress.staticRandom(derivedFrom: BluetoothAddress(text)!)
            #expect(a.bytes[0] & 0xC0 == 0xC0, "\(text)")
            let rest = [a.bytes[0] & 0x3F] + a.bytes[1...]
            #expect(!rest.allSatisfy { $0 == 0 }, "\(text)")
            #expect(!(a.bytes[0] & 0x3F == 0x3F && a.bytes[1...].allSatisfy { $0 == 0xFF }), "\(text)")
            #expect(a == BluetoothAddress.staticRandom(derivedFrom: BluetoothAddress(text)!))
        }
    }
}
