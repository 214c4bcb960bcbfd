/// A characteristic's position in `GATTDatabase.characteristics` (built-ins first, `GATTDatabase.BuiltIn`).
public struct CharacteristicIndex: Hashable, Comparable, Sendable, CustomStringConvertible {
    public let rawValue: Int
    public init(_ rawValue: Int) { self.rawValue = rawValue }
    public static func < (a: Self, b: Self) -> Bool { a.rawValue < b.rawValue }
    public var description: String { "#\(rawValue)" }
}

extension GATTDatabase {
    /// The characteristic at `index` (which must be one of `characteristicIndices`).
    public subscript(index: CharacteristicIndex) -> Characteristic { characteristics[index.rawValue] }

    /// Every characteristic's index, in order.
    public var characteristicIndices: [CharacteristicIndex] { characteristics.indices.map(CharacteristicIndex.init) }

    /// Whether `index` names a characteristic of this database.
    public func contains(_ index: CharacteristicIndex) -> Bool { characteristics.indices.contains(index.rawValue) }

    /// The characteristic whose config id is `id`.
    public func characteristicIndex(id: String) -> CharacteristicIndex? {
        characteristics.firstIndex(where: { $0.id == id }).map(CharacteristicIndex.init)
    }
}
