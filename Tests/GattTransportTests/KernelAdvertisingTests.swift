import GattCore
import Testing

@testable import GattTransport

/// Advertising on the kernel transport: mgmt Add/Remove Advertising and Add Extended
/// Advertising Parameters/Data (BlueZ doc/mgmt-api), and the driver that decides which to send.
/// The kernel's side is exercised in the kernel-vm VM (scripts/kernel-vm-test, both controller kinds).
@Suite("Kernel advertising through mgmt")
struct KernelAdvertisingTests {
    typealias Instance = KernelManagement.AdvertisingInstance

    /// Flags, a 16-bit service UUID list (0x180D); scan response: Complete Local Name "gatt".
    static let payloads = AdvertisingPayloads(
        advertisingData: [0x02, 0x01, 0x06, 0x03, 0x03, 0x0D, 0x18], scanResponseData: [0x05, 0x09, 0x67, 0x61, 0x74, 0x74],
        parameters: AdvertisingParameters(intervalMin: 0x00A0, intervalMax: 0x00F0, advertisingType: .connectableUndirected),
        isBeaconOnly: false)

    static var beacon: AdvertisingPayloads {
        var p = payloads
        p.parameters.advertisingType = .nonConnectableUndirected
        return p
    }

    @Test func addAdvertisingParameters() {
        let i = Instance(instance: 1, payloads: Self.payloads)
        #expect(i.flags == [.connectable, .scanResponse])
        // Instance, Flags (connectable only: Add Advertising has no scan-response flag), Duration,
        // Timeout, Adv_Data_Len, Scan_Rsp_Len, Adv_Data, Scan_Rsp.
        #expect(i.addAdvertisingParameters == [
            0x01, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x07, 0x06,
            0x02, 0x01, 0x06, 0x03, 0x03, 0x0D, 0x18, 0x05, 0x09, 0x67, 0x61, 0x74, 0x74,
        ])
        #expect(KernelManagement.packet(.addAdvertising, index: 0, parameters: i.addAdvertisingParameters).prefix(6) == [0x3E, 0x00, 0x00, 0x00, 24, 0x00])
    }

    @Test func addExtendedAdvertisingParametersAndData() {
        let i = Instance(instance: 1, payloads: Self.payloads)
        // Flags 0x00014001: connectable, intervals used (bit 14), scan response (bit 16); no
        // secondary-channel flag: legacy PDUs. MinInterval 0xA0, MaxInterval 0xF0 (4 octets each).
        #expect(i.addExtendedParameters == [
            0x01, 0x01, 0x40, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0xA0, 0x00, 0x00, 0x00, 0xF0, 0x00, 0x00, 0x00, 0x7F,
        ])
        #expect(i.addExtendedData == [0x01, 0x07, 0x06, 0x02, 0x01, 0x06, 0x03, 0x03, 0x0D, 0x18, 0x05, 0x09, 0x67, 0x61, 0x74, 0x74])
        #expect(KernelManagement.packet(.addExtendedAdvertisingParameters, index: 2, parameters: i.addExtendedParameters).prefix(6) == [0x54, 0x00, 0x02, 0x00, 18, 0x00])
        #expect(KernelManagement.packet(.addExtendedAdvertisingData, index: 2, parameters: i.addExtendedData).prefix(2) == [0x55, 0x00])
    }

    /// A non-connectable set: no connectable flag, no scan response (the PDU type is not scannable).
    @Test func nonConnectableInstanceHasNoScanResponse() {
        let i = Instance(instance: 2, payloads: Self.beacon)
        #expect(i.flags == [])
        #expect(i.scanResponseData == [])
        #expect(Array(i.addExtendedParameters.prefix(5)) == [0x02, 0x00, 0x40, 0x00, 0x00])
    }

    /// Read Advertising Features as the kernel VM's btvirt 5.2 controller answers it (btmon):
    /// flags 0x0001ffff, 251-byte data and scan response, 3 instances, none registered.
    @Test func readAdvertisingFeatures() {
        let f = KernelManagement.AdvertisingFeatures(returnParameters: [0xFF, 0xFF, 0x01, 0x00, 251, 251, 3, 0])
        #expect(f == KernelManagement.AdvertisingFeatures(
            supportedFlags: KernelManagement.AdvertisingFlags(rawValue: 0x0001_FFFF), maximumAdvertisingDataLength: 251,
            maximumScanResponseLength: 251, maximumInstances: 3, instances: []))
        #expect(KernelManagement.AdvertisingFeatures(returnParameters: [0x01, 0, 0, 0, 31, 31, 5, 2, 1, 4])?.instances == [1, 4])
        #expect(KernelManagement.AdvertisingFeatures(returnParameters: [0x01, 0, 0, 0, 31, 31, 5, 2, 1]) == nil)  // one instance short
        #expect(KernelManagement.AdvertisingFeatures(returnParameters: [0x01, 0, 0]) == nil)
    }

    @Test func supportedCommandsListsOpcodes() {
        // 2 commands (0x0054, 0x0055), 1 event (0x0001).
        let reply: [UInt8] = [0x02, 0x00, 0x01, 0x00, 0x54, 0x00, 0x55, 0x00, 0x01, 0x00]
        let commands = KernelManagement.supportedCommands(returnParameters: reply)
        #expect(commands == [0x0054, 0x0055])
        #expect(KernelAdvertisingSupport(commands: commands ?? [], features: features).commands == .extended)
        #expect(KernelAdvertisingSupport(commands: [0x003E, 0x0054], features: features).commands == .addAdvertising)
        #expect(KernelManagement.supportedCommands(returnParameters: [0x03, 0x00, 0x00, 0x00, 0x54, 0x00]) == nil)
    }

    let features = KernelManagement.AdvertisingFeatures(supportedFlags: [], maximumAdvertisingDataLength: 31, maximumScanResponseLength: 31, maximumInstances: 5, instances: [])

    // MARK: - The driver

    @Test func addsThenRemoves() {
        var d = KernelAdvertisingDriver(commands: .extended)
        let i = Instance(instance: 1, payloads: Self.payloads)
        // A new adapter open: the kernel may still hold our instance, so the first add replaces.
        #expect(d.setDesired(Self.payloads) == .replace(i, .extended))
        #expect(d.setDesired(Self.payloads) == nil)  // running: the next follows its end
        let (events, next) = d.finished(.done, connected: false)
        #expect(events == [.advertisingChanged(true)])
        #expect(next == nil)
        #expect(d.state == .on(i))
        #expect(d.setDesired(Self.payloads) == nil)  // already on the air as asked
        #expect(d.setDesired(nil) == .remove(instance: 1))
        #expect(d.finished(.done, connected: false) == ([.advertisingChanged(false)], nil))
        #expect(d.state == .off)
        #expect(d.setDesired(Self.payloads) == .add(i, .extended))  // known removed: a plain add
    }

    /// An add the kernel answers Failed (it held our instance and could not update it, e.g. after
    /// a power cycle) is tried as a replace, then as a plain add; then it is a refusal.
    @Test func failedAddIsReplacedOnce() {
        var d = on()
        _ = d.setDesired(nil)
        _ = d.finished(.done, connected: false)
        let i = Instance(instance: 1, payloads: Self.payloads)
        #expect(d.setDesired(Self.payloads) == .add(i, .extended))
        let (events, next) = d.finished(.failed(status: 0x03, reason: "Failed"), connected: false)
        #expect(events == [])
        #expect(next == .replace(i, .extended))
        // The update failed and the kernel dropped the instance: a plain add, then a refusal.
        #expect(d.finished(.failed(status: 0x03, reason: "Failed"), connected: false) == ([], .add(i, .extended)))
        #expect(d.finished(.failed(status: 0x03, reason: "Failed"), connected: false) == ([.advertisingRefused(whileConnected: false, reason: "Failed")], nil))
        // Another kind of failure is a refusal at once.
        _ = d.setDesired(Self.payloads)
        #expect(d.finished(.failed(status: 0x07, reason: "No Resources"), connected: false).events == [.advertisingRefused(whileConnected: false, reason: "No Resources")])
    }

    /// New payloads while advertising: the instance is added again (the kernel replaces it).
    @Test func newPayloadsReplaceTheInstance() {
        var d = on()
        #expect(d.setDesired(Self.beacon) == .add(Instance(instance: 1, payloads: Self.beacon), .extended))
    }

    /// A connection ends the instance's advertising but the kernel keeps it and would enable it
    /// again at the disconnection: nobody asking again means it is removed.
    @Test func connectionPausesAndSettleRemoves() {
        var d = on()
        #expect(d.connectionOpened() == [.advertisingChanged(false)])
        #expect(d.state == .paused(Instance(instance: 1, payloads: Self.payloads)))
        #expect(d.settle() == .remove(instance: 1))
    }

    /// The core still wants to advertise after a connection: the instance is added again now.
    @Test func connectionThenAskedAgainReAdds() {
        var d = on()
        _ = d.connectionOpened()
        #expect(d.setDesired(Self.payloads) == .add(Instance(instance: 1, payloads: Self.payloads), .extended))
        #expect(d.settle() == nil)
    }

    /// A connection while the add runs: once it ends, the instance counts as ended by the connection.
    @Test func connectionDuringAnAdd() {
        var d = KernelAdvertisingDriver(commands: .extended)
        _ = d.setDesired(Self.payloads)
        #expect(d.connectionOpened() == [])
        let (events, next) = d.finished(.done, connected: true)
        #expect(events == [.advertisingChanged(false)])
        #expect(next == .remove(instance: 1))
    }

    /// Kernels that list the extended pair but refuse it (Invalid Parameters, raspberrypi/linux#7473):
    /// Add Advertising from then on.
    @Test func extendedRefusedFallsBackToAddAdvertising() {
        var d = KernelAdvertisingDriver(commands: .extended)
        let i = Instance(instance: 1, payloads: Self.payloads)
        _ = d.setDesired(Self.payloads)
        let (events, next) = d.finished(.failed(status: 0x0D, reason: "Invalid Parameters"), connected: false)
        #expect(next == .add(i, .addAdvertising))
        #expect(events.count == 1)
        #expect(d.commands == .addAdvertising)
        #expect(d.finished(.done, connected: false).events == [.advertisingChanged(true)])
        d.reset(commands: .addAdvertising)
        #expect(d.setDesired(Self.payloads) == .replace(i, .addAdvertising))
    }

    @Test func refusedAddIsReported() {
        var d = KernelAdvertisingDriver(commands: .addAdvertising)
        _ = d.setDesired(Self.payloads)
        let (events, next) = d.finished(.failed(status: 0x0B, reason: "Rejected"), connected: true)
        #expect(events == [.advertisingRefused(whileConnected: true, reason: "Rejected")])
        #expect(next == nil)
        #expect(d.state == .off)
        #expect(d.desired == nil)
        // Not connected: an ordinary refusal.
        _ = d.setDesired(Self.payloads)
        #expect(d.finished(.failed(status: 0x07, reason: "No Resources"), connected: false).events == [.advertisingRefused(whileConnected: false, reason: "No Resources")])
    }

    /// A remove the kernel refuses (it had already dropped the instance) still leaves it off.
    @Test func failedRemoveCountsAsOff() {
        var d = on()
        _ = d.setDesired(nil)
        let (events, _) = d.finished(.failed(status: 0x0D, reason: "Invalid Parameters"), connected: false)
        #expect(events.first == .advertisingChanged(false))
        #expect(d.state == .off)
    }

    /// What the core asked while an operation ran is done after it.
    @Test func askedWhileRunningFollows() {
        var d = on()
        _ = d.setDesired(nil)
        #expect(d.setDesired(Self.payloads) == nil)
        #expect(d.finished(.done, connected: false).next == .add(Instance(instance: 1, payloads: Self.payloads), .extended))
    }

    private func on() -> KernelAdvertisingDriver {
        var d = KernelAdvertisingDriver(commands: .extended)
        _ = d.setDesired(Self.payloads)
        _ = d.finished(.done, connected: false)
        return d
    }
}
