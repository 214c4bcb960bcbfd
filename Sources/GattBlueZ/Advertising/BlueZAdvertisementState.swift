import GattCore

/// One advertising set's object and whether bluetoothd took it.
struct BlueZAdvertisementState: Sendable {
    static let root = "/org/gattd/advertisement"
    var path: String
    var set: AdvertisingSet
    var registered = false
}
