import GattCore
import Logging
import DequeModule
import NIOCore
import NIOPosix

/// The control socket: a Unix stream socket speaking newline-delimited JSON
/// (one request or reply or event per line; see docs and `ControlRequest`).
/// Any number of clients; a client that sent `watch` also receives events, and one that
/// sent `{"op":"watch","requests":true}` is also a responder: while at least one is
/// connected, reads and writes of `"handler": "control"` characteristics are forwarded.
///
/// Runs on the peripheral's event loop; all state is confined to it.
public final class ControlServer: @unchecked Sendable {
    public struct Options: Sendable {
        public var path: String
        /// Group owning the socket (mode 0660); nil keeps the daemon's group.
        public var group: String?
        /// A client whose unsent output exceeds this is disconnected.
        public var maximumOutputBytes = 1 << 20
        public var maximumLineLength = ControlRequest.maximumLineLength
        /// Clients connected at once; the next one gets a `too_many_clients` line and is closed.
        public var maximumClients = Options.defaultMaximumClients
        public static let defaultMaximumClients = 256
        public init(path: String, group: String? = nil) {
            self.path = path
            self.group = group
        }
    }

    public let options: Options
    public let eventLoop: any EventLoop
    let logger: Logger
    let peripheral: any PeripheralControl
    private var serverChannel: (any Channel)?
    private(set) var clients: [ObjectIdentifier: ControlClient] = [:]
    private var nextClientNumber = 1
    private var attached = false
    /// Whether any client watches (passive or responder): pairing prompts need one.
    private var watched = false
    /// The client limit was hit and logged; logged again only after the count went below it.
    private var refusing = false
    /// App L2CAP channels handed to listening clients.
    private(set) lazy var channels = L2CAPChannelHandover(server: self)

    public init(peripheral: any PeripheralControl, eventLoop: any EventLoop, options: Options, logger: Logger) {
        self.peripheral = peripheral
        self.eventLoop = eventLoop
        self.options = options
        self.logger = logger
    }

