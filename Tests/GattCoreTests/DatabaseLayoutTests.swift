import Testing
@testable import GattCore
import GattTestFixtures

@Suite struct DatabaseLayoutTests {
    static func bytes(_ hex: String) -> [UInt8] { h(hex) }

    /// Handles of config/heart-rate.json (Core Spec Vol 3 Part G §3: service,
    /// includes, then per characteristic: declaration, value, descriptors).
    @Test func heartRateLayout() throws {
        let db = try ConfigFixture.heartRate().makeDatabase()
        let expected: [(UInt16, UInt16, String)] = [
            (0x0001, 0x2800, "0018"),  // GAP
            (0x0002, 0x2803, "020300002a"), (0x0003, 0x2A00, "44656d6f2048656172742052617465"),
            (0x0004, 0x2803, "020500012a"), (0x0005, 0x2A01, "4003"),
            (0x0006, 0x2800, "0118"),  // GATT
            (0x0007, 0x2803, "200800052a"), (0x0008, 0x2A05, "0100ffff"), (0x0009, 0x2902, "0000"),
            (0x000A, 0x2803, "0a0b00292b"), (0x000B, 0x2B29, "00"),
            (0x000C, 0x2803, "020d002a2b"), (0x000D, 0x2B2A, "71c664b220e160fd247703b032a6aa50"),
            (0x000E, 0x2803, "020f003a2b"), (0x000F, 0x2B3A, "00"),  // Server Supported Features
            (0x0010, 0x2800, "0d18"),  // Heart Rate
            (0x0011, 0x2802, "17001a000f18"),  // includes Battery 0x0017...0x001A
            (0x0012, 0x2803, "101300372a"), (0x0013, 0x2A37, "0048"),
            (0x0014, 0x2902, "0000"), (0x0015, 0x2901, "48656172742052617465"), (0x0016, 0x2904, "0400af27010000"),
            (0x0017, 0x2800, "0f18"),  // Battery
            (0x0018, 0x2803, "121900192a"), (0x0019, 0x2A19, "64"), (0x001A, 0x2902, "0000"),
        ]
        #expect(db.attributes.count == expected.count)
        for (a, e) in zip(db.attributes, expected) {
            #expect(a.handle == AttributeHandle(e.0))
            #expect(a.type == BluetoothUUID(uuid16: e.1), "\(a.handle)")
            #expect(a.value == Self.bytes(e.2), "\(a.handle)")
        }
        #expect(db.services.map { [$0.handle.rawValue, $0.endHandle.rawValue] } == [[0x01, 0x05], [0x06, 0x0F], [0x10, 0x16], [0x17, 0x1A]])
        #expect(db.services[2].includes == [3])
        #expect(db.attributes[0x10].role == .includeDeclaration(service: 2, included: 3))
        let hr = db.characteristics[6]
        #expect(hr.id == "hr_measurement" && hr.declarationHandle == 0x12 && hr.valueHandle == 0x13)
        #expect(hr.cccdHandle == 0x14 && hr.userDescriptionHandle == 0x15 && hr.endHandle == 0x16)
        #expect(db.characteristicIndex(named: "level") == 7)
        #expect(db.characteristicIndex(named: "2A19") == 7)
    }

