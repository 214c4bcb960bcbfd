import Testing
@testable import GattCore
import GattTestFixtures

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
        let database = try ConfigLoader.load(data: Array(config.utf8)).gatt.makeDatabase()
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
        let auth = Self.handle(h, 6), enc = Self.handle(h, 7)
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

    /// §10.3.1: an encrypted link whose key is shorter than the minimum gets Insufficient
    /// Encryption Key Size (0x0C) — for reads, writes, and a CCCD write enabling notifications
    /// of a notify-encryption-required characteristic; authentication is checked first.
    @Test func aKeyShorterThanTheMinimumGetsInsufficientEncryptionKeySize() throws {
        let config = #"""
            {"name": "x", "services": [{"uuid": "AAA0", "characteristics": [
              {"uuid": "AAA1", "properties": ["read", "write"], "permissions": ["read_authentication_required", "write_authentication_required"], "value": {"hex": "01"}},
              {"uuid": "AAA2", "properties": ["read", "write"], "permissions": ["read_encryption_required", "write_encryption_required"], "value": {"hex": "02"}},
              {"uuid": "AAA3", "properties": ["notify", "notify_encryption_required"], "value": {"hex": "03"}}
            ]}]}
            """#
        var configuration = ATTServerConfiguration()
        configuration.minimumKeySize = 16
        var h = ATTHarness()
        h.server = ATTServer(database: try ConfigLoader.load(data: Array(config.utf8)).gatt.makeDatabase(), configuration: configuration)
        h.server.connect(h.c1, security: .low)
        let auth = Self.handle(h, 6), enc = Self.handle(h, 7)
        let cccd = h.server.database.characteristics[8].valueHandle.rawValue + 1
        func le(_ v: UInt16) -> [UInt8] { [UInt8(v & 0xFF), UInt8(v >> 8)] }
        // Encrypted with a 7-octet key (a bond from a laxer config): 0x0C.
        h.server.setSecurity(h.c1, .medium, keySize: 7)
        #expect(h.request([0x0A] + le(enc)) == [0x01, 0x0A] + le(enc) + [0x0C])
        #expect(h.request([0x12] + le(enc) + [0x07]) == [0x01, 0x12] + le(enc) + [0x0C])
        #expect(h.request([0x0A] + le(auth)) == [0x01, 0x0A] + le(auth) + [0x05], "authentication is checked first")
        #expect(h.request([0x12] + le(cccd) + [0x01, 0x00]) == [0x01, 0x12] + le(cccd) + [0x0C])
        h.server.setSecurity(h.c1, .high, keySize: 15)
        #expect(h.request([0x0A] + le(auth)) == [0x01, 0x0A] + le(auth) + [0x0C])
        // A 16-octet key, or a transport that does not report the size: served.
        h.server.setSecurity(h.c1, .high, keySize: 16)
        #expect(h.request([0x0A] + le(auth)) == [0x0B, 0x01])
        #expect(h.request([0x12] + le(cccd) + [0x01, 0x00]) == [0x13])
        h.server.setSecurity(h.c1, .medium, keySize: nil)
        #expect(h.request([0x0A] + le(enc)) == [0x0B, 0x02])
    }

    @Test func permissionNamesParse() throws {
        let db = try ConfigLoader.load(data: Array(Self.config.utf8)).gatt
        #expect(db.services[0].characteristics[0].permissions == [.readAuthenticationRequired, .writeAuthenticationRequired])
    }
}
