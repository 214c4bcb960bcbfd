/// The advertising set derived from an `AdvertisingConfiguration`: the two payloads,
/// the advertising parameters, the PDU kind and (legacy PDUs) the HCI commands that
/// install them.
public struct AdvertisingPayloads: Sendable, Hashable {
    /// AD structures for LE Set (Extended) Advertising Data: at most `advertisingDataCapacity` bytes.
    public var advertisingData: [UInt8]
    /// AD structures for LE Set (Extended) Scan Response Data: at most `scanResponseCapacity`
    /// bytes (empty when not scannable).
    public var scanResponseData: [UInt8]
    /// The interval, the own address type, and the PDU type: for extended PDUs the legacy
    /// type with the same connectable and scannable properties (see `isScannable`).
    public var parameters: AdvertisingParameters
    /// True when the configuration is an iBeacon alone (see `AdvertisingPayloadBuilder`)
    /// and was therefore made non-connectable.
    public var isBeaconOnly: Bool
    /// Where the name, the UUID lists and the other fields went (for warnings and logs).
    public var facts: AdvertisingFacts
    /// Legacy or extended PDUs (and the PHYs of an extended set).
    public var pdus: AdvertisingPDUs

    public init(
        advertisingData: [UInt8], scanResponseData: [UInt8], parameters: AdvertisingParameters, isBeaconOnly: Bool,
        facts: AdvertisingFacts = AdvertisingFacts(), pdus: AdvertisingPDUs = .legacy
    ) {
        self.advertisingData = advertisingData
        self.scanResponseData = scanResponseData
        self.parameters = parameters
        self.isBeaconOnly = isBeaconOnly
        self.facts = facts
        self.pdus = pdus
    }

    /// Whether a central may connect (ADV_IND, or a connectable extended set).
    public var isConnectable: Bool { parameters.advertisingType.isConnectable }

    /// Whether scanners may ask for the scan response: ADV_IND and ADV_SCAN_IND; an
    /// extended set only when it is not connectable (Vol 4 Part E §7.8.53).
    public var isScannable: Bool {
        pdus.isExtended ? parameters.advertisingType == .scannableUndirected : parameters.advertisingType.isScannable
    }

    /// Advertising_Event_Properties for LE Set Extended Advertising Parameters (Vol 4 Part E
    /// §7.8.53): legacy PDUs as Table 7.2 gives them (ADV_IND 0x0013, ADV_SCAN_IND 0x0012,
    /// ADV_NONCONN_IND 0x0010); extended PDUs connectable (0x0001), scannable (0x0002) or neither.
    public var advertisingEventProperties: AdvertisingEventProperties {
        guard pdus.isExtended else { return AdvertisingEventProperties(legacy: parameters.advertisingType) }
        var properties: AdvertisingEventProperties = []
        if isConnectable { properties.insert(.connectable) }
        if isScannable { properties.insert(.scannable) }
        return properties
    }

    /// The most bytes the advertising data may hold with these PDUs and this type.
    public var advertisingDataCapacity: Int {
        AdvertisingPayloadBuilder.capacity(pdus: pdus, type: parameters.advertisingType).advertising
    }

    /// The most bytes the scan response may hold (0: not scannable).
    public var scanResponseCapacity: Int {
        AdvertisingPayloadBuilder.capacity(pdus: pdus, type: parameters.advertisingType).scanResponse
    }

}