    /// Sets up the socket file (stale/live/group checks), binds and starts accepting.
    public func start() -> EventLoopFuture<Void> {
        let gid: gid_t?
        do {
            gid = try options.group.map { name throws(ControlSocketError) in try ControlSocketPath.groupID(name) }
            try ControlSocketPath.prepare(options.path)
        } catch {
            return eventLoop.makeFailedFuture(error)
        }
        let bootstrap = ServerBootstrap(group: eventLoop)
            .serverChannelOption(.backlog, value: 64)
            .childChannelInitializer { [self] channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(ControlClientHandler(server: self))
                }
            }
        return bootstrap.bind(unixDomainSocketPath: options.path).flatMapThrowing { [self] channel in
            do {
                try ControlSocketPath.setPermissions(options.path, group: gid)
            } catch {
                channel.close(promise: nil)
                throw error
            }
            serverChannel = channel
            peripheral.controlEventHandler = { [weak self] event in self?.broadcast(event) }
            channels.l2cap?.l2capChannelHandler = { [weak self] channel, socket, central in self?.channels.deliver(channel, socket: socket, central: central) ?? false }
            logger.info("control socket listening on \(options.path)")
        }
    }

    /// Closes every client and the socket, and removes the socket file.
    public func stop() -> EventLoopFuture<Void> {
        eventLoop.flatSubmit { [self] in
            peripheral.controlEventHandler = nil
            channels.l2cap?.l2capChannelHandler = nil
            for c in clients.values {
                channels.closePassing(c)
                c.channel.close(promise: nil)
            }
            clients = [:]
            updateAttached()
            channels.updateListeners()
            guard let ch = serverChannel else { return eventLoop.makeSucceededVoidFuture() }
            serverChannel = nil
            return ch.close().always { _ in _ = unlink(self.options.path) }
        }
    }

    // MARK: - Clients

    /// A new connection: its client, or nil when over `maximumClients` (it then gets one
    /// error line and is closed). gattd's own agents (`local`, bounded by the config) neither
    /// count nor are refused: a small `--max-control-clients` must not starve the profiles, nor
    /// the profiles the programs.
    func added(_ channel: any Channel, local: Bool) -> ControlClient? {
        let programs = clients.values.reduce(0) { $0 + ($1.local ? 0 : 1) }
        guard local || programs < options.maximumClients else {
            if !refusing {
                refusing = true
                logger.warning("control socket: \(options.maximumClients) clients connected (--max-control-clients); refusing more until one leaves")
            }
            let line = ControlReply.failure(ControlError(.tooManyClients, "gattd already has \(options.maximumClients) control clients (--max-control-clients); try again later")).text(id: nil)
            var buffer = channel.allocator.buffer(capacity: line.utf8.count + 1)
            buffer.writeString(line + "\n")
            channel.writeAndFlush(buffer).whenComplete { _ in channel.close(promise: nil) }
            return nil
        }
        if refusing, programs < options.maximumClients - 1 { refusing = false }
        let c = ControlClient(number: nextClientNumber, channel: channel, local: local)
        nextClientNumber += 1
        clients[ObjectIdentifier(c)] = c
        logger.debug("control client \(c.number) connected")
        return c
    }

    func removed(_ c: ControlClient) {
        guard clients.removeValue(forKey: ObjectIdentifier(c)) != nil else { return }
        logger.debug("control client \(c.number) disconnected")
        channels.closePassing(c)
        updateAttached()
        channels.updateListeners()
    }

    private func updateAttached() {
        // gattd's own agents (profiles) are no person who could answer a pairing prompt.
        let watched = clients.values.contains { $0.watching && !$0.local }
        if watched != self.watched {
            self.watched = watched
            peripheral.setControlWatched(watched)
        }
        let now = clients.values.contains { $0.responding }
        guard now != attached else { return }
        attached = now
        peripheral.setControlClientAttached(now)
    }

    /// Handles one received line. A reply is written as soon as it and every earlier
    /// reply to this client are known (persisted `set`/`notify` wait for the disk), so
    /// replies keep request order.
    func received(_ framed: ControlLineFramer.Output, from c: ControlClient) {
        // Behind a notify that waits for room: in order, after it.
        if c.waiting != nil {
            c.held.append(framed)
            return
        }
        switch framed {
        case .tooLong:
            reply(.now(.failure(ControlError(.badJSON, "line too long (more than \(options.maximumLineLength) bytes)"))), id: nil, to: c)
        case .line(let bytes):
            do {
                // The fast path for plain notify lines first; anything else the general decoder.
                let request: ControlRequest
                if let fast = ControlRequest.decodeNotify(bytes) {
                    request = fast
                } else {
                    request = try ControlRequest.decode(bytes)
                }
                let outcome = execute(request.command, for: c)
                if request.command.waitsForRoom, case .now(.failure(let e)) = outcome, e.code == .busy {
                    wait(c, request)
                    return
                }
                reply(outcome, id: request.id, to: c)
            } catch {
                reply(.now(.failure(error.error)), id: error.id, to: c)
            }
        }
    }

    private func reply(_ outcome: ControlOutcome, id: JSONText?, to c: ControlClient) {
        switch outcome {
        case .now(let r) where c.unsentReplies.isEmpty:
            guard !c.dropped else { return }
            // Gathered: the replies to one read batch leave in one buffer (`sendBatch`).
            if c.batch == nil { c.batch = c.channel.allocator.buffer(capacity: 256) }
            c.batch!.writeControlReplyLine(r, id: id)
        case .now(let r):
            c.unsentReplies.append(ControlClient.ReplySlot(text: r.text(id: id)))
        case .later(let future):
            let slot = ControlClient.ReplySlot(text: nil)
            c.unsentReplies.append(slot)
            future.assumeIsolated().whenComplete { [self] result in
                let r: ControlReply
                switch result {
                case .success(let reply): r = reply
                case .failure(let error): r = .failure(ControlError(.persistFailed, "\(error)"))
                }
                if case .failure(let e) = r, e.code == .busy { c.owesReady = true }
                slot.text = r.text(id: id)
                while let first = c.unsentReplies.first, let text = first.text {
                    c.unsentReplies.removeFirst()
                    send(text, to: c, flush: true)
                }
            }
        }
    }

    private func execute(_ command: ControlCommand, for client: ControlClient) -> ControlOutcome {
        if case .watch(let requests) = command {
            client.watching = true
            if let requests { client.responding = requests }
            logger.debug("control client \(client.number) watches\(client.responding ? " and answers requests" : "")")
            updateAttached()
            return .now(.success)
        }
        if case .signal(let name) = command {
            broadcast(.signal(name: name))
            return .now(.success)
        }
        if case .l2capListen = command { return channels.listen(command, for: client) }
        if case .l2capUnlisten = command { return channels.listen(command, for: client) }
        let r = ControlDispatcher.execute(command, on: peripheral)
        if case .now(.failure(let e)) = r, e.code == .busy { client.owesReady = true }
        return r
    }

    /// A `"wait":true` notify found a full queue: the client's later requests are held (and its
    /// socket not read) until `ready` lets the notify through.
    private func wait(_ c: ControlClient, _ request: ControlRequest) {
        c.waiting = request
        c.owesReady = false
        c.channel.setOption(ChannelOptions.autoRead, value: false).whenFailure { _ in }
    }

    /// On `ready`: each waiting notify is tried again; once one goes through (or fails for
    /// another reason), its reply is sent and the requests held behind it run, in order.
    private func resumeWaiting() {
        for c in Array(clients.values) where c.waiting != nil && !c.dropped {
            guard let request = c.waiting else { continue }
            let outcome = execute(request.command, for: c)
            if case .now(.failure(let e)) = outcome, e.code == .busy {
                c.owesReady = false
                continue  // still full (another subscriber, or another client was first)
            }
            c.waiting = nil
            reply(outcome, id: request.id, to: c)
            while c.waiting == nil, !c.dropped, !c.held.isEmpty {
                received(c.held.removeFirst(), from: c)
            }
            if c.waiting == nil { c.channel.setOption(ChannelOptions.autoRead, value: true).whenFailure { _ in } }
            sendBatch(c)
            c.channel.flush()
        }
    }

    /// Sends an event to every watcher (and `ready` also to clients owed it).
    private func broadcast(_ event: ControlEvent) {
        if event == .ready { resumeWaiting() }
        let text = event.text
        logger.trace("event \(text)")
        let isReady = event == .ready
        for c in Array(clients.values) where c.watching || (isReady && c.owesReady) {
            if isReady { c.owesReady = false }
            send(text, to: c, flush: true)
        }
    }

    /// Writes the replies gathered in `c.batch` (before anything else is sent to `c`, and at
    /// the end of each read batch).
    func sendBatch(_ c: ControlClient) {
        guard let batch = c.batch else { return }
        c.batch = nil
        send(batch, to: c, flush: false)
    }

    private func send(_ line: String, to c: ControlClient, flush: Bool) {
        guard !c.dropped else { return }
        sendBatch(c)
        var buffer = c.channel.allocator.buffer(capacity: line.utf8.count + 1)
        buffer.writeString(line)
        buffer.writeInteger(UInt8(0x0A))
        send(buffer, to: c, flush: flush)
    }

    /// Sends one line (with its newline) unless the client is over its output limit.
    private func send(_ buffer: ByteBuffer, to c: ControlClient, flush: Bool) {
        guard !c.dropped else { return }
        // What the channel holds unsent (no promise per write: a client that stops reading
        // must not cost a closure and a promise per queued line).
        let pending = (try? c.channel.syncOptions?.getOption(.bufferedWritableBytes)) ?? 0
        if pending + buffer.readableBytes > options.maximumOutputBytes {
            c.dropped = true
            logger.warning("control client \(c.number) does not read its replies/events (over \(options.maximumOutputBytes) bytes unsent); dropping it")
            c.unsentReplies = []
            c.batch = nil
            // Once its queued writes are released, give the freed heap back to the system.
            c.channel.closeFuture.whenComplete { _ in ReleaseMemory.now() }
            c.channel.close(mode: .all, promise: nil)
            channels.closePassing(c)
            removed(c)
            return
        }
        if flush {
            c.channel.writeAndFlush(buffer, promise: nil)
        } else {
            c.channel.write(buffer, promise: nil)
        }
    }
}
