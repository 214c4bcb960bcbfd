import GattCore
import NIOCore

/// What the kernel offers for advertising, read at every open: one mgmt advertising instance per
/// advertising set, never raw HCI advertising commands (the kernel drives the controller's
/// advertising, legacy or extended; on a controller without advertising sets it takes the
/// instances in turn itself).
struct KernelAdvertisingSupport: Sendable, Equatable {
    var commands: KernelAdvertisingDriver.Commands
    var features: KernelManagement.AdvertisingFeatures

    init(commands supported: Set<UInt16>, features: KernelManagement.AdvertisingFeatures) {
        let extended = supported.contains(KernelManagement.Opcode.addExtendedAdvertisingParameters.rawValue)
            && supported.contains(KernelManagement.Opcode.addExtendedAdvertisingData.rawValue)
        self.commands = extended ? .extended : .addAdvertising
        self.features = features
    }

    /// What sets fit: as many as the kernel holds instances, the data length it reported,
    /// extended PDUs when it offers a secondary-channel PHY. On a controller without
    /// advertising sets (`extendedController` false) the kernel gives its instances turns.
    func limits(extendedController: Bool) -> AdvertisingLimits {
        let phys: KernelManagement.AdvertisingFlags = [.secondary1M, .secondary2M, .secondaryCoded]
        return AdvertisingLimits(
            numberOfSets: features.maximumInstances, maximumDataLength: features.maximumAdvertisingDataLength,
            extendedPDUs: commands == .extended && !features.supportedFlags.isDisjoint(with: phys), setsTakeTurns: !extendedController)
    }
}
