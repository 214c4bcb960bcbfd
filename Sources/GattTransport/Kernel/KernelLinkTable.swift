import GattCore

/// Names one socket the kernel transport's shell holds; the rules never hold a file descriptor.
struct KernelSocketID: Hashable, Comparable, Sendable, CustomStringConvertible {
    let rawValue: Int
    static func < (a: Self, b: Self) -> Bool { a.rawValue < b.rawValue }
    var description: String { "socket \(rawValue)" }
}

/// One connected central on the kernel transport: its ATT socket (the fixed bearer) by id.
struct KernelLink: Equatable, Sendable {
    let socket: KernelSocketID
    /// The LE connection handle (for HCI Disconnect), when the kernel told it.
    let handle: UInt16?
    /// The central's address and type (its ATT socket's peer).
    let peer: KernelBDAddress
    var security: SecurityLevel
}

/// The kernel transport's LE links in the peripheral role, as data (sans I/O): which ATT
/// socket is which connection, the ids given out, the handles the adapter monitor reported,
/// the Disconnection Complete reasons waiting for their socket's close.
struct KernelLinkTable: Sendable {
    /// The connected centrals.
    private(set) var links: [ConnectionID: KernelLink] = [:]
    /// Connection handles of LE links in the peripheral role (adapter monitor, accepted sockets).
    private(set) var peripheralHandles: Set<UInt16> = []
    /// Disconnection Complete reasons not yet reported, by connection handle.
    private var disconnectReasons: [UInt16: UInt8] = [:]
    /// Closed links whose disconnection is not reported yet (their ids are not reused meanwhile).
    private(set) var disconnecting: Set<ConnectionID> = []
    /// ConnectionIDs for links whose handle is unknown or still in use start here.
    private var spareConnectionID: UInt16 = 0x1000
    /// The last socket id given out.
    private var sockets = 0

    /// The ids of the connected centrals, in order.
    var ids: [ConnectionID] { links.keys.sorted { $0.rawValue < $1.rawValue } }

    /// Whether any LE link is up in the peripheral role (advertising counts as connected).
    var anyConnected: Bool { !links.isEmpty || !peripheralHandles.isEmpty }

    subscript(id: ConnectionID) -> KernelLink? { links[id] }

    /// The link `id` while its socket is still `socket` (a late callback of a closed one is not).
    func link(_ id: ConnectionID, socket: KernelSocketID) -> KernelLink? {
        guard let link = links[id], link.socket == socket else { return nil }
        return link
    }

    /// An accepted ATT socket (`socket`: the shell's id for it; nil: the next one): its
    /// connection id and socket id, and whether it ended advertising (the monitor had not
    /// reported its connection yet).
    mutating func accepted(socket given: KernelSocketID? = nil, handle: UInt16?, peer: KernelBDAddress, security: SecurityLevel) -> (
        id: ConnectionID, socket: KernelSocketID, endedAdvertising: Bool
    ) {
        let id = freeConnectionID(handle: handle)
        sockets += 1
        let socket = given ?? KernelSocketID(rawValue: sockets)
        links[id] = KernelLink(socket: socket, handle: handle, peer: peer, security: security)
        let ended = handle.map { peripheralHandles.insert($0).inserted } ?? false
        return (id, socket, ended)
    }

    /// The link's handle as its id when no link has it (nor waits for its disconnection to be
    /// reported), else the next spare id.
    mutating func freeConnectionID(handle: UInt16?) -> ConnectionID {
        if let handle, links[ConnectionID(handle)] == nil, !disconnecting.contains(ConnectionID(handle)) {
            return ConnectionID(handle)
        }
        var chosen: ConnectionID
        repeat {
            chosen = ConnectionID(spareConnectionID)
            spareConnectionID = spareConnectionID == .max ? 0x1000 : spareConnectionID + 1
        } while links[chosen] != nil || disconnecting.contains(chosen)
        return chosen
    }

