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

        /// The index in `GATTDatabase.characteristics`.
        public var index: Int { rawValue }
        /// How many built-in characteristics precede the configured ones.
        public static var count: Int { allCases.count }
        /// The ones whose values are not covered by the Database Hash and may change on reload.
        public static let gapValues: [BuiltIn] = [.deviceName, .appearance]
    }

    /// The Database Hash value (Vol 3 Part G §7.3).
    public var databaseHash: [UInt8] { attribute(at: databaseHashHandle)?.value ?? [] }
}
