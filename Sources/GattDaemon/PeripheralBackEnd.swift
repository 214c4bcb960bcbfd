import GattCore
import Logging
import NIOCore

/// What the shared daemon code does to a back end's sans-I/O core: the H4 daemon's
/// `Host` (which wraps an `ATTServer` and turns its outputs into HCI packets), or the
/// kernel daemon's `ATTServer` itself. `Output` is what the back end's `process` performs.
protocol ATTServing {
    associatedtype Output
    var database: GATTDatabase { get }
    var nextDeadline: Duration? { get }
    mutating func tick(now: Duration) -> [Output]
    /// `ATTServer.notify`.
    mutating func notifySubscribers(characteristic: Int, value: [UInt8], only: ConnectionID?, now: Duration) -> (NotifyResult, [Output])
    mutating func setValue(characteristic: Int, value: [UInt8]) -> Bool
    mutating func respond(to request: PendingRequestID, result: Result<[UInt8], ATTError>, now: Duration) throws(ATTRespondError) -> [Output]
    mutating func setControlClientAttached(_ attached: Bool)
    mutating func failPendingRequests(now: Duration) -> [Output]
    mutating func replaceDatabase(_ database: GATTDatabase, now: Duration) -> [Output]
}

extension Host: ATTServing {
    var database: GATTDatabase { att.database }

    mutating func notifySubscribers(characteristic: Int, value: [UInt8], only: ConnectionID?, now: Duration) -> (NotifyResult, [HostOutput]) {
        notify(characteristic: characteristic, value: value, only: only, now: now)
    }
}

extension ATTServer: ATTServing {
    mutating func notifySubscribers(characteristic: Int, value: [UInt8], only: ConnectionID?, now: Duration) -> (NotifyResult, [ATTServerOutput]) {
        let r = notify(characteristic: characteristic, value: value, only: only, now: now)
        return (r.result, r.outputs)
    }

    mutating func setControlClientAttached(_ attached: Bool) { controlClientAttached = attached }
}

/// A daemon back end as the shared code sees it: its core, its state, and the few things
/// each transport does its own way. The protocol extension below holds everything both
/// back ends do alike: most of `PeripheralControl`, SIGHUP `reload`, the event log lines,
/// what an event means for control clients, persistence and systemd, and the core's timer.
///
/// Everything is called on `eventLoop`.
protocol PeripheralBackEnd: GattPeripheralDaemon {
    associatedtype Server: ATTServing
    /// Runs `body` on the core, in place. Never nested (exclusive access).
    func withServer<R, E: Error>(_ body: (inout Server) throws(E) -> R) throws(E) -> R
    /// Performs the core's outputs (sends, events) and re-arms the timer.
    func process(_ outputs: [Server.Output])
    /// Reload: the payloads changed (already set); advertise with them.
    func advertisingPayloadsChanged()
    /// Connected centrals, for the systemd status line.
    var centralCount: Int { get }
    /// The reload line for a new database (default: the hashes and the indication count).
    func databaseChangedLine(oldHash: [UInt8], newHash: [UInt8], serviceChanged: NotifyResult) -> String

    var logger: Logger { get }
    var options: DaemonOptions { get }
    var persisted: PersistedValues? { get }
    /// Monotonic time since the daemon's origin, as the core wants it.
    var now: Duration { get }
    var configuration: GattConfiguration { get set }
    var payloads: AdvertisingPayloads { get set }
    var controlAttached: Bool { get set }
    /// READY=1 was sent (the first time advertising went on).
    var readyNotified: Bool { get set }
    /// The core's timer (`nextDeadline`).
    var timer: Scheduled<Void>? { get set }
    /// systemd watchdog pings.
    var watchdog: RepeatedTask? { get set }
    var shutdown: DaemonShutdown { get set }
}

/// Where a daemon's shutdown stands: begun by the first `stop()`, finished once.
struct DaemonShutdown {
    /// Completed when the daemon has stopped; nil until `stop()`.
    var promise: EventLoopPromise<Void>?
    var finished = false
}

// MARK: - PeripheralControl

extension PeripheralBackEnd {
    public var database: GATTDatabase { withServer { $0.database } }

