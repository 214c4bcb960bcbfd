import GattCore

/// The parameters of the mgmt commands that carry keys and pairing answers.
enum KernelKeyCommands {
    /// Load Long Term Keys (0x0013): Key_Count (2) then the keys. Replaces every LTK the kernel
    /// holds for the adapter.
    static func loadLongTermKeys(_ keys: [KernelLongTermKey]) -> [UInt8] {
        MgmtBytes.le(UInt64(keys.count), count: 2) + keys.flatMap(\.encoded)
    }

    /// Load Identity Resolving Keys (0x0030): Key_Count (2) then the keys. Replaces the IRK list
    /// and tells the kernel that user space stores IRKs (it then asks centrals for theirs).
    static func loadIdentityResolvingKeys(_ keys: [KernelIdentityResolvingKey]) -> [UInt8] {
        MgmtBytes.le(UInt64(keys.count), count: 2) + keys.flatMap(\.encoded)
    }

    /// Load Connection Parameters (0x0035): Param_Count (2) then the entries.
    static func loadConnectionParameters(_ entries: [KernelConnectionParameters]) -> [UInt8] {
        MgmtBytes.le(UInt64(entries.count), count: 2) + entries.flatMap(\.encoded)
    }

    /// Unpair Device (0x001B): Address, Address_Type, Disconnect (1: drop the link too).
    static func unpairDevice(_ peer: KernelBDAddress, disconnect: Bool) -> [UInt8] {
        peer.mgmtBytes + [disconnect ? 1 : 0]
    }

    /// User Confirmation Reply (0x001C) and Negative Reply (0x001D), User Passkey Negative
    /// Reply (0x001F): the address alone.
    static func address(_ peer: KernelBDAddress) -> [UInt8] { peer.mgmtBytes }

    /// User Passkey Reply (0x001E): Address, Address_Type, Passkey (4).
    static func userPasskeyReply(_ peer: KernelBDAddress, passkey: UInt32) -> [UInt8] {
        peer.mgmtBytes + MgmtBytes.le(UInt64(passkey), count: 4)
    }

    /// The largest number of `recordSize`-octet records one command can carry when a packet
    /// may be `packetLimit` octets long (6 header octets, a 2-octet count).
    static func capacity(recordSize: Int, packetLimit: Int) -> Int { max(0, (packetLimit - 6 - 2) / recordSize) }
}
