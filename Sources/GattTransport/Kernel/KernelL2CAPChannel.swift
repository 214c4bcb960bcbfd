import CBlueZ
import GattCore
import NIOCore
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A channel the kernel accepted on a ``KernelL2CAPListener``: a connected L2CAP socket,
/// non-blocking and close-on-exec, one SDU per packet.
public struct KernelL2CAPChannel: Sendable {
    public let fd: Int32
    public let peer: KernelBDAddress
    /// The LE connection's HCI handle (L2CAP_CONNINFO), to find the central's ATT link.
    public let handle: UInt16?
    /// The central's MTU (BT_SNDMTU: the largest SDU it takes) and ours (BT_RCVMTU).
    public let peerMTU: Int?
    public let mtu: Int?
    /// The channel's local CID (getsockname: the kernel reports the channel's scid).
    public let localCID: UInt16?

    init(fd: Int32, peer: KernelBDAddress) {
        self.fd = fd
        self.peer = peer
        var info = l2cap_conninfo()
        var length = socklen_t(MemoryLayout<l2cap_conninfo>.size)
        handle = getsockopt(fd, CBLUEZ_SOL_L2CAP, L2CAP_CONNINFO, &info, &length) == 0 ? info.hci_handle : nil
        peerMTU = Self.mtuOption(fd, BT_SNDMTU)
        mtu = Self.mtuOption(fd, BT_RCVMTU)
        var local = sockaddr_l2()
        var localLength = socklen_t(MemoryLayout<sockaddr_l2>.size)
        let named = withUnsafeMutablePointer(to: &local) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &localLength) }
        }
        localCID = named == 0 && local.l2_cid != 0 ? UInt16(littleEndian: local.l2_cid) : nil
    }

    private static func mtuOption(_ fd: Int32, _ option: Int32) -> Int? {
        var value: UInt16 = 0
        var length = socklen_t(MemoryLayout<UInt16>.size)
        guard getsockopt(fd, CBLUEZ_SOL_BLUETOOTH, option, &value, &length) == 0, value > 0 else { return nil }
        return Int(value)
    }
}
