import GattCore

// Channels the kernel accepted besides the links' ATT sockets, as rules: Enhanced ATT bearers
// (PSM 0x0027, Core Vol 3 Part F §3.2.11) and the apps' LE credit-based channels. The kernel
// accepts the ATT bearer of a link before any channel of it, but the two sockets' accepts
// reach the loop in either order: a channel whose link is not known yet waits for it a little.
extension KernelBearers {
    /// Places an accepted channel on its link's connection, or has it wait (on `timers`) for
    /// the link while it has attempts left.
    mutating func findLink(
        _ socket: KernelSocketID, _ channel: KernelWaitingChannel, adapterReady: Bool, now: Duration, timers: inout KernelTimers
    ) -> [KernelAction] {
        guard adapterReady else { return [.close(socket)] }
        let known = links.connection(handle: channel.handle, peer: channel.peer)
        if known == nil, channel.attemptsLeft > 0 {
            waitingChannels[socket] = channel
            timers.add(.findChannelLink(socket), at: now + .milliseconds(20))
            return []
        }
        switch channel.purpose {
        case .enhancedATT:
            guard let connection = known, let link = links[connection] else {
                return [.log(.debug, "\(channel.peer) opened an EATT channel on a link gattd has no ATT bearer of; closed"), .close(socket)]
            }
            return enhancedBearerOpened(socket, channel, on: connection, link: link)
        case .server(let server):
            // No ATT link for it (its bearer was refused, or is gone): an id no connection has, so
            // the peripheral reports the channel without a central (the handle's, as `accepted` would give).
            let id = known ?? links.freeConnectionID(handle: channel.handle)
            return [.openChannel(socket, server: server, connection: id, linkKnown: known != nil)]
        }
    }

    /// An EATT channel of a known link: a bearer of its connection (its id from the channel's
    /// local CID, its ATT_MTU the smaller of the two L2CAP MTUs).
    private mutating func enhancedBearerOpened(
        _ socket: KernelSocketID, _ channel: KernelWaitingChannel, on connection: ConnectionID, link: KernelLink
    ) -> [KernelAction] {
        let taken = Set(enhanced.keys.filter { $0.connection == connection }.map(\.channel))
        let plan = KernelEnhancedBearerPlan(
            connection: connection, localCID: channel.localCID, taken: taken, ourMTU: channel.mtu, peerMTU: channel.peerMTU)
        let id = plan.id
        let ours = channel.mtu ?? KernelEnhancedATT.mtu
        enhanced[id] = KernelEnhancedBearer(socket: socket, ourMTU: ours, mtu: plan.mtu)
        sockets[socket] = id
        let theirs = channel.peerMTU.map(String.init) ?? "unknown"
        return [
            .log(.debug, "\(id): \(channel.peer) opened an Enhanced ATT bearer (ATT_MTU \(plan.mtu): ours \(ours), theirs \(theirs))"),
            .event(.enhancedBearer(id, .opened(mtu: plan.mtu))),
            .startReading(socket, bearer: id, securityFrom: link.socket, readsMTU: true, captureHandle: nil),
            .event(.readyToSend(id)),
        ]
    }

    /// Closes the channel (the kernel sends the L2CAP Disconnection Request); the core has
    /// forgotten the bearer already, so no `.closed` follows.
    mutating func closeEnhancedBearer(_ id: BearerID) -> [KernelAction] {
        guard let bearer = enhanced.removeValue(forKey: id) else { return [] }
        sockets[bearer.socket] = nil
        return [.close(bearer.socket)]
    }

    /// The link is gone (nil: every link, the adapter went): its channels go with it. The core
    /// forgets a connection's bearers with its disconnection, so nothing is reported.
    mutating func closeEnhancedBearers(of connection: ConnectionID?, _ out: inout [KernelAction]) {
        for id in enhanced.keys.sorted() where connection == nil || id.connection == connection {
            out += closeEnhancedBearer(id)
        }
    }
}

/// One Enhanced ATT bearer: an accepted EATT channel's socket, by id.
struct KernelEnhancedBearer: Sendable, Equatable {
    let socket: KernelSocketID
    /// Our MTU on the channel (BT_RCVMTU) and the bearer's ATT_MTU as the core knows it.
    let ourMTU: Int
    var mtu: Int
}
