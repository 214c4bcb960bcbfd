import Testing
@testable import GattCore
@testable import GattHost
import GattTestFixtures

/// The extended advertising driver's state machine, transition by transition: the commands
/// of each batch for set 0 and what the core hears.
@Suite struct ExtendedAdvertisingDriverTests {
    typealias Driver = ExtendedAdvertisingDriver
    static let p = PeripheralFixture.payloads  // ADV_IND, public address
    static var q: AdvertisingPayloads {
        var q = p
        q.advertisingData = [0x02, 0x01, 0x04]
        return q
    }
    static let staticAddress = BluetoothAddress("C5:00:00:00:00:01")!
    static let newAddress = BluetoothAddress("4A:11:22:33:44:55")!
    static let enable = HCICommand.leSetExtendedAdvertisingEnable(enable: true, sets: [AdvertisingSetEnable(handle: 0)])
    static let disable = HCICommand.leSetExtendedAdvertisingEnable(enable: false, sets: [AdvertisingSetEnable(handle: 0)])
    static let remove = HCICommand.leRemoveAdvertisingSet(handle: 0)

    static func config(_ p: AdvertisingPayloads = p, address: BluetoothAddress? = nil) -> Driver.Configuration {
        Driver.Configuration(payloads: p, randomAddress: address)
    }

    /// Parameters (legacy ADV_IND: properties 0x0013), advertising data, scan response data.
    static func install(_ p: AdvertisingPayloads) -> [HCICommand] {
        [
            .leSetExtendedAdvertisingParameters(ExtendedAdvertisingParameters(handle: 0, legacy: p.parameters)),
            .leSetExtendedAdvertisingData(handle: 0, operation: .complete, fragmentPreference: .minimize, data: p.advertisingData),
            .leSetExtendedScanResponseData(handle: 0, operation: .complete, fragmentPreference: .minimize, data: p.scanResponseData),
        ]
    }

    static func on(_ c: Driver.Configuration = config()) -> Driver {
        var d = Driver()
        _ = d.setDesired(c)
        _ = d.batchFinished(failure: nil, connected: false)
        return d
    }

    // MARK: Configure, enable, disable

    @Test func firstEnableConfiguresTheSetThenLaterOnesOnlyEnable() {
        var d = Driver()
        #expect(d.state() == .off && !d.isRunning)
        let batch = d.setDesired(Self.config())
        #expect(batch?.commands == Self.install(Self.p) + [Self.enable])
        #expect(batch?.enabling == true && batch?.handle == 0)
        #expect(d.state() == .running(enabling: true) && d.isRunning)
        #expect(d.setDesired(Self.config()) == nil, "a batch is running")
        let (events, next) = d.batchFinished(failure: nil, connected: false)
        #expect(events == [.advertisingChanged(true)] && next == nil && d.state() == .on)
        #expect(d.setDesired(Self.config()) == nil, "already on with these payloads")
        #expect(d.setDesired(nil)?.commands == [Self.disable])
        #expect(d.batchFinished(failure: nil, connected: false).events == [.advertisingChanged(false)])
        #expect(d.state() == .off)
        #expect(d.setDesired(Self.config())?.commands == [Self.enable], "the set keeps its configuration")
    }