    /// LE Connection Complete in the peripheral role (Core Spec Vol 6 Part B §4.4.2): true when
    /// it ended advertising (a failed attempt, or a link not known yet).
    mutating func connectionComplete(status: UInt8, handle: UInt16) -> Bool {
        guard status == 0 else { return true }
        disconnectReasons[handle] = nil  // a stale reason of an earlier link with this handle
        return peripheralHandles.insert(handle).inserted
    }

    /// Disconnection Complete: the reason is kept for the socket's close, which may come
    /// before or after this.
    mutating func disconnectionComplete(status: UInt8, handle: UInt16, reason: UInt8) {
        guard status == 0 else { return }
        peripheralHandles.remove(handle)
        disconnectReasons[handle] = reason
        if disconnectReasons.count > 64 { disconnectReasons.removeAll() }
    }

    /// The socket's security level as read now: true when it moved (report it).
    mutating func securityRead(_ id: ConnectionID, socket: KernelSocketID, level: SecurityLevel) -> Bool {
        guard let link = link(id, socket: socket), level != link.security else { return false }
        links[id]?.security = level
        return true
    }

    /// The link now on `handle`: the newest accepted one not waiting for its disconnection to
    /// be reported (an old link keeps its handle until its socket closes; the handle may be
    /// reused meanwhile).
    func current(onHandle handle: UInt16) -> ConnectionID? {
        links.filter { $0.value.handle == handle && !disconnecting.contains($0.key) }.max { $0.value.socket < $1.value.socket }?.key
    }

    /// The links on `handle` (Encryption Change, Key Refresh Complete), in order.
    func links(onHandle handle: UInt16) -> [(ConnectionID, KernelLink)] {
        ids.compactMap { id in links[id].flatMap { $0.handle == handle ? (id, $0) : nil } }
    }

    /// The socket closed (EOF or an error): the link is gone; its disconnection is reported
    /// through `disconnection(of:...)`.
    mutating func closed(_ id: ConnectionID, socket: KernelSocketID) -> KernelLink? {
        guard let link = link(id, socket: socket) else { return nil }
        links[id] = nil
        if let handle = link.handle { peripheralHandles.remove(handle) }
        return link
    }

    /// What to report about a closed link's disconnection.
    enum Disconnection: Equatable {
        /// Report it now, with this reason (and a detail when the reason was not known).
        case report(HCIStatus, detail: String?)
        /// The HCI reason comes from the monitor's Disconnection Complete, which may arrive
        /// just after the socket's ECONNRESET: ask again shortly (`waited` true).
        case wait
    }

    /// The reason of `link`'s disconnection; until it is reported, its id stays taken.
    mutating func disconnection(of id: ConnectionID, _ link: KernelLink, why: String?, waited: Bool) -> Disconnection {
        let known = link.handle.flatMap { disconnectReasons.removeValue(forKey: $0) }.map { HCIStatus($0) }
        if known == nil, !waited {
            disconnecting.insert(id)
            return .wait
        }
        disconnecting.remove(id)
        return .report(known ?? .connectionTimeout, detail: known == nil ? why ?? "unknown" : nil)
    }

    /// The connected central at `address` (its ATT socket's peer), or at `alias` (the RPA it
    /// paired with before it gave its identity).
    func connection(of address: BluetoothAddress, alias: BluetoothAddress? = nil) -> ConnectionID? {
        ids.first { id in
            let peer = links[id]?.peer.address
            return peer == address || (alias != nil && peer == alias)
        }
    }

    /// The connection on the same link as an L2CAP channel: same connection handle, or (when
    /// the kernel did not tell a handle) same peer address and type.
    func connection(handle: UInt16?, peer: KernelBDAddress) -> ConnectionID? {
        if let handle { return ids.first { links[$0]?.handle == handle } }
        return ids.first { links[$0]?.peer == peer }
    }

    /// The adapter went (or gattd closes): every link is gone, in order; nothing waits for a reason.
    mutating func removeAll() -> [(ConnectionID, KernelLink)] {
        let gone = ids.compactMap { id in links[id].map { (id, $0) } }
        links.removeAll()
        peripheralHandles.removeAll()
        disconnectReasons.removeAll()
        return gone
    }
}
