import CBlueZ
import GattCore

/// Which kernel L2CAP listening sockets to close and which to open so that exactly the
/// servers asked for (`setL2CAPChannelServers`) accept LE credit-based channels (Core Vol 3
/// Part A §4.22): a server that is gone or changed (PSM, security, MTU are the socket's, set
/// before `listen`) is closed, a new or changed one opened. Closes come first, so a PSM that
/// moves from one id to another is free again when it is bound. Channels already accepted
/// are sockets of their own and stay. Pure: `KernelPeripheralTransport` runs it.
struct KernelL2CAPServerPlan: Sendable, Equatable {
    /// Ids of the listening sockets to close, sorted.
    var close: [String]
    /// Servers to listen for, in the order asked (the first of two with one PSM wins the bind).
    var open: [L2CAPChannelServer]

    /// `listening`: the servers that have a listening socket now (by id).
    init(listening: [String: L2CAPChannelServer], wanted: [L2CAPChannelServer]) {
        var wantedByID: [String: L2CAPChannelServer] = [:]
        var open: [L2CAPChannelServer] = []
        for server in wanted where wantedByID[server.id] == nil {
            wantedByID[server.id] = server
            if listening[server.id] != server { open.append(server) }
        }
        self.close = listening.filter { wantedByID[$0.key] != $0.value }.keys.sorted()
        self.open = open
    }

    var isEmpty: Bool { close.isEmpty && open.isEmpty }
}

extension L2CAPChannelSecurity {
    /// The kernel's BT_SECURITY level a listening socket needs (SOL_BLUETOOTH/BT_SECURITY):
    /// the kernel answers an LE Credit Based Connection Request on a link below it with
    /// Insufficient Authentication (l2cap_core.c `l2cap_le_connect_req`, smp_sufficient_security).
    var kernelLevel: Int32 {
        switch self {
        case .none: CBLUEZ_BT_SECURITY_LOW
        case .encryption: CBLUEZ_BT_SECURITY_MEDIUM
        case .authentication: CBLUEZ_BT_SECURITY_HIGH
        }
    }
}
