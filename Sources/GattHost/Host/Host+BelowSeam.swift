import GattCore

/// The H4 host is a half below the seam: the daemon's stack (`PeripheralStack<H4Host>`) calls
/// these members on it through `H4Host`. Its packets go to the shell, its transport events to
/// the core.
extension Host: BelowSeam {
    public static func route(_ output: HostOutput) -> BelowSeamRoute {
        switch output {
        case .event(.transport(let e)): .core(e)
        case .event(.fatal(let reason)): .fatal(reason: reason)
        case .send, .event(.controllerReady), .event(.warning), .event(.channel): .shell
        }
    }

    /// A Security Request (Vol 3 Part H §3.6.7) whatever the level: the central picks the
    /// pairing method from our features.
    public mutating func requestSecurity(_ id: ConnectionID, level: SecurityLevel, reason: ATTError, now: Duration) -> [HostOutput] {
        requestSecurity(id, now: now)
    }

    /// Our IRK: identity distribution and private addresses (from the next start on).
    public mutating func setLocalIRK(_ irk: [UInt8]) { configuration.localIRK = irk }

    /// Reload: a config's host settings, keeping the random address and IRK already set.
    public mutating func configure(_ configuration: GattConfiguration, now: Duration) -> [HostOutput] {
        updateConfiguration(HostConfiguration(configuration), now: now)
    }

    /// The host serves ATT over its own bearers: it never reports a GATT-level access.
    public func answerGATT(_ id: GATTAccessID, _ result: Result<[UInt8], ATTError>, now: Duration) -> [HostOutput] { [] }
    /// Nor GATT-level subscribers.
    public func updateGATT(_ handle: AttributeHandle, _ value: [UInt8], now: Duration) -> [HostOutput] { [] }
}
