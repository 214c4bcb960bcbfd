extension GATTDatabase {
    /// The characteristics every database starts with, by their index in
    /// `characteristics`: the GAP service's (Core Spec Vol 3 Part C §12) and the GATT
    /// service's (Vol 3 Part G §7). User characteristics follow them.
    public enum BuiltIn: Int, CaseIterable, Sendable {
        case deviceName = 0
        case appearance = 1
        case serviceChanged = 2
        case clientSupportedFeatures = 3
        case databaseHash = 4
        /// Server Supported Features (Vol 3 Part G §7.4): read-only, bit 0 = EATT Supported.
        case serverSupportedFeatures = 5

        /// The index in `GATTDatabase.characteristics`.
        public var index: Int { rawValue }
        /// How many built-in characteristics precede the configured ones.
        public static var count: Int { allCases.count }
        /// The ones whose values are not covered by the Database Hash and may change on reload.
        public static let gapValues: [BuiltIn] = [.deviceName, .appearance]
    }

    /// Server Supported Features bit 0: EATT Supported (Vol 3 Part G §7.4).
    public static let enhancedATTSupportedFeature: UInt8 = 0x01

    /// Whether Server Supported Features says EATT Supported (bit 0).
    public var enhancedATTSupported: Bool {
        (value(ofCharacteristic: BuiltIn.serverSupportedFeatures.index).first ?? 0) & Self.enhancedATTSupportedFeature != 0
    }

    /// Sets or clears Server Supported Features' EATT Supported bit (not covered by the
    /// Database Hash: the value is no part of the hash, §7.3.1).
    public mutating func setEnhancedATTSupported(_ on: Bool) {
        setValue([on ? Self.enhancedATTSupportedFeature : 0x00], at: characteristics[BuiltIn.serverSupportedFeatures.index].valueHandle)
    }

    /// The Database Hash value (Vol 3 Part G §7.3).
    public var databaseHash: [UInt8] { attribute(at: databaseHashHandle)?.value ?? [] }
}
