import GattBlueZ
import GattCore
import GattDBus
import Testing

/// The advertising sets as bluetoothd's advertisements: which to register and unregister as
/// the core's sets change, and what the core hears as bluetoothd answers.
@Suite struct BlueZAdvertisementsTests {
    private func set(_ id: String, name: UInt8 = 0x41) -> AdvertisingSet {
        AdvertisingSet(id: id, path: "advertising_sets[0]", payloads: AdvertisingPayloads(
            advertisingData: [2, 0x01, 0x06, 2, 0x09, name], scanResponseData: [],
            parameters: AdvertisingParameters(intervalMin: 160, intervalMax: 240, advertisingType: .connectableUndirected), isBeaconOnly: false))
    }

    @Test func aSetIsOnTheAirOnlyOnceBluetoothdTookIt() throws {
        var a = BlueZAdvertisements()
        let first = a.want([set("primary"), set("beacon")])
        #expect(first.operations == [.register(path: "/org/gattd/advertisement/set0"), .register(path: "/org/gattd/advertisement/set1")])
        #expect(first.events.isEmpty)
        #expect(a.registration(of: "primary")?.registered == false)
        // The same sets again: nothing to do.
        let same = a.want([set("primary"), set("beacon")])
        #expect(same.operations.isEmpty && same.events.isEmpty)
        #expect(a.registered("/org/gattd/advertisement/set0", refused: nil) == [.advertisingChanged(true, set: "primary")])
        let refusal = DBusError("org.bluez.Error.Failed", "Maximum advertisements reached")
        #expect(a.registered("/org/gattd/advertisement/set1", refused: refusal)
            == [.advertisingRefused(whileConnected: false, reason: "bluetoothd: \(refusal)", set: "beacon")])
        #expect(a.registration(of: "beacon") == nil)
        // A late answer for a path no longer registered says nothing.
        #expect(a.registered("/org/gattd/advertisement/set1", refused: nil).isEmpty)
        #expect(a.registered("/org/gattd/advertisement/set7", refused: nil).isEmpty)
    }

    @Test func aChangedSetIsRegisteredAgainAtANewPath() throws {
        var a = BlueZAdvertisements()
        _ = a.want([set("primary")])
        _ = a.registered("/org/gattd/advertisement/set0", refused: nil)
        let changed = a.want([set("primary", name: 0x42)])
        #expect(changed.operations == [.unregister(path: "/org/gattd/advertisement/set0"), .register(path: "/org/gattd/advertisement/set1")])
        #expect(changed.events == [.advertisingChanged(false, set: "primary")])
        // The old registration's answer, late, is not the new one's.
        #expect(a.registered("/org/gattd/advertisement/set0", refused: nil).isEmpty)
        #expect(a.registration(of: "primary")?.path == "/org/gattd/advertisement/set1")
        #expect(a.registration(of: "primary")?.registered == false)
        // Not wanted any more, before bluetoothd answered: unregistered, nothing ended.
        let gone = a.want([])
        #expect(gone.operations == [.unregister(path: "/org/gattd/advertisement/set1")] && gone.events.isEmpty)
    }

    @Test func closingUnregistersEverySetInOrder() {
        var a = BlueZAdvertisements()
        _ = a.want([set("b"), set("a")])
        _ = a.registered("/org/gattd/advertisement/set0", refused: nil)
        let all = a.unregisterAll()
        #expect(all.operations == [.unregister(path: "/org/gattd/advertisement/set1"), .unregister(path: "/org/gattd/advertisement/set0")])
        #expect(all.events == [.advertisingChanged(false, set: "b")])
        #expect(a.unregisterAll().operations.isEmpty)
    }

    @Test func bluetoothdReadsTheObjectAndReleasesIt() throws {
        var a = BlueZAdvertisements()
        _ = a.want([set("primary")])
        let path = "/org/gattd/advertisement/set0"
        let props = BlueZAdvertisement.properties(set("primary"))
        #expect(a.route(path: path, interface: "org.freedesktop.DBus.Properties", member: "GetAll", arguments: [.string(BlueZAdvertisement.interface)])
            == .reply(.success([.properties(props)])))
        #expect(a.route(path: path, interface: "org.freedesktop.DBus.Properties", member: "GetAll", arguments: [.string("org.other")]) == .reply(.success([.properties([:])])))
        #expect(a.route(path: path, interface: "org.freedesktop.DBus.Properties", member: "Get", arguments: [.string(BlueZAdvertisement.interface), .string("LocalName")])
            == .reply(.success([.variant(.string("A"))])))
        #expect(a.route(path: path, interface: "org.freedesktop.DBus.Properties", member: "Get", arguments: [.string(BlueZAdvertisement.interface), .string("Nope")])
            == .reply(.failure(.unknownProperty(path))))
        guard case .reply(.failure) = a.route(path: path, interface: "org.other", member: "Frob", arguments: []) else { Issue.record("an unknown method answered"); return }
        // Released before it was taken: nothing was on the air.
        #expect(a.route(path: path, interface: BlueZAdvertisement.interface, member: "Release", arguments: []) == .released(set: "primary", []))
        #expect(a.route(path: path, interface: BlueZAdvertisement.interface, member: "Release", arguments: []) == .reply(.failure(.unknownObject(path))))
        // Released once on the air: it ends, and the next want registers it again.
        _ = a.want([set("primary")])
        _ = a.registered("/org/gattd/advertisement/set1", refused: nil)
        #expect(a.route(path: "/org/gattd/advertisement/set1", interface: BlueZAdvertisement.interface, member: "Release", arguments: [])
            == .released(set: "primary", [.advertisingChanged(false, set: "primary")]))
        #expect(a.want([set("primary")]).operations == [.register(path: "/org/gattd/advertisement/set2")])
    }

    @Test func operationsAreTheManagersCalls() {
        let register = BlueZAdvertisements.Operation.register(path: "/org/gattd/advertisement/set0").call(adapter: 1)
        #expect(register.path == "/org/bluez/hci1" && register.interface == "org.bluez.LEAdvertisingManager1" && register.member == "RegisterAdvertisement")
        #expect(register.arguments == [.objectPath("/org/gattd/advertisement/set0"), .properties([:])])
        let unregister = BlueZAdvertisements.Operation.unregister(path: "/org/gattd/advertisement/set0").call(adapter: 1)
        #expect(unregister.member == "UnregisterAdvertisement" && unregister.arguments == [.objectPath("/org/gattd/advertisement/set0")])
    }
}
