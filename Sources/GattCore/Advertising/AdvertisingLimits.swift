/// What the controller (or the kernel) can advertise, for checking built sets at start:
/// LE Read Number of Supported Advertising Sets and LE Read Maximum Advertising Data
/// Length (Core Spec Vol 4 Part E §7.8.58, §7.8.57), or mgmt Read Advertising Features.
public struct AdvertisingLimits: Sendable, Hashable {
    /// How many sets the controller (or the kernel) takes; nil: no limit (legacy advertising
    /// on the H4 host, whose sets take turns on the controller's one set).
    public var numberOfSets: Int?
    /// The most bytes of advertising data, and of scan response data, one set takes
    /// (every byte of the payload, the flags included).
    public var maximumDataLength: Int
    /// Whether extended advertising PDUs can be sent (LE Extended Advertising).
    public var extendedPDUs: Bool
    /// Whether several sets take turns on the controller's one legacy advertising set
    /// (gattd's H4 host, or the kernel, gives each a slice of time) rather than all being
    /// on the air at once.
    public var setsTakeTurns: Bool

    public init(numberOfSets: Int?, maximumDataLength: Int, extendedPDUs: Bool, setsTakeTurns: Bool? = nil) {
        self.numberOfSets = numberOfSets
        self.maximumDataLength = maximumDataLength
        self.extendedPDUs = extendedPDUs
        self.setsTakeTurns = setsTakeTurns ?? (numberOfSets == nil)
    }

    /// Legacy advertising only: the sets take turns, 31 bytes per payload, no extended PDUs.
    public static let legacy = AdvertisingLimits(numberOfSets: nil, maximumDataLength: AdvertisingPayloadBuilder.maximumDataLength, extendedPDUs: false)

    /// What does not fit, in set order (the primary first, as `GattConfiguration.allAdvertisingSets()`
    /// lists them), each naming the set's config path: a set with extended PDUs where there
    /// are none (`PATH.extended`), each set beyond `numberOfSets`, and each payload longer than
    /// `maximumDataLength`. Empty when everything fits.
    public func violations(of sets: [AdvertisingSet]) -> [AdvertisingPayloadError] {
        var out: [AdvertisingPayloadError] = []
        for (i, set) in sets.enumerated() {
            if let n = numberOfSets, i >= n {
                out.append(.tooManySets(field: set.path, set: i + 1, configured: sets.count, supported: n))
                continue
            }
            if set.payloads.pdus.isExtended, !extendedPDUs {
                out.append(.extendedNotSupported(field: set.path + ".extended"))
                continue
            }
            for (name, payload) in [("advertising data", set.payloads.advertisingData), ("scan response", set.payloads.scanResponseData)]
            where payload.count > maximumDataLength {
                out.append(.exceedsControllerLimit(field: set.path, payload: name, length: payload.count, maximum: maximumDataLength))
            }
        }
        return out
    }
}