    public func notify(characteristic: Int, value: [UInt8], only: ConnectionID?) -> NotifyResult {
        let now = self.now
        let (result, outputs) = withServer { $0.notifySubscribers(characteristic: characteristic, value: value, only: only, now: now) }
        process(outputs)
        if case .queued = result { persisted?.record(database, characteristic: characteristic, value: value, on: eventLoop) }  // persist
        return result
    }

    public func setValue(characteristic: Int, value: [UInt8]) -> Bool {
        guard withServer({ $0.setValue(characteristic: characteristic, value: value) }) else { return false }
        persisted?.record(database, characteristic: characteristic, value: value, on: eventLoop)  // persist
        return true
    }

    public func respond(to request: PendingRequestID, result: Result<[UInt8], ATTError>) -> Bool {
        let now = self.now
        do {
            process(try withServer { (s) throws(ATTRespondError) in try s.respond(to: request, result: result, now: now) })
            return true
        } catch {
            return false
        }
    }

    // persist: durable-before-acknowledged, shared by the ATT path and the control socket.
    public func persist(_ writes: [PersistedWrite], central: String?) -> EventLoopFuture<Void>? {
        let db = database
        guard let persisted, writes.contains(where: { db.characteristics.indices.contains($0.characteristic) && db.characteristics[$0.characteristic].persist })
        else { return nil }
        let future = persisted.commit(db, writes, on: eventLoop)
        future.whenFailure { error in
            for w in writes where db.characteristics.indices.contains(w.characteristic) {
                self.controlEventHandler?(.persistFailed(central: central, characteristic: db.characteristics[w.characteristic].displayName, message: "\(error)"))
            }
        }
        return future
    }

    public func setControlClientAttached(_ attached: Bool) {
        controlAttached = attached
        withServer { $0.setControlClientAttached(attached) }
        let now = self.now
        if !attached { process(withServer { $0.failPendingRequests(now: now) }) }
    }
}

// MARK: - Reload (SIGHUP)

extension PeripheralBackEnd {
    /// Switches to a new, already validated config without dropping connections.
    /// A different Database Hash rebuilds the ATT server with the new database
    /// (values of characteristics with the same id carry over) and indicates
    /// Service Changed (0x0001–0xFFFF) to subscribed centrals; new advertising
    /// data or parameters restart advertising with them.
    public func reload(configuration new: GattConfiguration, payloads newPayloads: AdvertisingPayloads) -> EventLoopFuture<Void> {
        eventLoop.submit {
            try? self.options.notifier.reloading()
            let old = self.database
            var db = new.makeDatabase()
            self.persisted?.apply(to: &db)
            let oldHash = old.attribute(at: old.databaseHashHandle)?.value ?? []
            let newHash = db.attribute(at: db.databaseHashHandle)?.value ?? []
            self.configuration = new
            let now = self.now
            if oldHash != newHash {
                self.process(self.withServer { $0.replaceDatabase(db, now: now) })
                let (r, outputs) = self.withServer { $0.notifySubscribers(characteristic: 2, value: [0x01, 0x00, 0xFF, 0xFF], only: nil, now: now) }
                self.process(outputs)
                self.logger.info("\(self.databaseChangedLine(oldHash: oldHash, newHash: newHash, serviceChanged: r))")
            } else {
                // Device Name and Appearance values are not part of the hash.
                for i in 0..<2 where old.value(ofCharacteristic: i) != db.value(ofCharacteristic: i) {
                    _ = self.withServer { $0.setValue(characteristic: i, value: db.value(ofCharacteristic: i)) }
                }
                self.logger.info("config reloaded: database unchanged")
            }
            if newPayloads != self.payloads {
                self.payloads = newPayloads
                self.advertisingPayloadsChanged()
                self.logger.info("config reloaded: advertising data changed; advertising restarted")
            }
            try? self.options.notifier.ready(status: self.statusLine())
        }
    }

    /// The reload line for a new database.
    func databaseChangedLine(oldHash: [UInt8], newHash: [UInt8], serviceChanged r: NotifyResult) -> String {
        let sent: String
        switch r {
        case .queued(let n): sent = "Service Changed indicated to \(n) central\(n == 1 ? "" : "s")"
        default: sent = "Service Changed not indicated (\(r))"
        }
        return "config reloaded: database changed (hash \(AttributeValueLiteral.hexString(oldHash)) → \(AttributeValueLiteral.hexString(newHash))); \(sent)"
    }
}

