/// One AD structure: length (1 + data), AD type, data (Core Spec Vol 3 Part C §11).
public struct AdvertisingDataStructure: Sendable, Hashable {
    public var type: AdvertisingDataType
    public var data: [UInt8]

    public init(type: AdvertisingDataType, data: [UInt8]) {
        self.type = type
        self.data = data
    }

    /// Length byte, type, data.
    public var encoded: [UInt8] { [UInt8(truncatingIfNeeded: data.count + 1), type.rawValue] + data }

    /// Bytes this structure takes in a payload.
    public var encodedLength: Int { data.count + 2 }

    /// Splits an advertising or scan response payload into AD structures; nil if a
    /// length runs past the end. A zero length byte ends the significant part
    /// (Vol 3 Part C §11: the rest is padding).
    public static func parse(_ payload: [UInt8]) -> [AdvertisingDataStructure]? {
        var out: [AdvertisingDataStructure] = []
        var i = 0
        while i < payload.count {
            let length = Int(payload[i])
            if length == 0 { break }
            guard i + 1 + length <= payload.count else { return nil }
            out.append(AdvertisingDataStructure(type: AdvertisingDataType(rawValue: payload[i + 1]), data: Array(payload[(i + 2)..<(i + 1 + length)])))
            i += 1 + length
        }
        return out
    }
}