    @Test func theSetsOwnRandomAddressFollowsItsParameters() {
        var p = Self.p
        p.parameters.ownAddressType = .random
        var d = Driver()
        let commands = d.setDesired(Self.config(p, address: Self.staticAddress))?.commands ?? []
        #expect(commands.map(\.opcode) == [
            .leSetExtendedAdvertisingParameters, .leSetAdvertisingSetRandomAddress, .leSetExtendedAdvertisingData,
            .leSetExtendedScanResponseData, .leSetExtendedAdvertisingEnable,
        ])
        #expect(commands[1] == .leSetAdvertisingSetRandomAddress(handle: 0, address: Self.staticAddress))
        // A public own address leaves the set without one, whatever address is offered.
        #expect(Self.config(Self.p, address: Self.staticAddress).randomAddress == nil)
    }

    @Test func pduTypesDecideWhichDataCommandsAreSent() {
        var beacon = Self.p
        beacon.parameters.advertisingType = .nonConnectableUndirected
        var d = Driver()
        // ADV_NONCONN_IND (0x0010): no scan response data (a non-scannable set refuses it, §7.8.55).
        #expect(d.setDesired(Self.config(beacon))?.commands.map(\.opcode) == [.leSetExtendedAdvertisingParameters, .leSetExtendedAdvertisingData, .leSetExtendedAdvertisingEnable])
        var scannable = Self.p
        scannable.parameters.advertisingType = .scannableUndirected
        var s = Driver()
        let commands = s.setDesired(Self.config(scannable))?.commands ?? []
        #expect(commands.first == .leSetExtendedAdvertisingParameters(ExtendedAdvertisingParameters(handle: 0, legacy: scannable.parameters)))
        #expect(commands.map(\.opcode) == [.leSetExtendedAdvertisingParameters, .leSetExtendedAdvertisingData, .leSetExtendedScanResponseData, .leSetExtendedAdvertisingEnable])
    }

    @Test func newPayloadsRemoveAndRebuildTheSet() {
        // On: disable, remove (old data could clash with the new type, §7.8.53), configure, enable.
        var d = Self.on()
        #expect(d.setDesired(Self.config(Self.q))?.commands == [Self.disable, Self.remove] + Self.install(Self.q) + [Self.enable])
        #expect(d.batchFinished(failure: nil, connected: false).events == [.advertisingChanged(true)])
        // Off: no disable.
        _ = d.setDesired(nil)
        _ = d.batchFinished(failure: nil, connected: false)
        #expect(d.setDesired(Self.config())?.commands == [Self.remove] + Self.install(Self.p) + [Self.enable])
        // Changed wishes while a batch runs: the next batch follows its end.
        #expect(d.setDesired(nil) == nil)
        #expect(d.batchFinished(failure: nil, connected: false).next?.commands == [Self.disable])
    }

    @Test func resetForgetsTheSets() {
        var d = Self.on()
        d.reset()
        #expect(d.state() == .off && !d.isRunning)
        #expect(d.setDesired(Self.config())?.commands == Self.install(Self.p) + [Self.enable], "no set to remove after a reset")
    }

    // MARK: Connections

    @Test func aConnectionEndsTheConnectableSetAndTerminatedConfirmsIt() {
        var d = Self.on()
        // LE Enhanced Connection Complete [v1] names no set: set 0 is the only one that could take it.
        #expect(d.connectionOpened(connectionHandle: 0x40, advertisingHandle: nil) == [.advertisingChanged(false)])
        #expect(d.state() == .off && d.desired() == nil)
        // The core asks again at once; then LE Advertising Set Terminated arrives for that connection.
        #expect(d.setDesired(Self.config())?.commands == [Self.enable])
        #expect(d.setTerminated(handle: 0, status: .success, connectionHandle: 0x40).isEmpty)
        #expect(d.state() == .running(enabling: true), "the confirmation does not stop the new enable")
        #expect(d.batchFinished(failure: nil, connected: true).events == [.advertisingChanged(true)])
        #expect(d.state() == .on)
    }

    @Test func terminatedAloneEndsTheSet() {
        // No connection attributed (e.g. the event came first): Terminated decides.
        var d = Self.on()
        #expect(d.setTerminated(handle: 0, status: .success, connectionHandle: 0x41) == [.advertisingChanged(false)])
        #expect(d.state() == .off && d.desired() == nil)
        // A set that ran out (Advertising Timeout, Limit Reached) ends too, with a warning.
        var t = Self.on()
        #expect(t.setTerminated(handle: 0, status: .advertisingTimeout, connectionHandle: 0) == [
            .warning("advertising set 0 ended: Advertising Timeout (0x3C)"), .advertisingChanged(false),
        ])
        // A set the driver never configured: nothing.
        #expect(t.setTerminated(handle: 7, status: .success, connectionHandle: 0x40).isEmpty)
    }

    @Test func connectionsFromOtherSetsOrNonConnectableSetsChangeNothing() {
        // [v2] names set 1: set 0 advertises on.
        var d = Self.on()
        #expect(d.connectionOpened(connectionHandle: 0x40, advertisingHandle: 1).isEmpty)
        #expect(d.state() == .on)
        // A non-connectable set cannot have taken a connection.
        var beacon = Self.p
        beacon.parameters.advertisingType = .nonConnectableUndirected
        var b = Self.on(Self.config(beacon))
        #expect(b.connectionOpened(connectionHandle: 0x40, advertisingHandle: nil).isEmpty)
        #expect(b.state() == .on)
        // Nor one that is off.
        var off = Driver()
        #expect(off.connectionOpened(connectionHandle: 0x40, advertisingHandle: nil).isEmpty)
    }

    /// The race of issue 9 on extended advertising: a central connects while the enabling
    /// batch runs. The batch's "on" is stale; the set is no longer wanted, so a disable makes sure.
    @Test func aConnectionDuringAnEnablingBatchMakesItsResultOff() {
        var d = Driver()
        _ = d.setDesired(Self.config())
        #expect(d.connectionOpened(connectionHandle: 0x40, advertisingHandle: nil).isEmpty)
        #expect(d.setTerminated(handle: 0, status: .success, connectionHandle: 0x40).isEmpty, "attributed already")
        let (events, next) = d.batchFinished(failure: nil, connected: true)
        #expect(events == [.advertisingChanged(false)])
        #expect(next?.commands == [Self.disable] && d.state() == .running(enabling: false))
        #expect(d.setDesired(Self.config()) == nil, "follows the disable")
        let (after, again) = d.batchFinished(failure: nil, connected: true)
        #expect(after == [.advertisingChanged(false)] && again?.commands == [Self.enable])
    }

    @Test func aConnectionWhileDisablingNeedsNothingMore() {
        var d = Self.on()
        _ = d.setDesired(nil)
        #expect(d.connectionOpened(connectionHandle: 0x40, advertisingHandle: nil).isEmpty)
        #expect(d.batchFinished(failure: nil, connected: true) == ([.advertisingChanged(false)], nil))
        #expect(d.setTerminated(handle: 0, status: .success, connectionHandle: 0x40).isEmpty)
    }

    // MARK: Failures

    @Test func harmlessFailuresLetTheBatchGoOn() {
        #expect(Driver.isHarmless(Self.remove, .unknownAdvertisingIdentifier))
        #expect(Driver.isHarmless(Self.disable, .commandDisallowed))
        #expect(Driver.isHarmless(Self.disable, .unknownAdvertisingIdentifier))
        #expect(!Driver.isHarmless(Self.enable, .commandDisallowed))
        #expect(!Driver.isHarmless(Self.remove, .commandDisallowed))
        #expect(!Driver.isHarmless(.leSetExtendedAdvertisingData(handle: 0, operation: .complete, fragmentPreference: .minimize, data: []), .unknownAdvertisingIdentifier))
    }

    @Test func anEnableRefusedWhileConnectedIsReportedAndTheConfigurationKept() {
        var d = Driver()
        _ = d.setDesired(Self.config())
        let (events, next) = d.batchFinished(failure: (Self.enable, .commandDisallowed), connected: true)
        #expect(events == [.advertisingRefused(whileConnected: true, reason: "LE Set Extended Advertising Enable: Command Disallowed (0x0C)")])
        #expect(next == nil && d.state() == .off && d.desired() == nil)
        #expect(d.setDesired(Self.config())?.commands == [Self.enable], "parameters and data went in")
    }

    @Test func aConfigurationFailureLeavesTheSetUnknownSoItIsRebuilt() {
        var d = Driver()
        _ = d.setDesired(Self.config())
        let data = Self.install(Self.p)[1]
        let (events, next) = d.batchFinished(failure: (data, .memoryCapacityExceeded), connected: false)
        #expect(events == [.advertisingRefused(whileConnected: false, reason: "LE Set Extended Advertising Data: Memory Capacity Exceeded (0x07)")])
        #expect(next == nil && d.state() == .off)
        #expect(d.setDesired(Self.config())?.commands == [Self.remove] + Self.install(Self.p) + [Self.enable])
        // Command Disallowed while not connected is a refusal too, not "while connected".
        var e = Driver()
        _ = e.setDesired(Self.config())
        let params = Self.install(Self.p)[0]
        #expect(e.batchFinished(failure: (params, .commandDisallowed), connected: false).events == [
            .advertisingRefused(whileConnected: false, reason: "LE Set Extended Advertising Parameters: Command Disallowed (0x0C)"),
        ])
    }

    @Test func aFailedDisableCountsAsOffWithAWarning() {
        var d = Self.on()
        _ = d.setDesired(nil)
        let (events, next) = d.batchFinished(failure: (Self.disable, .hardwareFailure), connected: false)
        #expect(events == [.warning("LE Set Extended Advertising Enable failed: Hardware Failure (0x03)")])
        #expect(next == nil && d.state() == .off)
        #expect(d.batchFinished(failure: nil, connected: false) == ([], nil), "no batch running")
    }

    // MARK: Address changes

    @Test func aNewAddressPausesTheSetAroundIt() {
        var p = Self.p
        p.parameters.ownAddressType = .random
        var d = Self.on(Self.config(p, address: Self.staticAddress))
        let batch = d.changeAddress(Self.newAddress)
        #expect(batch?.commands == [Self.disable, .leSetAdvertisingSetRandomAddress(handle: 0, address: Self.newAddress), Self.enable])
        #expect(d.changeAddress(Self.newAddress) == nil, "a batch is running")
        #expect(d.batchFinished(failure: nil, connected: false) == ([], nil), "nothing to report: it advertises on")
        #expect(d.state() == .on && d.desired()?.randomAddress == Self.newAddress)
        #expect(d.setDesired(Self.config(p, address: Self.newAddress)) == nil, "the set has the address already")
        #expect(d.changeAddress(Self.newAddress) == nil, "same address")
    }

    @Test func aNewAddressWhileOffGoesWithTheNextEnable() {
        var p = Self.p
        p.parameters.ownAddressType = .random
        var d = Self.on(Self.config(p, address: Self.staticAddress))
        _ = d.connectionOpened(connectionHandle: 0x40, advertisingHandle: nil)
        #expect(d.changeAddress(Self.newAddress) == nil)
        #expect(d.setDesired(Self.config(p, address: Self.newAddress))?.commands == [.leSetAdvertisingSetRandomAddress(handle: 0, address: Self.newAddress), Self.enable])
        // A set with a public own address has no random address to change.
        var pub = Self.on()
        #expect(pub.changeAddress(Self.newAddress) == nil)
    }
}