// MARK: - Events: log lines, control clients, persistence, systemd

extension PeripheralBackEnd {
    var eventLog: PeripheralEventLog { PeripheralEventLog(logger: logger) }

    /// The systemd STATUS= text.
    func statusLine() -> String {
        let n = centralCount
        return "\"\(advertisedName)\": \(n) central\(n == 1 ? "" : "s") connected"
    }

    var advertisedName: String { configuration.advertising.localName ?? configuration.name }

    /// Advertising went on or off; the first time on, the daemon is ready (READY=1).
    func advertisingChanged(_ on: Bool) {
        eventLog.advertising(on, as: advertisedName)
        if on, !readyNotified {
            readyNotified = true
            try? options.notifier.ready(status: statusLine())
        }
    }

    func centralConnected(_ address: BluetoothAddress, type: String, handle: UInt16?) {
        eventLog.connected(address, type: type, handle: handle)
        try? options.notifier.status(statusLine())
        controlEventHandler?(.connected(central: address.description))
    }

    /// `loggedReason`: the log line's reason when it says more than `reason`.
    func centralDisconnected(_ address: BluetoothAddress, reason: HCIStatus, loggedReason: String? = nil) {
        eventLog.disconnected(address, reason: loggedReason ?? "\(reason)")
        try? options.notifier.status(statusLine())
        controlEventHandler?(.disconnected(central: address.description, reason: reason.controlName))
    }

    /// An ATT server event: its log line, the value of a write to persist, the control event.
    func attEvent(_ event: ATTServerEvent, central: (ConnectionID) -> String?) {
        let db = database
        eventLog.att(event, database: db, central: central)
        if case .written(_, let c, let v) = event { persisted?.record(db, characteristic: c, value: v, on: eventLoop) }  // persist: Write Commands
        if case .persistRequest(let request, let id, let writes) = event { answerPersistRequest(request, writes, central: central(id)) }  // persist
        if let handler = controlEventHandler, let e = ControlEvent.from(event, database: db, central: central) {
            handler(e)
        }
    }

    /// persist: answers a `.persistRequest` once the values are durable (Unlikely Error when they
    /// cannot be); a durable value whose request is gone (central left) is still put in place.
    func answerPersistRequest(_ request: PendingRequestID, _ writes: [PersistedWrite], central: String?) {
        guard let future = persist(writes, central: central) else {
            eventLoop.execute { _ = self.respond(to: request, result: .success([])) }
            return
        }
        future.whenComplete { result in
            switch result {
            case .success:
                if !self.respond(to: request, result: .success([])) {
                    for w in writes { _ = self.withServer { $0.setValue(characteristic: w.characteristic, value: w.value) } }
                }
            case .failure:
                _ = self.respond(to: request, result: .failure(.unlikelyError))
            }
        }
    }

    /// Schedules the core's next `tick`.
    func armTimer() {
        timer?.cancel()
        timer = nil
        guard let deadline = withServer({ $0.nextDeadline }) else { return }
        let delay = max(.zero, deadline - now)
        timer = eventLoop.scheduleTask(in: TimeAmount(delay)) {
            let now = self.now
            self.process(self.withServer { $0.tick(now: now) })
        }
    }
}

// MARK: - Stop

extension PeripheralBackEnd {
    /// Whether `stop()` was called.
    var stopping: Bool { shutdown.promise != nil }

    /// `stop()`: the first call tells systemd (STOPPING=1) and runs `begin`, the transport's
    /// goodbyes, which end in `finishingStop()`; every call returns the same future.
    func stopOnce(_ begin: @escaping @Sendable () -> Void) -> EventLoopFuture<Void> {
        eventLoop.flatSubmit {
            if let p = self.shutdown.promise { return p.futureResult }
            let p = self.eventLoop.makePromise(of: Void.self)
            self.shutdown.promise = p
            try? self.options.notifier.stopping()
            begin()
            return p.futureResult
        }
    }

    /// The first call after `stop()`: cancels the timers, flushes the persisted values and
    /// returns the promise to succeed once the transport is closed. Later calls: nil.
    func finishingStop() -> EventLoopPromise<Void>? {
        guard let p = shutdown.promise, !shutdown.finished else { return nil }
        shutdown.finished = true
        timer?.cancel()
        watchdog?.cancel()
        persisted?.flush()
        return p
    }
}
