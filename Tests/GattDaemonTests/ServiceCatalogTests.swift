import GattControlProtocol
import GattCore
import Logging
import Testing

@testable import GattDaemon

/// `ServiceCatalog`, the runtime services' layout as a value: restoring a saved service at its
/// handles, proposing (not applying) an added or removed service, and what it publishes.
@Suite struct ServiceCatalogTests {
    static let config = #"{"name": "cat", "services": [{"id": "dev", "uuid": "180A", "characteristics": [{"uuid": "2A29", "properties": ["read"], "value": {"utf8": "x"}}]}]}"#
    static let battery = #"{"id": "battery", "uuid": "180F", "characteristics": [{"id": "level", "uuid": "2A19", "properties": ["read"], "value": {"hex": "64"}}]}"#
    let configuration: GattConfiguration
    let logger = Logger(label: "test")

    init() throws { configuration = try ConfigLoader.load(data: Array(Self.config.utf8)).gatt }

    func saved(_ json: String, at start: UInt16, id: String?) throws -> RestoredState {
        var s = RestoredState()
        s.services = [.init(start: start, definition: JSONText(try JSONParser.parse(Array(json.utf8))), id: id)]
        return s
    }

    @Test func aSavedServiceComesBackAtItsHandleMarkedRestored() throws {
        let (catalog, kept) = ServiceCatalog.restoring(configuration, try saved(Self.battery, at: 0x0040, id: "battery"), l2capChannels: [], expander: nil, logger: logger)
        #expect(kept.services.map(\.start) == [0x0040])
        let list = catalog.list(catalog.database(configuration))
        #expect(list.map(\.id) == ["dev", "battery"])
        #expect(list.last?.start == 0x0040)
        #expect(list.last?.runtime == true && list.last?.restored == true)
        #expect(list.first?.runtime == false && list.first?.restored == false)
    }

    @Test func aSavedServiceThatNoLongerParsesIsDropped() throws {
        let (catalog, kept) = ServiceCatalog.restoring(configuration, try saved(#"{"uuid": "180F", "characteristics": 7}"#, at: 0x0040, id: nil), l2capChannels: [], expander: nil, logger: logger)
        #expect(kept.services.isEmpty)
        #expect(catalog.list(catalog.database(configuration)).map(\.id) == ["dev"])
    }

    @Test func addingProposesACatalogAndItsSavedFormWithoutChangingThisOne() throws {
        let (catalog, _) = ServiceCatalog.restoring(configuration, RestoredState(), l2capChannels: [], expander: nil, logger: logger)
        let db = catalog.database(configuration)
        let json = try JSONParser.parse(Array(Self.battery.utf8))
        guard case .success(let (new, saved)) = catalog.adding(json, to: db, l2capChannels: [], expander: nil) else {
            Issue.record("not added")
            return
        }
        #expect(saved.id == "battery" && saved.start == db.lastHandle.rawValue + 1)
        #expect(catalog.list(db).count == 1, "the catalog it was proposed from is unchanged")
        let added = new.list(new.database(configuration))
        #expect(added.map(\.id) == ["dev", "battery"] && added.last?.restored == false)
        // Removing: an id no service has is refused; the runtime one goes.
        guard case .failure(let e) = new.removing("nothing", from: new.database(configuration)) else {
            Issue.record("an unknown service was removed")
            return
        }
        #expect(e.code == .unknownService)
        guard case .success(let back) = new.removing("battery", from: new.database(configuration)) else {
            Issue.record("not removed")
            return
        }
        #expect(back.list(back.database(configuration)).map(\.id) == ["dev"])
    }

    @Test func anInvalidServiceIsRefusedWithTheParsersMessage() throws {
        let (catalog, _) = ServiceCatalog.restoring(configuration, RestoredState(), l2capChannels: [], expander: nil, logger: logger)
        let json = try JSONParser.parse(Array(#"{"uuid": "nope", "characteristics": []}"#.utf8))
        guard case .failure(let e) = catalog.adding(json, to: catalog.database(configuration), l2capChannels: [], expander: nil) else {
            Issue.record("an invalid service was added")
            return
        }
        #expect(e.code == .invalidValue)
        #expect(catalog.publishing(l2capChannel: "stream") == nil)
    }
}
