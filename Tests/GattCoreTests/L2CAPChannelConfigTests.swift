import Testing
@testable import GattCore
import GattTestFixtures

/// `l2cap_channels` and `{"l2cap_psm": id}` values: defaults, PSMs picked, JSON-path errors.
@Suite struct L2CAPChannelConfigTests {
    typealias F = ConfigFixture

    static let psmCharacteristic = #"{"uuid": "ABDD3056-28FA-441D-A470-55A75A52553A", "properties": ["read"], "value": {"l2cap_psm": "stream"}}"#

    @Test func everyKeyAndTheDefaults() throws {
        let c = try F.load(#"""
            {"name": "x", "l2cap_channels": [{"id": "stream"}, {"id": "fw", "psm": 131, "security": "authentication", "mtu": 23}],
             "services": [{"uuid": "FFF0", "characteristics": [\#(Self.psmCharacteristic)]}]}
            """#)
        #expect(c.l2capChannels.count == 2)
        let stream = c.l2capChannels[0]
        #expect(stream.requestedPSM == nil && stream.security == .none && stream.mtu == 2048)
        #expect(L2CAPChannelServer.dynamicPSMs.contains(stream.psm) && stream.psm != 131)
        #expect(c.l2capChannels[1].server == L2CAPChannelServer(id: "fw", psm: 131, security: .authentication, mtu: 23))
        // The characteristic's value is the PSM, little-endian.
        let db = c.makeDatabase()
        let i = try #require(db.characteristics.firstIndex { $0.uuid == BluetoothUUID("ABDD3056-28FA-441D-A470-55A75A52553A") })
        #expect(db.value(ofCharacteristic: i) == [UInt8(stream.psm & 0xFF), UInt8(stream.psm >> 8)])
    }

    @Test func dynamicPSMsAreStableAndKept() {
        let a = L2CAPPSMAssignment.assign([L2CAPChannelConfiguration(id: "stream")], kept: [:])
        let b = L2CAPPSMAssignment.assign([L2CAPChannelConfiguration(id: "stream")], kept: [:])
        #expect(a == b, "the same id gets the same PSM every run")
        // A kept PSM wins over the derived one; a requested PSM is never given to another channel.
        let kept = L2CAPPSMAssignment.assign(
            [L2CAPChannelConfiguration(id: "stream"), L2CAPChannelConfiguration(id: "x", requestedPSM: 0x90)], kept: ["stream": 0x90, "y": 0x91])
        #expect(kept[0].psm != 0x90 && kept[1].psm == 0x90)
        let many = L2CAPPSMAssignment.assign((0..<128).map { L2CAPChannelConfiguration(id: "c\($0)") }, kept: [:])
        #expect(Set(many.map(\.psm)) == Set(L2CAPChannelServer.dynamicPSMs), "all 128 dynamic PSMs, each once")
    }

    @Test func errorsNameTheirPath() {
        #expect(F.errors(#"{"name": "x", "l2cap_channels": [{"id": "a", "psm": 39}]}"#)
            == ["l2cap_channels[0].psm: PSM 39 is reserved for Enhanced ATT (EATT); leave \"psm\" out to have gattd pick a dynamic one"])
        #expect(F.errors(#"{"name": "x", "l2cap_channels": [{"id": "a", "psm": 256}]}"#)
            == ["l2cap_channels[0].psm: 256 is out of range; allowed: 1...255"])
        #expect(F.errors(#"{"name": "x", "l2cap_channels": [{"id": "a", "psm": 129}, {"id": "b", "psm": 129}]}"#)
            == ["l2cap_channels[1].psm: PSM 129 is already used by l2cap_channels[0]"])
        #expect(F.errors(#"{"name": "x", "l2cap_channels": [{"id": "a"}, {"id": "a"}]}"#)
            == ["l2cap_channels[1].id: \"a\" is already the id of l2cap_channels[0]"])
        #expect(F.errors(#"{"name": "x", "l2cap_channels": [{"id": "a", "security": "encrypted", "mtu": 22}]}"#).count == 2)
        #expect(F.errors(#"{"name": "x", "l2cap_channels": [{"psm": 129}]}"#) == ["l2cap_channels[0].id: required key is missing"])
        #expect(F.errors(F.oneCharacteristic(#""uuid": "2A00", "properties": ["read"], "value": {"l2cap_psm": "stream"}"#))
            == ["services[0].characteristics[0].value.l2cap_psm: no L2CAP channel \"stream\" (no channels are declared in \"l2cap_channels\")"])
        #expect(F.errors(#"""
            {"name": "x", "l2cap_channels": [{"id": "stream"}], "services": [{"uuid": "FFF0", "characteristics": [
             {"uuid": "FFF1", "properties": ["read", "write"], "value": {"l2cap_psm": "stream"}}]}]}
            """#) == ["services[0].characteristics[0].value: an {\"l2cap_psm\": …} value is read-only: remove \"write\" from properties"])
    }
}
