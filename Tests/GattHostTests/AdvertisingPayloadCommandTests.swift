import Testing
@testable import GattCore
@testable import GattHost
import GattTestFixtures

/// A payload as the H4 host sends it: the legacy advertising commands (Core Spec Vol 4 Part E
/// §7.8.5–§7.8.9) `AdvertisingPayloads.configurationCommands` gives.
@Suite struct AdvertisingPayloadCommandTests {
    @Test func heartRateDemo() throws {
        var c = AdvertisingConfiguration()
        c.localName = "HR-Demo"
        c.serviceUUIDs = [0x180D]
        let p = try AdvertisingPayloadBuilder.build(c, deviceName: "gattd")
        #expect(p.advertisingData == h("02 01 06  08 09 48 52 2D 44 65 6D 6F  03 03 0D 18"))
        #expect(p.scanResponseData == [])
        #expect(!p.isBeaconOnly)
        #expect(p.parameters == AdvertisingParameters(intervalMin: 0xA0, intervalMax: 0xF0, advertisingType: .connectableUndirected))
        #expect(
            p.configurationCommands.map { $0.encoded() } == [
                h("06 20 0F A0 00 F0 00 00 00 00 00 00 00 00 00 00 07 00"),
                h("08 20 20 10 02 01 06 08 09 48 52 2D 44 65 6D 6F 03 03 0D 18") + [UInt8](repeating: 0, count: 15),
                h("09 20 20 00") + [UInt8](repeating: 0, count: 31),
            ])
        #expect(AdvertisingPayloads.enableCommand.encoded() == h("0A 20 01 01"))
    }
}
