/// One value of a `DeferredAccess.commit`: the characteristic index and its complete new value.
public struct PersistedValue: Equatable, Sendable {
    public var characteristic: CharacteristicIndex
    public var value: [UInt8]
    public init(characteristic: CharacteristicIndex, value: [UInt8]) {
        self.characteristic = characteristic
        self.value = value
    }
}
