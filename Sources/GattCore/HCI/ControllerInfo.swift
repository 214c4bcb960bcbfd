/// What the controller is and can do, read when a transport brings it up: logged once,
/// carried by `TransportEvent.ready`, shown by `status` and `gattd --probe`.
public struct ControllerInfo: Sendable, Equatable {
    public var address: BluetoothAddress = .zero
    public var version: HCILocalVersionInformation?
    public var leFeatures: LEFeatures = []
    public var aclDataPacketLength = 27
    public var totalACLDataPackets = 1
    /// The advertising commands the controller gets until its next reset (from the H4 host,
    /// or from the kernel, which chooses as its LE features say).
    public var advertisingCommands: AdvertisingCommandSet = .legacy
    /// Who sends them, and so what fits and how, in words.
    public var advertisingOwner: AdvertisingOwner = .host
    /// Whether non-connectable advertising sets advertise from `address`, like connectable
    /// ones; false: from an address the advertiser picks itself (the kernel: a non-resolvable
    /// private one), which `status` then leaves out.
    public var nonConnectableSetsUseControllerAddress = true

    public init() {}

    /// Whether several advertising sets take turns on this controller (legacy advertising:
    /// one advertiser) rather than being on the air together (extended advertising).
    public var advertisingSetsTakeTurns: Bool { limits.setsTakeTurns }

    /// What advertising sets fit (`AdvertisingLimits.violations(of:)`).
    public var limits: AdvertisingLimits {
        switch (advertisingOwner, advertisingCommands) {
        case (.stack(let limits, _), _): limits
        case (.host, .legacy): .legacy
        case (.host, .extended(let sets, let length)): AdvertisingLimits(numberOfSets: sets, maximumDataLength: length, extendedPDUs: true)
        }
    }

    /// How the advertising sets go on the air, in words: "extended advertising (16 sets, 1650
    /// bytes of data per set)"; through the kernel, what its transport says.
    public var advertisingSummary: String {
        switch advertisingOwner {
        case .host: "\(advertisingCommands)"
        case .stack(_, let summary): summary
        }
    }

    /// One line for the log: address, then `details`.
    public var summary: String { "\(address): \(details)" }

    /// Version and manufacturer, LE features, LE ACL buffers, advertising.
    public var details: String {
        let v = version?.summary ?? "unknown version"
        let features = leFeatures.featureNames
        return "\(v); LE features: \(features.isEmpty ? "none" : features.joined(separator: ", ")); "
            + "LE ACL \(aclDataPacketLength) bytes x \(totalACLDataPackets); \(advertisingSummary)"
    }
}

/// Who drives the controller's advertising.
public enum AdvertisingOwner: Sendable, Equatable {
    /// gattd's H4 host, with `ControllerInfo.advertisingCommands`.
    case host
    /// The operating system's Bluetooth stack (the kernel, or bluetoothd), for gattd: the sets
    /// that fit and how they go on the air, in words (as that transport tells them).
    case stack(limits: AdvertisingLimits, summary: String)
}

/// The advertising commands the host gives a controller until its next reset: legacy or
/// extended, never both (Core Spec Vol 4 Part E §3.1.1).
public enum AdvertisingCommandSet: Sendable, Equatable, CustomStringConvertible {
    /// LE Set Advertising Parameters/Data/Scan Response Data/Enable (§7.8.5–§7.8.9).
    case legacy
    /// Advertising sets (§7.8.52–§7.8.60): LE Extended Advertising (LE feature bit 12) and
    /// its commands. `sets`: LE Read Number of Supported Advertising Sets;
    /// `maximumDataLength`: LE Read Maximum Advertising Data Length (octets per set).
    case extended(sets: Int, maximumDataLength: Int)

    public var description: String {
        switch self {
        case .legacy: "legacy advertising"
        case .extended(let sets, let length): "extended advertising (\(sets) sets, \(length) bytes of data per set)"
        }
    }
}
