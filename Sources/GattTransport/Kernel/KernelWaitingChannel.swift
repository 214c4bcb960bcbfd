import GattCore

/// A channel the kernel accepted, as the rules see it (its socket stays with the shell).
struct KernelWaitingChannel: Sendable, Equatable {
    enum Purpose: Sendable, Equatable {
        /// An Enhanced ATT bearer (PSM 0x0027).
        case enhancedATT
        /// An app's channel server.
        case server(L2CAPChannelServer)
    }

    var purpose: Purpose
    let peer: KernelBDAddress
    /// The LE connection's handle, when the kernel told it.
    let handle: UInt16?
    /// The channel's local CID, our MTU and the central's.
    let localCID: UInt16?
    let mtu: Int?
    let peerMTU: Int?
    /// How many more times its link is looked for.
    var attemptsLeft = 0

    init(_ purpose: Purpose, peer: KernelBDAddress, handle: UInt16?, localCID: UInt16?, mtu: Int?, peerMTU: Int?) {
        self.purpose = purpose
        self.peer = peer
        self.handle = handle
        self.localCID = localCID
        self.mtu = mtu
        self.peerMTU = peerMTU
    }
}
