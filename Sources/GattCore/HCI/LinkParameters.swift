/// What a transport knows of one LE link (Vol 6 Part B §4.5.1, §4.5.2, §5.1.10, §5.1.9): the
/// connection parameters the central chose, the PHYs and the data length. Nil where the
/// transport cannot know a value. Wire units: interval in 1.25 ms, latency in connection
/// events, supervision timeout in 10 ms, octets per LL Data PDU payload.
public struct LinkParameters: Sendable, Hashable, CustomStringConvertible {
    /// connInterval, in 1.25 ms (6...3200).
    public var connectionInterval: UInt16?
    /// connPeripheralLatency, in connection events (0...499).
    public var peripheralLatency: UInt16?
    /// connSupervisionTimeout, in 10 ms (10...3200).
    public var supervisionTimeout: UInt16?
    public var txPHY: LEPHY?
    public var rxPHY: LEPHY?
    /// connMaxTxOctets and connMaxRxOctets (27...251).
    public var maxTxOctets: UInt16?
    public var maxRxOctets: UInt16?

    public init(
        connectionInterval: UInt16? = nil, peripheralLatency: UInt16? = nil, supervisionTimeout: UInt16? = nil,
        txPHY: LEPHY? = nil, rxPHY: LEPHY? = nil, maxTxOctets: UInt16? = nil, maxRxOctets: UInt16? = nil
    ) {
        self.connectionInterval = connectionInterval
        self.peripheralLatency = peripheralLatency
        self.supervisionTimeout = supervisionTimeout
        self.txPHY = txPHY
        self.rxPHY = rxPHY
        self.maxTxOctets = maxTxOctets
        self.maxRxOctets = maxRxOctets
    }

    /// A new LE link before any procedure changed it (Vol 6 Part B §4.5.10: LE 1M both
    /// ways; §4.5.10 and §5.1.9: 27 octets each way).
    public static func atConnection(connectionInterval: UInt16, peripheralLatency: UInt16, supervisionTimeout: UInt16) -> Self {
        Self(
            connectionInterval: connectionInterval, peripheralLatency: peripheralLatency, supervisionTimeout: supervisionTimeout,
            txPHY: .le1M, rxPHY: .le1M, maxTxOctets: 27, maxRxOctets: 27)
    }

    /// The connection interval in milliseconds (1.25 ms units).
    public var intervalMilliseconds: Double? { connectionInterval.map { Double($0) * 1.25 } }
    /// The supervision timeout in milliseconds (10 ms units).
    public var timeoutMilliseconds: Int? { supervisionTimeout.map { Int($0) * 10 } }

    /// These values with the known ones of `other` on top.
    public func merging(_ other: Self) -> Self {
        Self(
            connectionInterval: other.connectionInterval ?? connectionInterval,
            peripheralLatency: other.peripheralLatency ?? peripheralLatency,
            supervisionTimeout: other.supervisionTimeout ?? supervisionTimeout, txPHY: other.txPHY ?? txPHY,
            rxPHY: other.rxPHY ?? rxPHY, maxTxOctets: other.maxTxOctets ?? maxTxOctets,
            maxRxOctets: other.maxRxOctets ?? maxRxOctets)
    }

    /// "interval 30 ms, latency 0, timeout 4000 ms, PHY 2M/2M, data length 251/251 octets"
    /// (tx/rx; the unknown values left out).
    public var description: String {
        var parts: [String] = []
        if let ms = intervalMilliseconds { parts.append("interval \(Self.milliseconds(ms)) ms") }
        if let peripheralLatency { parts.append("latency \(peripheralLatency)") }
        if let ms = timeoutMilliseconds { parts.append("timeout \(ms) ms") }
        if txPHY != nil || rxPHY != nil {
            parts.append("PHY \(txPHY.map { $0.configName.uppercased() } ?? "?")/\(rxPHY.map { $0.configName.uppercased() } ?? "?")")
        }
        if maxTxOctets != nil || maxRxOctets != nil {
            parts.append("data length \(maxTxOctets.map(String.init) ?? "?")/\(maxRxOctets.map(String.init) ?? "?") octets")
        }
        return parts.isEmpty ? "parameters unknown" : parts.joined(separator: ", ")
    }

    /// 7.5, 30, 11.25: no trailing zeros. Never traps: a value that is not finite or not
    /// within ±10¹³ is written as Swift writes a Double (`inf`, `1e+300`), a negative one with `-`.
    public static func milliseconds(_ ms: Double) -> String {
        guard ms.isFinite, abs(ms) < 1e13 else { return String(ms) }
        guard ms >= 0 else { return "-" + milliseconds(-ms) }
        let hundredths = Int((ms * 100).rounded())
        let whole = hundredths / 100
        let fraction = hundredths % 100
        guard fraction != 0 else { return String(whole) }
        return fraction % 10 == 0 ? "\(whole).\(fraction / 10)" : "\(whole).\(fraction < 10 ? "0" : "")\(fraction)"
    }
}
