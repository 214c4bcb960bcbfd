import Testing
@testable import GattCore

/// Permissions against the link's security (Core Spec Vol 3 Part C §10.3.1): Insufficient
/// Authentication (0x05) for authentication-required attributes on a link without an
/// authenticated key, Insufficient Encryption (0x0F) for encryption-required ones on a
/// link without encryption.
@Suite struct ATTServerSecurityTests {
    static let config = #"""
        {"name": "x", "services": [{"uuid": "AAA0", "characteristics": [
          {"uuid": "AAA1", "properties": ["read", "write"], "permissions": ["read_authentication_required", "write_authentication_required"], "value": {"hex": "01"}},
          {"uuid": "AAA2", "properties": ["read", "write"], "permissions": ["read_encryption_required", "write_encryption_required"], "value": {"hex": "02"}}
        ]}]}
        """#

    static func server(_ level: SecurityLevel) throws -> ATTHarness {
        var h = ATTHarness()
        let database = try ConfigLoader.load(data: Array(config.utf8)).makeDatabase()
        h.server = ATTServer(database: database)
        h.server.connect(h.c1, security: level)
        return h
    }

    /// Characteristics 0–4 are the built-in GAP and GATT ones.
    static func handle(_ h: ATTHarness, _ c: Int) -> UInt16 { h.server.database.characteristics[c].valueHandle.rawValue }

    @Test(arguments: [
        (SecurityLevel.low, UInt8(0x05), UInt8(0x0F)),
        (.medium, 0x05, nil),
        (.high, nil, nil),
    ] as [(SecurityLevel, UInt8?, UInt8?)])
    func readsAndWritesNeedTheirLevel(level: SecurityLevel, authenticated: UInt8?, encrypted: UInt8?) throws {
        var h = try Self.server(level)
        let auth = Self.handle(h, 5), enc = Self.handle(h, 6)
        for (handle, error, value) in [(auth, authenticated, UInt8(0x01)), (enc, encrypted, 0x02)] {
            let lo = UInt8(handle & 0xFF), hi = UInt8(handle >> 8)
            let read = h.request([0x0A, lo, hi])
            let write = h.request([0x12, lo, hi, 0x07])
            if let error {
                #expect(read == [0x01, 0x0A, lo, hi, error])
                #expect(write == [0x01, 0x12, lo, hi, error])
            } else {
                #expect(read == [0x0B, value])
                #expect(write == [0x13])
            }
        }
    }

    @Test func permissionNamesParse() throws {
        let db = try ConfigLoader.load(data: Array(Self.config.utf8))
        #expect(db.services[0].characteristics[0].permissions == [.readAuthenticationRequired, .writeAuthenticationRequired])
    }
}
