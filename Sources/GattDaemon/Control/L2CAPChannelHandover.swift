import DequeModule
import GattControlProtocol
import GattCore
import Logging
import NIOCore

#if canImport(Glibc)
import Glibc
#endif

/// App L2CAP channels on the control socket: clients listen for channel ids (`l2cap_listen`),
/// and each channel a central opens goes to one of them (in turn) as an `l2cap_channel` event
/// whose first byte carries the channel's socket (SCM_RIGHTS). It owns who listens for what as
/// the peripheral was last told and whose turn it is; each client's queue of channels to pass
/// is the client's (`ControlClient.passing`). Confined to the control server's event loop.
final class L2CAPChannelHandover {
    private unowned let server: ControlServer
    /// Listening clients per L2CAP channel, as the peripheral was last told.
    private var listenerCounts: [String: Int] = [:]
    /// The client each channel went to last (channels are handed out in turn).
    private var lastListener: [String: Int] = [:]

    init(server: ControlServer) { self.server = server }

    /// The peripheral's side of app channels (nil: it has none).
    var l2cap: (any L2CAPChannelControl)? { server.peripheral as? any L2CAPChannelControl }
    private var logger: Logger { server.logger }

    func listen(_ command: ControlCommand, for client: ControlClient) -> ControlOutcome {
        guard let l2cap else { return .now(.failure(ControlError(.unknownOp, "L2CAP channels are not supported here"))) }
        switch command {
        case .l2capListen(let id):
            guard var channel = l2cap.l2capChannelList.first(where: { $0.id == id }) else {
                return .now(.failure(ControlError(.unknownChannel, "no L2CAP channel \"\(id)\"; \(Self.known(l2cap))")))
            }
            if client.socketFD == nil { client.socketFD = ControlClientSocket.descriptor(of: client.channel) }
            guard client.socketFD != nil else {
                return .now(.failure(ControlError(.unknownOp, "cannot pass sockets on this control connection")))
            }
            client.listening.insert(id)
            logger.debug("control client \(client.number) listens for L2CAP channel \"\(id)\"")
            updateListeners()
            channel.listeners = nil
            channel.runtime = false
            return .now(.l2capChannel(channel))
        case .l2capUnlisten(let id):
            guard client.listening.remove(id) != nil else {
                return .now(.failure(ControlError(.unknownChannel, "this client does not listen for \"\(id)\"")))
            }
            updateListeners()
            return .now(.success)
        default:
            return .now(.failure(ControlError(.unknownOp, "\(command.op) is not a listening op")))
        }
    }

    private static func known(_ l2cap: any L2CAPChannelControl) -> String {
        let ids = l2cap.l2capChannelList.map { "\"\($0.id)\"" }
        return ids.isEmpty ? "none is declared (config \"l2cap_channels\" or publish_l2cap_channel)" : "channels: " + ids.joined(separator: ", ")
    }

    /// Tells the peripheral how many clients listen for each channel.
    func updateListeners() {
        guard let l2cap else { return }
        var counts: [String: Int] = [:]
        for c in server.clients.values where !c.dropped {
            for id in c.listening { counts[id, default: 0] += 1 }
        }
        guard counts != listenerCounts else { return }
        listenerCounts = counts
        l2cap.setL2CAPListeners(counts)
    }

    /// Channels queued for one client at most: a client that does not read its socket gets no
    /// more (they go to another listener, or are closed), so its queue cannot hold sockets
    /// without bound.
    static let maximumPassing = 8

    /// An opened channel: to the next client listening for it; false when there is none (or
    /// every one has `maximumPassing` channels still waiting to be passed).
    func deliver(_ channel: L2CAPChannelOpened, socket: Int32, central: String) -> Bool {
        let listeners = server.clients.values.filter {
            !$0.dropped && $0.listening.contains(channel.server) && $0.socketFD != nil && $0.passing.count < Self.maximumPassing
        }.sorted { $0.number < $1.number }
        guard !listeners.isEmpty else { return false }
        let last = lastListener[channel.server] ?? 0
        let c = listeners.first { $0.number > last } ?? listeners[0]
        lastListener[channel.server] = c.number
        let event = ControlEvent.l2capChannel(
            channel: channel.server, psm: channel.psm, central: central, mtu: channel.mtu, peerMTU: channel.peerMTU)
        c.passing.append((socket, event.text))
        passSockets(to: c)
        return true
    }

    /// Sends `c`'s queued channel events, each once everything sent before it has left (the
    /// socket rides on the line's first byte, written past NIO).
    func passSockets(to c: ControlClient) {
        guard !c.passingBlocked else { return }
        while !c.passing.isEmpty {
            server.sendBatch(c)  // may drop the client (output limit): checked next
            // NIO closes the socket before it fails pending writes and reports the client gone:
            // an inactive channel's descriptor number may already be someone else's.
            guard !c.dropped, c.channel.isActive, let fd = c.socketFD, let (socket, line) = c.passing.first else {
                return closePassing(c)
            }
            c.channel.flush()
            let pending = (try? c.channel.syncOptions?.getOption(.bufferedWritableBytes)) ?? 0
            if pending > 0 {
                // Wait for NIO's queue to drain (its writes complete in order).
                c.passingBlocked = true
                c.channel.writeAndFlush(c.channel.allocator.buffer(capacity: 0)).assumeIsolated().whenComplete { [self] _ in
                    c.passingBlocked = false
                    passSockets(to: c)
                }
                return
            }
            let utf8 = Array(line.utf8)
            if !ControlClientSocket.send(utf8[0], passing: socket, on: fd) {
                if errno == EAGAIN || errno == EWOULDBLOCK {
                    c.passingBlocked = true
                    c.channel.eventLoop.assumeIsolated().scheduleTask(in: .milliseconds(10)) { [self] in
                        c.passingBlocked = false
                        passSockets(to: c)
                    }
                    return
                }
                logger.warning("control client \(c.number): cannot pass an L2CAP channel (\(String(cString: strerror(errno)))); closing it")
                return closePassing(c)
            }
            c.passing.removeFirst()
            _ = close(socket)  // the client has its own copy now
            var rest = c.channel.allocator.buffer(capacity: utf8.count)
            rest.writeBytes(utf8.dropFirst())
            rest.writeInteger(UInt8(0x0A))
            c.channel.writeAndFlush(rest, promise: nil)
        }
    }

    /// Closes the sockets still queued for `c` (it left or cannot take them).
    func closePassing(_ c: ControlClient) {
        for (socket, _) in c.passing { _ = close(socket) }
        c.passing.removeAll()
    }
}
