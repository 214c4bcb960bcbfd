/// A range of attribute handles, as the Service Changed value carries it
/// (Core Spec Vol 3 Part G §7.1: Start of Affected Attribute Handle Range, End of it).
public struct HandleRange: Equatable, Hashable, Sendable, CustomStringConvertible {
    public var start: UInt16
    public var end: UInt16
    public init(start: UInt16, end: UInt16) {
        self.start = min(start, end)
        self.end = max(start, end)
    }
    /// 0x0001–0xFFFF: every handle (when what changed is not known).
    public static let all = HandleRange(start: 0x0001, end: 0xFFFF)
    /// The smallest range covering both.
    public func union(_ other: HandleRange?) -> HandleRange {
        guard let other else { return self }
        return HandleRange(start: Swift.min(start, other.start), end: Swift.max(end, other.end))
    }
    /// The Service Changed characteristic value (little-endian start, end).
    public var serviceChangedValue: [UInt8] { [UInt8(start & 0xFF), UInt8(start >> 8), UInt8(end & 0xFF), UInt8(end >> 8)] }
    public var description: String { "\(AttributeHandle(start))-\(AttributeHandle(end))" }
}

/// Whether a client's view of the database is current (Core Spec Vol 3 Part G §2.5.2.1).
/// A change-unaware client becomes change-aware when it confirms a Service Changed
/// indication, or when the server receives another ATT request after the client read the
/// Database Hash or after the server answered it Database Out Of Sync (one ATT bearer).
public enum ChangeAwareness: Equatable, Sendable {
    case changeAware
    case changeUnaware
    /// Change-unaware; it read the Database Hash: its next request makes it change-aware.
    case changeUnawareHashRead
    /// Change-unaware; it was sent Database Out Of Sync: its next request makes it change-aware.
    case changeUnawareOutOfSyncSent

    public var isChangeAware: Bool { self == .changeAware }
}

/// The GATT server's state for one client that persists across connections when the client
/// is bonded: the Client Characteristic Configuration of every characteristic (Vol 3 Part G
/// §3.3.3.3), the Client Supported Features (§7.2), the Database Hash of the database the
/// client is change-aware of (§2.5.2.1), and the range of a Service Changed still owed (§7.1).
public struct GATTClientState: Equatable, Sendable {
    /// CCCD bits (0x0001 notify, 0x0002 indicate) by characteristic key
    /// (`CharacteristicKeyMap.keys`: `id:<config id>`, else `uuid:<UUID>#<n>`); zero bits are left out.
    public var clientConfigurations: [String: UInt16]
    public var clientFeatures: [UInt8]
    /// The Database Hash the client last was change-aware of.
    public var databaseHash: [UInt8]
    /// A Service Changed indication the client has not confirmed yet: the affected range.
    public var serviceChangedOwed: HandleRange?

    public init(clientConfigurations: [String: UInt16] = [:], clientFeatures: [UInt8] = [0x00], databaseHash: [UInt8], serviceChangedOwed: HandleRange? = nil) {
        self.clientConfigurations = clientConfigurations
        self.clientFeatures = clientFeatures
        self.databaseHash = databaseHash
        self.serviceChangedOwed = serviceChangedOwed
    }

    /// Robust Caching bit of Client Supported Features (Vol 3 Part G §7.2, bit 0).
    public var robustCaching: Bool { (clientFeatures.first ?? 0) & 0x01 != 0 }

    /// The client must learn that the database became `newHash`, over `range`: unless it
    /// already is change-aware of it, the range joins the Service Changed owed.
    public mutating func databaseChanged(to newHash: [UInt8], range: HandleRange?) {
        guard databaseHash != newHash else { return }
        serviceChangedOwed = (range ?? .all).union(serviceChangedOwed)
    }
}