    /// CCCD, Extended Properties, User Description, then the config's
    /// descriptors; a 32-bit service UUID is served as 128 bits and an
    /// include of a 128-bit service omits the UUID (§3.2).
    @Test func autoAddedDescriptorsAndLongUUIDs() throws {
        let c = try ConfigFixture.load(#"""
            {"name": "A", "services": [
              {"id": "outer", "uuid": "180A", "includes": ["inner"]},
              {"id": "inner", "uuid": "1234ABCD", "primary": false, "characteristics": [
                {"id": "x", "uuid": "8c3b0001-5e1f-4a0b-9a53-6f6b2c3d4e50",
                 "properties": ["read", "write", "indicate", "reliable_write", "writable_auxiliaries"],
                 "user_description": "X", "descriptors": [{"uuid": "2906", "value": {"hex": "0010"}}]}]}]}
            """#)
        let db = c.makeDatabase()
        // 0x0010 outer, 0x0011 include, 0x0012 inner (secondary), then x.
        #expect(db.attributes[0x10].value == Self.bytes("12001800"))
        #expect(db.attributes[0x11].type == GATTUUID.secondaryService)
        #expect(db.attributes[0x11].value == BluetoothUUID("1234ABCD")!.littleEndian128)
        let decl = db.attributes[0x12]
        #expect(decl.value == [0xAA, 0x14, 0x00] + BluetoothUUID("8c3b0001-5e1f-4a0b-9a53-6f6b2c3d4e50")!.littleEndian128)
        #expect(db.attributes[0x13].type == BluetoothUUID("8c3b0001-5e1f-4a0b-9a53-6f6b2c3d4e50")!)
        #expect(db.attributes[0x13].permissions == [.readable, .writeable])
        #expect(db.attributes[0x14].type == GATTUUID.clientCharacteristicConfiguration)
        #expect(db.attributes[0x14].permissions == [.readable, .writeable])
        #expect(db.attributes[0x15].type == GATTUUID.extendedProperties && db.attributes[0x15].value == [0x03, 0x00])
        #expect(db.attributes[0x16].type == GATTUUID.userDescription && db.attributes[0x16].value == [0x58])
        #expect(db.attributes[0x16].permissions == [.readable, .writeable])  // writable_auxiliaries
        #expect(db.attributes[0x17].type == BluetoothUUID(uuid16: 0x2906) && db.attributes[0x17].value == [0x00, 0x10])
        #expect(db.attributes.count == 0x18)
    }

    @Test func noAutoDescriptorsWhenNotNeeded() throws {
        let db = try ConfigFixture.load(#"{"name": "A", "services": [{"uuid": "180F", "characteristics": [{"uuid": "2A19", "properties": ["read"]}]}]}"#).makeDatabase()
        #expect(db.attributes.count == 0x12)
        #expect(db.characteristics[6].cccdHandle == nil && db.characteristics[6].userDescriptionHandle == nil)
        #expect(db.characteristics[6].endHandle == 0x12)
    }

    @Test func attributeTableOfHeartRate() throws {
        let table = AttributeTable.render(try ConfigFixture.heartRate().makeDatabase())
        let expected = """
            Handle  Attribute             UUID                                      Properties   Permissions         Notes                               Value
            ------  --------------------  ----------------------------------------  -----------  ------------------  ----------------------------------  ------------------------------------------------
            0x0001  Primary Service       1800 Generic Access                                    readable            id=gap end=0x0005                   0018
            0x0002  Characteristic        2A00 Device Name                          read         readable                                                020300002a
            0x0003  Characteristic Value  2A00 Device Name                          read         readable            id=device_name max=248              44656d6f2048656172742052617465 "Demo Heart Rate"
            0x0004  Characteristic        2A01 Appearance                           read         readable                                                020500012a
            0x0005  Characteristic Value  2A01 Appearance                           read         readable            id=appearance max=2                 4003
            0x0006  Primary Service       1801 Generic Attribute                                 readable            id=gatt end=0x000F                  0118
            0x0007  Characteristic        2A05 Service Changed                      indicate     readable                                                200800052a
            0x0008  Characteristic Value  2A05 Service Changed                      indicate     none                id=service_changed max=4            0100ffff
            0x0009  CCCD                  2902 Client Characteristic Configuration               readable,writeable                                      0000 (per connection)
            0x000A  Characteristic        2B29 Client Supported Features            read,write   readable                                                0a0b00292b
            0x000B  Characteristic Value  2B29 Client Supported Features            read,write   readable,writeable  id=client_supported_features max=1  00
            0x000C  Characteristic        2B2A Database Hash                        read         readable                                                020d002a2b
            0x000D  Characteristic Value  2B2A Database Hash                        read         readable            id=database_hash max=16             71c664b220e160fd247703b032a6aa50
            0x000E  Characteristic        2B3A Server Supported Features            read         readable                                                020f003a2b
            0x000F  Characteristic Value  2B3A Server Supported Features            read         readable            id=server_supported_features max=1  00
            0x0010  Primary Service       180D Heart Rate                                        readable            id=hr end=0x0016                    0d18
            0x0011  Include               180F Battery                                           readable            0x0017...0x001A                     17001a000f18
            0x0012  Characteristic        2A37 Heart Rate Measurement               notify       readable                                                101300372a
            0x0013  Characteristic Value  2A37 Heart Rate Measurement               notify       readable            id=hr_measurement max=20            0048
            0x0014  CCCD                  2902 Client Characteristic Configuration               readable,writeable                                      0000 (per connection)
            0x0015  User Description      2901 Characteristic User Description                   readable                                                48656172742052617465 "Heart Rate"
            0x0016  Presentation Format   2904 Characteristic Presentation Format                readable                                                0400af27010000
            0x0017  Primary Service       180F Battery                                           readable            id=battery end=0x001A               0f18
            0x0018  Characteristic        2A19 Battery Level                        read,notify  readable                                                121900192a
            0x0019  Characteristic Value  2A19 Battery Level                        read,notify  readable            id=level max=512                    64
            0x001A  CCCD                  2902 Client Characteristic Configuration               readable,writeable                                      0000 (per connection)

            """
        #expect(table == expected)
    }

    @Test func assignedNumbers() {
        #expect(AssignedNumbers.name(of: 0x180D) == "Heart Rate")
        #expect(AssignedNumbers.describe(0x2A37) == "2A37 Heart Rate Measurement")
        #expect(AssignedNumbers.describe(BluetoothUUID("1234ABCD")!) == "1234ABCD")
        for u: UInt16 in [0x2A00, 0x2A01, 0x2A05, 0x2A19, 0x2A37, 0x2A38, 0x2A29, 0x2A24, 0x2A25, 0x2A26, 0x2A27, 0x2A28,
                          0x2A6E, 0x2A6F, 0x2B29, 0x2B2A, 0x2B3A, 0x2800, 0x2801, 0x2802, 0x2803] + Array(0x2900...0x2908) {
            #expect(AssignedNumbers.names[u] != nil, "\(u)")
        }
    }
}
