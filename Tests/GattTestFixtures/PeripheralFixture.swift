import GattCore

/// The peripheral values the core's and the host's tests share (as `PeripheralTests` uses them).
package enum PeripheralFixture {
    package static let payloads = AdvertisingPayloads(
        advertisingData: [0x02, 0x01, 0x06], scanResponseData: [],
        parameters: AdvertisingParameters(intervalMin: 0xA0, intervalMax: 0xF0, advertisingType: .connectableUndirected),
        isBeaconOnly: false)
    package static let address = BluetoothAddress("C0:FF:EE:00:00:01")!
    package static let centralA = TransportPeer(address: BluetoothAddress("11:22:33:44:55:66")!, addressType: .random, handle: 0x40)
    package static let subscribe: [UInt8] = [0x12, 0x15, 0x00, 0x01, 0x00]
}
