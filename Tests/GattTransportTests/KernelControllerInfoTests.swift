import GattCore
import Testing

@testable import GattTransport

/// What the kernel transport says a controller can do: the kernel sends the advertising
/// commands, extended ones on a controller with LE Extended Advertising; on one without, it
/// gives its instances turns on the one legacy set.
@Suite("Kernel controller capabilities")
struct KernelControllerInfoTests {
    static let adapter = KernelAdapterInfo(
        index: 0, name: "hci0", address: KernelBDAddress(BluetoothAddress("00:AA:01:00:00:23")!, type: .lePublic), flags: 0, aclMTU: 1021, aclPackets: 8)
    /// btvirt 5.2's Read Advertising Features (btmon in the VM): secondary PHYs, 251 bytes, 3 instances.
    static let extendedKernel = KernelAdvertisingSupport(
        commands: [KernelManagement.Opcode.addExtendedAdvertisingParameters.rawValue, KernelManagement.Opcode.addExtendedAdvertisingData.rawValue],
        features: KernelManagement.AdvertisingFeatures(
            supportedFlags: KernelManagement.AdvertisingFlags(rawValue: 0x0001_FFFF), maximumAdvertisingDataLength: 251,
            maximumScanResponseLength: 251, maximumInstances: 3, instances: []))
    static let version = HCILocalVersionInformation(hciVersion: 11, hciSubversion: 0, lmpVersion: 11, companyIdentifier: 0x05F1, lmpSubversion: 0)

    @Test func anExtendedControllerHasItsSetsOnTheAirAtOnce() {
        let c = KernelControllerInfo.make(
            address: Self.adapter.address.address, version: Self.version, leFeatures: [.encryption, .le2MPHY, .extendedAdvertising],
            Self.adapter, Self.extendedKernel)
        #expect(c.limits == AdvertisingLimits(numberOfSets: 3, maximumDataLength: 251, extendedPDUs: true, setsTakeTurns: false))
        #expect(c.advertisingCommands == .extended(sets: 3, maximumDataLength: 251))
        #expect(c.advertisingOwner != .host && !c.nonConnectableSetsUseControllerAddress)
        #expect(c.details == "Bluetooth 5.2 (HCI 11 rev 0x0000, LMP 11 rev 0x0000), The Linux Foundation; "
            + "LE features: LE Encryption, LE 2M PHY, Extended Advertising; LE ACL 1021 bytes x 8; "
            + "extended advertising (3 sets, 251 bytes of data per set) by the kernel, through mgmt Add Extended Advertising (3 instances, 251-byte data)")
    }

    @Test func aLegacyControllerTakesTurnsAndHasNoExtendedPDUs() {
        var support = Self.extendedKernel
        support.features.supportedFlags = [.connectable, .discoverable, .scanResponse]
        support.features.maximumAdvertisingDataLength = 31
        support.features.maximumInstances = 5
        let c = KernelControllerInfo.make(
            address: Self.adapter.address.address, version: nil, leFeatures: [.encryption], Self.adapter, support)
        #expect(c.limits == AdvertisingLimits(numberOfSets: 5, maximumDataLength: 31, extendedPDUs: false, setsTakeTurns: true))
        #expect(c.advertisingCommands == .legacy)
        #expect(c.advertisingSummary.hasSuffix("(5 instances, 31-byte data, sets take turns)"))
    }

    /// Read Local Version Information as a Bluetooth 5.2 controller answers it: status, HCI 0x0B
    /// rev 0x1234, LMP 0x0B, company 0x05F1, LMP subversion 0x5678.
    @Test func versionInformationFromTheRawSocketsReply() {
        let reply: [UInt8] = [0x00, 0x0B, 0x34, 0x12, 0x0B, 0xF1, 0x05, 0x78, 0x56]
        #expect(KernelHCIController.versionInformation(reply)
            == HCILocalVersionInformation(hciVersion: 11, hciSubversion: 0x1234, lmpVersion: 11, companyIdentifier: 0x05F1, lmpSubversion: 0x5678))
        #expect(KernelHCIController.versionInformation(Array(reply.dropLast())) == nil)
        #expect(KernelHCIController.versionInformation([0x01] + reply.dropFirst()) == nil)
    }

    @Test func unknownAdvertisingFeaturesMeanOneLegacySet() {
        let c = KernelControllerInfo.make(address: .zero, version: nil, leFeatures: [], Self.adapter, nil)
        #expect(c.limits.numberOfSets == 1 && !c.limits.extendedPDUs && c.limits.maximumDataLength == 31)
        #expect(c.advertisingSummary == "legacy advertising by the kernel, through mgmt Add Advertising (1 instances, 31-byte data)")
    }
}
