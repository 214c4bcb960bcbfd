/// What a program asks of one central's link (the control socket's `connection_parameters`).
public enum LinkRequest: Sendable, Equatable {
    /// New connection parameters: LE Connection Update as peripheral (the LL Connection
    /// Parameters Request procedure, Vol 6 Part B §5.1.7) or the L2CAP Connection Parameter
    /// Update Request (Vol 3 Part A §4.20).
    case connectionParameters(LEConnectionParameters)
    /// The PHYs to use each way (LE Set PHY, Vol 4 Part E §7.8.49; the central may choose
    /// otherwise); `coding`: the LE Coded PHY's preferred coding.
    case phy(tx: LEPHY, rx: LEPHY, coding: LECodedPHYCoding)
    /// The largest LL Data PDU payload to send (27...251 octets; LE Set Data Length, Vol 4
    /// Part E §7.8.33); what each side then uses arrives as LE Data Length Change.
    case dataLength(txOctets: UInt16)

    public var kind: LinkRequestKind {
        switch self {
        case .connectionParameters: .connectionParameters
        case .phy: .phy
        case .dataLength: .dataLength
        }
    }
}

/// PHY_Options of LE Set PHY (§7.8.49): the coding preferred when transmitting on LE Coded.
public enum LECodedPHYCoding: UInt16, Sendable, Hashable, CaseIterable {
    case noPreference = 0
    /// S=2 (500 kb/s).
    case s2 = 1
    /// S=8 (125 kb/s, the longest range).
    case s8 = 2
}

/// Which `LinkRequest` a `TransportEvent.linkRequestFinished` answers.
public enum LinkRequestKind: String, Sendable, Hashable, CaseIterable {
    case connectionParameters = "connection_parameters"
    case phy
    case dataLength = "data_length"
}

/// How a `LinkRequest` ended.
public enum LinkRequestResult: Sendable, Equatable {
    /// The controller carried it out (LE Connection Update Complete, success).
    case accepted
    /// The central, the controller or the transport refused it; why, for the reply.
    case refused(String)
}

/// The named connection parameters of the `connection_parameters` op, each within the Core
/// Specification's and Apple's rules (`PreferredConnectionParameters.violations()`).
public enum ConnectionParameterPreset: String, Sendable, Hashable, CaseIterable {
    /// 15 ms, latency 0, 2 s: the shortest interval Apple's rules allow (Android's
    /// CONNECTION_PRIORITY_HIGH asks 11.25–15 ms).
    case lowLatency = "low_latency"
    /// 30–50 ms, latency 0, 5 s (Android's CONNECTION_PRIORITY_BALANCED).
    case balanced
    /// 120–150 ms, latency 2, 6 s (about Android's CONNECTION_PRIORITY_LOW_POWER, 100–125 ms, on Apple's 15 ms grid).
    case lowPower = "low_power"

    public var parameters: PreferredConnectionParameters {
        switch self {
        case .lowLatency: PreferredConnectionParameters(intervalMinMs: 15, intervalMaxMs: 15, latency: 0, timeoutMs: 2000)
        case .balanced: PreferredConnectionParameters(intervalMinMs: 30, intervalMaxMs: 50, latency: 0, timeoutMs: 5000)
        case .lowPower: PreferredConnectionParameters(intervalMinMs: 120, intervalMaxMs: 150, latency: 2, timeoutMs: 6000)
        }
    }
}
