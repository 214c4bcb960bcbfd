/// Who may read or write an attribute, and the value each client sees (Core Spec Vol 3
/// Part F §3.2.5 attribute permissions, Vol 3 Part C §10.3.1 security): the rules every read
/// and write applies, over the database and one client's state, whether it came as an ATT PDU
/// (`ATTReadRequests`, `ATTWriteRequests`) or as a GATT-level access (`GATTAccesses`).
struct AttributeAccessRules: Sendable {
    /// Encrypted links with a shorter key get Insufficient Encryption Key Size.
    let minimumKeySize: Int
    /// Index of the Client Supported Features characteristic (its value is per client).
    let clientFeaturesCharacteristic: CharacteristicIndex?

    /// Read permission of an attribute for client `b` (§3.2.5).
    func readError(_ a: Attribute, _ b: ATTClient) -> ATTError? {
        readError(a, security: b.security, keySize: b.keySize)
    }

    func readError(_ a: Attribute, security: SecurityLevel, keySize: Int?) -> ATTError? {
        guard a.permissions.canRead else { return .readNotPermitted }
        let authenticated = a.permissions.contains(.readAuthenticationRequired)
        guard authenticated || a.permissions.contains(.readEncryptionRequired) else { return nil }
        return ATTClient.securityError(security, keySize: keySize, authenticated: authenticated, minimumKeySize: minimumKeySize)
    }

    /// The ATT write procedures, each with the characteristic property it needs.
    enum WriteKind { case request, command, signed, prepare }

    /// Write permission of an attribute for client `b`; characteristic values also
    /// need the property of the write procedure used.
    func writeError(_ a: Attribute, _ b: ATTClient, _ kind: WriteKind, in database: GATTDatabase) -> ATTError? {
        guard a.permissions.canWrite else { return .writeNotPermitted }
        if case .characteristicValue(let c) = a.role {
            let p = database[c].properties
            let allowed: Bool
            switch kind {
            case .request: allowed = p.contains(.write)
            case .command: allowed = p.contains(.writeWithoutResponse)
            case .signed: allowed = p.contains(.authenticatedSignedWrites)
            case .prepare: allowed = !p.isDisjoint(with: [.write, .reliableWrite])
            }
            guard allowed else { return .writeNotPermitted }
        }
        let authenticated = a.permissions.contains(.writeAuthenticationRequired)
        guard authenticated || a.permissions.contains(.writeEncryptionRequired) else { return nil }
        return b.securityError(authenticated: authenticated, minimumKeySize: minimumKeySize)
    }

    /// The value client `b` sees: CCCDs and Client Supported Features are per client.
    func currentValue(_ a: Attribute, _ b: ATTClient) -> [UInt8] {
        switch a.role {
        case .clientCharacteristicConfiguration(let c):
            return le16(b.cccd[c] ?? 0)
        case .characteristicValue(let c) where c == clientFeaturesCharacteristic:
            return b.clientFeatures
        default:
            return a.value
        }
    }

    /// Checks a complete new value before it is stored.
    func validateValue(_ a: Attribute, _ v: [UInt8], _ b: ATTClient, in database: GATTDatabase) -> ATTError? {
        switch a.role {
        case .clientCharacteristicConfiguration(let c):
            guard v.count == 2 else { return .invalidAttributeValueLength }
            let bits = UInt16(v[0]) | UInt16(v[1]) << 8
            guard bits & ~0x0003 == 0 else { return .valueNotAllowed }
            let p = database[c].properties
            let notify = bits & 0x0001 != 0, indicate = bits & 0x0002 != 0
            if notify && !p.canNotify || indicate && !p.canIndicate { return .cccdImproperlyConfigured }
            if notify && p.contains(.notifyEncryptionRequired) || indicate && p.contains(.indicateEncryptionRequired) {
                return b.securityError(authenticated: false, minimumKeySize: minimumKeySize)
            }
            return nil
        case .characteristicValue(let c) where c == clientFeaturesCharacteristic:
            guard v.count <= a.maxLength else { return .invalidAttributeValueLength }
            // Bits may not be cleared once set (Vol 3 Part G §7.2).
            for (i, old) in b.clientFeatures.enumerated() where old & ~(i < v.count ? v[i] : 0) != 0 {
                return .valueNotAllowed
            }
            return nil
        default:
            return v.count <= a.maxLength ? nil : .invalidAttributeValueLength
        }
    }

    /// The characteristic index when `a` is the value of a `.deferred` characteristic.
    static func deferredCharacteristic(_ a: Attribute, in database: GATTDatabase) -> CharacteristicIndex? {
        guard case .characteristicValue(let c) = a.role, database[c].valueSource == .deferred else { return nil }
        return c
    }

    /// The characteristic index when `a` is the value of a `.persisted` characteristic.
    static func persistedCharacteristic(_ a: Attribute, in database: GATTDatabase) -> CharacteristicIndex? {
        guard case .characteristicValue(let c) = a.role, database[c].valueSource == .persisted else { return nil }
        return c
    }

    /// Stores a validated value in the database or the client's state, and emits the event
    /// that goes with it (client `b` is connection `id`).
    func apply(_ h: AttributeHandle, _ v: [UInt8], database: inout GATTDatabase, client b: inout ATTClient, _ id: ConnectionID, into outputs: inout [ATTServerOutput]) {
        guard let a = database.attribute(at: h) else { return }
        switch a.role {
        case .clientCharacteristicConfiguration(let c):
            let old = b.writeCCCD(c, v)
            let bits = b.cccd[c] ?? 0
            if old != bits {
                outputs.append(.event(.subscriptionChanged(id, characteristic: c, notify: bits & 1 != 0, indicate: bits & 2 != 0)))
            }
        case .characteristicValue(let c) where c == clientFeaturesCharacteristic:
            if b.writeClientFeatures(v) { outputs.append(.event(.clientFeaturesChanged(id, features: b.clientFeatures))) }
        case .characteristicValue(let c):
            database.setValue(v, at: h)
            outputs.append(.event(.written(id, characteristic: c, value: v)))
        default:
            database.setValue(v, at: h)
            outputs.append(.event(.descriptorWritten(id, handle: h, value: v)))
        }
    }
}
