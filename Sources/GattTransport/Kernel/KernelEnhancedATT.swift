import GattCore

#if canImport(Glibc)
import Glibc
#endif

/// What the transport does with its Enhanced ATT listening socket on PSM 0x0027: listen
/// while EATT is asked for (`setEnhancedATT(true)`), the kernel supports it and the adapter
/// is open; close it otherwise. Bearers already open stay (a reload applies to new channels).
enum KernelEnhancedATTPlan: Sendable, Equatable {
    case listen
    case stopListening
    case nothing

    init(wanted: Bool, support: KernelEnhancedATTSupport, adapterReady: Bool, listening: Bool) {
        let shouldListen = wanted && support == .supported && adapterReady
        switch (shouldListen, listening) {
        case (true, false): self = .listen
        case (false, true): self = .stopListening
        default: self = .nothing
        }
    }
}

/// The Enhanced ATT bearer of one accepted EATT channel: its id (the channel's local CID,
/// from getsockname) and its ATT_MTU (Vol 3 Part F §3.2.11: min of the two L2CAP MTUs).
struct KernelEnhancedBearerPlan: Sendable, Equatable {
    let id: BearerID
    let mtu: Int

    /// `localCID`: the kernel's CID of the channel (nil when getsockname did not tell one);
    /// `taken`: the channels of the connection's bearers open now. Without a CID (or with one
    /// the connection already has, or the fixed channel's), the first free one from 0x0040 up.
    init(connection: ConnectionID, localCID: UInt16?, taken: Set<UInt16>, ourMTU: Int?, peerMTU: Int?) {
        var channel: UInt16
        if let localCID, localCID != BearerID.fixedATTChannel, localCID != 0, !taken.contains(localCID) {
            channel = localCID
        } else {
            channel = 0x0040
            while taken.contains(channel) { channel &+= 1 }
        }
        id = BearerID(connection, channel: channel)
        // An L2CAP Enhanced Credit Based channel has an MTU of at least 64 (Vol 3 Part A §4.25).
        let ours = ourMTU ?? KernelEnhancedATT.mtu
        mtu = max(23, min(ours, peerMTU ?? ours))
    }
}

extension KernelEnhancedBearerPlan {
    /// The bearer's ATT_MTU after the central's MTU became `peerMTU` (a Credit Based
    /// Reconfigure the kernel answered, Vol 3 Part A §4.27): the new ATT_MTU when it grew,
    /// else nil (an MTU only grows; unknown says nothing).
    static func reconfigured(current: Int, ourMTU: Int, peerMTU: Int?) -> Int? {
        guard let peerMTU else { return nil }
        let mtu = max(23, min(ourMTU, peerMTU))
        return mtu > current ? mtu : nil
    }
}

/// Constants of EATT on the kernel transport.
enum KernelEnhancedATT {
    /// The SIG-assigned SPSM of EATT (Assigned Numbers §2.4; Vol 3 Part F §3.2.11).
    static let psm: UInt16 = 0x0027
    /// Our MTU on EATT channels: the largest ATT value (512) plus headers, as on the H4 host.
    static let mtu = 517
    /// The listening socket's settings: BT_SECURITY medium, so the kernel itself refuses the
    /// channel on an unencrypted link (Insufficient Authentication/Encryption).
    static let server = L2CAPChannelServer(id: "Enhanced ATT", psm: psm, security: .encryption, mtu: mtu)
}
