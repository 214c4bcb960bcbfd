import GattCore

/// The database the ATT tests run against. Handles (checked by
/// `ATTServerDiscoveryTests.layout`):
///   0x0001 GAP service … 0x0003 Device Name "gattd", 0x0005 Appearance
///   0x0006 GATT service, 0x0008 Service Changed (0x0009 CCCD), 0x000B Client
///   Supported Features, 0x000D Database Hash, 0x000F Server Supported Features
///   0x0010 service 0xAAA0 … 0x0028
///     c6  rw        0x0012 read/write/write-without-response, max 20, value 01 02
///     c7  notify    0x0014 read/notify/indicate, CCCD 0x0015
///     c8  secure    0x0017 read/write with encryption
///     c9  noread    0x0019 write only
///     c10 long      0x001B 100 bytes 0…99, reliable write; ext 0x001C, user desc 0x001D
///     c11 control   0x001F control handler, CCCD 0x0020
///     c12 signed    0x0022 authenticated signed writes
///     c13 reliable2 0x0024 4 bytes, reliable write; ext 0x0025
///     c14 notifyOnly 0x0027, CCCD 0x0028
///   0x0029 service 6e400001-… (128-bit), char decl 0x002A, value 0x002B
package enum ATTFixture {
    package static let uart = BluetoothUUID("6e400001-b5a3-f393-e0a9-e50e24dcca9e")!
    package static let uartRX = BluetoothUUID("6e400002-b5a3-f393-e0a9-e50e24dcca9e")!

    package static func database() -> GATTDatabase {
        let a = ServiceDefinition(
            id: "a", uuid: 0xAAA0,
            characteristics: [
                CharacteristicDefinition(id: "rw", uuid: 0xAAA1, properties: [.read, .write, .writeWithoutResponse], value: [0x01, 0x02], maxLength: 20),
                CharacteristicDefinition(id: "notify", uuid: 0xAAA2, properties: [.read, .notify, .indicate], value: []),
                CharacteristicDefinition(
                    id: "secure", uuid: 0xAAA3, properties: [.read, .write],
                    permissions: [.readEncryptionRequired, .writeEncryptionRequired], value: [0x55], maxLength: 8),
                CharacteristicDefinition(id: "noread", uuid: 0xAAA4, properties: [.write], value: []),
                CharacteristicDefinition(
                    id: "long", uuid: 0xAAA5, properties: [.read, .write, .reliableWrite],
                    value: (0..<100).map { UInt8($0) }, userDescription: "Long"),
                CharacteristicDefinition(
                    id: "control", uuid: 0xAAA6, properties: [.read, .write, .writeWithoutResponse, .notify],
                    value: [0xC0], maxLength: 64, valueSource: .deferred),
                CharacteristicDefinition(id: "signed", uuid: 0xAAA7, properties: [.read, .authenticatedSignedWrites], value: [], maxLength: 20),
                CharacteristicDefinition(id: "reliable2", uuid: 0xAAA8, properties: [.read, .write, .reliableWrite], value: [0, 0, 0, 0], maxLength: 4),
                CharacteristicDefinition(id: "notifyOnly", uuid: 0xAAA9, properties: [.notify], value: []),
            ])
        let b = ServiceDefinition(
            id: "b", uuid: uart,
            characteristics: [CharacteristicDefinition(uuid: uartRX, properties: [.read], value: [0x42])])
        return GATTDatabase(deviceName: "gattd", appearance: 0x0340, services: [a, b])
    }

    package static let rw = CharacteristicIndex(6), notify = CharacteristicIndex(7), secure = CharacteristicIndex(8), noread = CharacteristicIndex(9), long = CharacteristicIndex(10)
    package static let control = CharacteristicIndex(11), signed = CharacteristicIndex(12), reliable2 = CharacteristicIndex(13), notifyOnly = CharacteristicIndex(14)
}

/// Drives an `ATTServer` the way a transport would and collects what comes out.
package struct ATTHarness {
    package var server: ATTServer
    package let c1 = ConnectionID(1)
    package let c2 = ConnectionID(2)
    /// Events of the last call.
    package var events: [ATTServerEvent] = []
    /// Connections whose unenhanced bearer the server asked to close (their links).
    package var closed: [(ConnectionID, ATTBearerCloseReason)] = []
    /// Enhanced ATT bearers the server asked to close.
    package var closedBearers: [(BearerID, ATTBearerCloseReason)] = []
    /// Answers to GATT-level accesses, and GATT-level updates, in order.
    package var gattAnswers: [(GATTAccessID, Result<[UInt8], ATTError>)] = []
    package var gattUpdates: [(AttributeHandle, [UInt8])] = []

    package init(configuration: ATTServerConfiguration = ATTServerConfiguration(), security: SecurityLevel = .low, connections: Int = 1) {
        server = ATTServer(database: ATTFixture.database(), configuration: configuration)
        server.connect(c1, security: security)
        if connections > 1 { server.connect(c2, security: security) }
    }

    package mutating func absorb(_ outputs: [ATTServerOutput]) {
        for o in outputs {
            switch o {
            case .event(let e): events.append(e)
            case .closeBearer(let id, let r) where id.isEnhanced: closedBearers.append((id, r))
            case .closeBearer(let id, let r): closed.append((id.connection, r))
            case .outgoingAvailable: break
            case .gattAnswer(let id, let result): gattAnswers.append((id, result))
            case .gattUpdate(let h, let v): gattUpdates.append((h, v))
            }
        }
    }

    /// Sends a PDU and returns every PDU the server queued for that connection.
    package mutating func send(_ pdu: [UInt8], from id: ConnectionID? = nil, now: Duration = .zero) -> [[UInt8]] {
        events = []
        let conn = id ?? c1
        absorb(server.receive(pdu, from: .fixed(conn), now: now))
        return drain(conn)
    }

    /// Sends a PDU that must be answered by exactly one PDU, and returns it.
    package mutating func request(_ pdu: [UInt8], from id: ConnectionID? = nil, now: Duration = .zero) -> [UInt8] {
        let out = send(pdu, from: id, now: now)
        return out.count == 1 ? out[0] : [0xEE, UInt8(truncatingIfNeeded: out.count)]
    }

    package mutating func drain(_ id: ConnectionID) -> [[UInt8]] {
        var out: [[UInt8]] = []
        while let (pdu, outputs) = server.dequeueOutgoing(for: .fixed(id)) {
            out.append(pdu)
            absorb(outputs)
        }
        return out
    }

    package mutating func exchangeMTU(_ mtu: UInt16, from id: ConnectionID? = nil) {
        _ = send([0x02, UInt8(mtu & 0xFF), UInt8(mtu >> 8)], from: id)
    }

    /// Enables notifications (1), indications (2) or both on a CCCD.
    package mutating func subscribe(_ cccd: UInt16, _ bits: UInt8, from id: ConnectionID? = nil) {
        _ = send([0x12, UInt8(cccd & 0xFF), UInt8(cccd >> 8), bits, 0x00], from: id)
    }
}

/// Deterministic PRNG for the fuzz test (SplitMix64).
package struct SplitMix64: RandomNumberGenerator {
    package var state: UInt64
    package init(seed: UInt64) { state = seed }
    package mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
