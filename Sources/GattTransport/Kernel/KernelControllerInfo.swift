import GattCore
import NIOCore

/// What the open adapter is and can do, from what opening it read (at every open, and for
/// `gattd --probe`).
enum KernelControllerInfo {
    /// What the controller is and can do, from what opening it read: the kernel sends the
    /// advertising commands, extended ones when the controller has LE Extended Advertising
    /// (the kernel's `ext_adv_capable`).
    static func make(_ controller: KernelHCIController, _ info: KernelAdapterInfo, _ support: KernelAdvertisingSupport?) -> ControllerInfo {
        make(
            address: controller.address.address, version: controller.version, leFeatures: LEFeatures(rawValue: controller.leFeatures),
            info, support)
    }

    static func make(
        address: BluetoothAddress, version: HCILocalVersionInformation?, leFeatures: LEFeatures, _ info: KernelAdapterInfo, _ support: KernelAdvertisingSupport?
    ) -> ControllerInfo {
        var c = ControllerInfo()
        c.address = address
        c.version = version
        c.leFeatures = leFeatures
        c.aclDataPacketLength = info.aclMTU
        c.totalACLDataPackets = info.aclPackets
        let extended = c.leFeatures.contains(.extendedAdvertising)
        let limits = support?.limits(extendedController: extended)
            ?? AdvertisingLimits(numberOfSets: 1, maximumDataLength: AdvertisingPayloadBuilder.maximumDataLength, extendedPDUs: false)
        c.advertisingCommands = extended ? .extended(sets: limits.numberOfSets ?? 1, maximumDataLength: limits.maximumDataLength) : .legacy
        let through = support?.commands == .extended ? "Add Extended Advertising" : "Add Advertising"
        c.advertisingOwner = .stack(
            limits: limits,
            summary: "\(c.advertisingCommands) by the kernel, through mgmt \(through) ("
                + "\(limits.numberOfSets.map { "\($0) instances" } ?? "instances"), \(limits.maximumDataLength)-byte data"
                + "\(limits.setsTakeTurns ? ", sets take turns" : ""))")
        // It advertises connectable sets from the controller's address, the others from a
        // non-resolvable private address it picks itself.
        c.nonConnectableSetsUseControllerAddress = false
        return c
    }

    /// Reads what the kernel offers for advertising (on the command thread, at open).
    static func readAdvertisingSupport(index: Int) throws(KernelTransportError) -> KernelAdvertisingSupport {
        let (commands, features) = try KernelManagement.readAdvertising(index: index)
        return KernelAdvertisingSupport(commands: commands, features: features)
    }
}
