// The advertising sets as the peripheral's users see them (`AdvertisingSets` is the one model:
// the primary set, the config's `advertising`, first among the config's `advertising_sets`).
// The primary set is on the air while the controller is up, the `advertise` op leaves it on,
// gattd is not stopping and fewer than `max_connections` centrals are connected; another set
// likewise, the connection limit counting only when it is connectable, and after a refusal it
// waits for a disconnection, a reload, the op or new data. A connection to one set leaves the
// others on the air.
extension Peripheral {
    /// The primary set's state (`.noController` while there is none).
    public var advertising: AdvertisingState { sets.primaryState }
    /// Whether the primary set is on the air, as its transport last reported.
    public var isAdvertising: Bool { sets.primary.onAir }
    /// Whether the `advertise` control op wants the primary set.
    public var advertisingWanted: Bool { sets.wanted(AdvertisingSet.primaryID) }
    /// The primary set's payloads (the config's `advertising`).
    public var payloads: AdvertisingPayloads { sets.primary.set.payloads }
    /// The config's `advertising_sets`: advertised beside the primary set.
    public var otherSets: [AdvertisingSet] { sets.otherSets }

    /// The primary set as the transport gets it.
    public var primarySet: AdvertisingSet { sets.primary.set }

    /// Every set, the primary first.
    public var allSets: [AdvertisingSet] { sets.sets }

    /// Whether the set with this id is on the air, as the transport reported.
    public func isOnAir(_ id: String) -> Bool { sets.isOnAir(id) }

    /// New payloads for one set, keeping everything else (the `advertising_data` control op):
    /// the transport gets the list of sets again only when they changed and the set is wanted
    /// on the air. An unknown id changes nothing.
    public mutating func replaceSet(_ set: AdvertisingSet) -> [PeripheralOutput] {
        guard sets.replace(set, advertisingConditions) else { return [] }
        return reconcileAdvertising()
    }
}
