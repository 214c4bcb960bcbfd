import CSystemdBus
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// The thread that owns one sd-bus connection: it runs queued work, lets sd-bus process
/// what came in (calling our handlers), and sleeps in poll(2) on the bus fd and a wake-up
/// pipe until sd-bus's next event or timeout. Everything that touches the bus runs here.
final class DBusBusThread: @unchecked Sendable {
    private struct Queue {
        var jobs: [@Sendable (DBusBusThread) -> Void] = []
        var stopping = false
        var finished = false
    }

    /// sd-bus's connection; used on the thread only (after `init` hands it over).
    let bus: OpaquePointer
    private let queue = Mutex(Queue())
    private let wakeRead: Int32
    private let wakeWrite: Int32
    private var thread = pthread_t()
    /// Bus-thread state.
    var disconnectHandler: (@Sendable (DBusError) -> Void)?
    /// Boxes sd-bus holds as userdata for the bus's lifetime (exports, matches).
    private var retained: [AnyObject] = []
    private var disconnected = false

    init(bus: OpaquePointer) throws(DBusError) {
        self.bus = bus
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else {
            sd_bus_unref(bus)
            throw DBusError(errno: errno, "pipe")
        }
        for fd in ends {
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        }
        wakeRead = ends[0]
        wakeWrite = ends[1]
        let me = Unmanaged.passRetained(self).toOpaque()
        let r = pthread_create(&thread, nil, { arg in
            let t = Unmanaged<DBusBusThread>.fromOpaque(arg!).takeRetainedValue()
            t.run()
            return nil
        }, me)
        if r != 0 {
            Unmanaged<DBusBusThread>.fromOpaque(me).release()
            close(wakeRead)
            close(wakeWrite)
            sd_bus_unref(bus)
            throw DBusError(errno: r, "starting the D-Bus thread")
        }
    }

    /// Queues `job` for the bus thread (dropped once the thread has finished).
    func enqueue(_ job: @escaping @Sendable (DBusBusThread) -> Void) {
        let queued = queue.withLock { q in
            guard !q.stopping else { return false }
            q.jobs.append(job)
            return true
        }
        if queued { wake() }
    }

    /// Ends the thread after the queued work and waits for it.
    func stop() {
        let first = queue.withLock { q in
            defer { q.stopping = true }
            return !q.stopping
        }
        guard first else { return }
        wake()
        pthread_join(thread, nil)
    }

    /// Drops a call's message reference (from any thread: queued for the bus thread), first
    /// answering it with `answer` when it was never answered.
    func release(_ message: OpaquePointer, answer: DBusError?) {
        let m = UnsafeSendable(message)
        let queued = queue.withLock { q in
            guard !q.finished else { return false }
            q.jobs.append { t in
                if let answer { t.replyError(m.value, answer) }
                _ = sd_bus_message_unref(m.value)
            }
            return true
        }
        // The thread is gone: nothing else touches the message (it holds the bus until freed).
        guard queued else { return _ = sd_bus_message_unref(message) }
        wake()
    }

    private func wake() {
        var one: UInt8 = 1
        _ = write(wakeWrite, &one, 1)
    }

    private func run() {
        while true {
            let (jobs, stopping) = queue.withLock { q in
                defer { q.jobs = [] }
                return (q.jobs, q.stopping)
            }
            for job in jobs { job(self) }
            if stopping { break }
            guard processAll() else { continue }
            waitForWork()
        }
        _ = sd_bus_flush_close_unref(bus)
        close(wakeRead)
        close(wakeWrite)
        // Work queued too late is dropped outside the lock: a dropped job may hold the last
        // reference to a call, whose deinit releases its message (`release`, which locks).
        let late = queue.withLock { q in
            q.finished = true
            defer { q.jobs = [] }
            return q.jobs
        }
        _ = consume late
        retained = []
    }

    /// Lets sd-bus handle everything pending; false once the connection broke (reported once).
    private func processAll() -> Bool {
        guard !disconnected else {
            waitForWork()
            return false
        }
        var r: Int32
        repeat { r = sd_bus_process(bus, nil) } while r > 0
        if r < 0 || sd_bus_is_open(bus) <= 0 {
            disconnected = true
            disconnectHandler?(.disconnected(r < 0 ? "the bus connection broke: \(errnoText(-r))" : "the bus closed the connection"))
            return false
        }
        return true
    }

    /// Sleeps until the bus fd is ready, sd-bus's timeout passes, or work is queued.
    private func waitForWork() {
        var fds = [pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0)]
        var timeout: Int32 = -1
        if !disconnected {
            let events = sd_bus_get_events(bus)
            fds.append(pollfd(fd: sd_bus_get_fd(bus), events: Int16(max(0, events)), revents: 0))
            var usec: UInt64 = 0
            if sd_bus_get_timeout(bus, &usec) > 0, usec != UInt64.max {
                var now = timespec()
                clock_gettime(CLOCK_MONOTONIC, &now)
                let nowUsec = UInt64(now.tv_sec) * 1_000_000 + UInt64(now.tv_nsec) / 1_000
                timeout = usec <= nowUsec ? 0 : Int32(min(UInt64(Int32.max), (usec - nowUsec + 999) / 1_000))
            }
        }
        _ = poll(&fds, nfds_t(fds.count), timeout)
        if fds[0].revents != 0 {
            var sink = [UInt8](repeating: 0, count: 64)
            while read(wakeRead, &sink, sink.count) > 0 {}
        }
    }

    // MARK: - Work on the bus thread

    /// Closes the fds an outgoing message carried (sd-bus holds its own duplicates).
    private func closeFDs(_ values: [DBusValue]) {
        for fd in DBusValue.fileDescriptors(in: values) { close(fd) }
    }

    func call(_ c: DBusCall, timeout: Duration?, reply: @escaping @Sendable (Result<[DBusValue], DBusError>) -> Void) {
        defer { closeFDs(c.arguments) }
        var m: OpaquePointer?
        var r = sd_bus_message_new_method_call(bus, &m, c.destination, c.path, c.interface, c.member)
        guard r >= 0, let m else { return reply(.failure(DBusError(errno: -r, "calling \(c.interface).\(c.member)"))) }
        defer { sd_bus_message_unref(m) }
        do { try DBusMarshalling.append(c.arguments, to: m) } catch { return reply(.failure(error)) }
        let box = Unmanaged.passRetained(ReplyBox(reply)).toOpaque()
        let usec = timeout.map { UInt64(max(0, $0.components.seconds)) * 1_000_000 + UInt64(max(0, $0.components.attoseconds / 1_000_000_000_000)) } ?? 0
        r = sd_bus_call_async(bus, nil, m, { message, userdata, _ in
            let box = Unmanaged<ReplyBox>.fromOpaque(userdata!).takeRetainedValue()
            box.reply(DBusBusThread.result(of: message!))
            return 1
        }, box, usec)
        if r < 0 {
            Unmanaged<ReplyBox>.fromOpaque(box).release()
            reply(.failure(DBusError(errno: -r, "calling \(c.interface).\(c.member)")))
        }
    }

    /// A method return's values, or the error it carries.
    static func result(of message: OpaquePointer) -> Result<[DBusValue], DBusError> {
        if sd_bus_message_is_method_error(message, nil) > 0 {
            guard let e = sd_bus_message_get_error(message) else { return .failure(DBusError("org.freedesktop.DBus.Error.Failed", "")) }
            let name = e.pointee.name.map { String(cString: $0) } ?? "org.freedesktop.DBus.Error.Failed"
            let text = e.pointee.message.map { String(cString: $0) } ?? ""
            return .failure(DBusError(name, text))
        }
        do { return .success(try DBusMarshalling.readAll(message)) } catch { return .failure(error) }
    }

    func export(prefix: String, handler: @escaping @Sendable (DBusIncomingCall) -> Void) {
        let box = CallHandlerBox(handler, thread: self)
        retained.append(box)
        _ = sd_bus_add_fallback(bus, nil, prefix, { message, userdata, _ in
            let box = Unmanaged<CallHandlerBox>.fromOpaque(userdata!).takeUnretainedValue()
            return box.thread.incoming(message!, box.handler)
        }, Unmanaged.passUnretained(box).toOpaque())
    }

    private func incoming(_ m: OpaquePointer, _ handler: @Sendable (DBusIncomingCall) -> Void) -> Int32 {
        guard sd_bus_message_is_method_call(m, nil, nil) > 0 else { return 0 }
        func text(_ p: UnsafePointer<CChar>?) -> String { p.map { String(cString: $0) } ?? "" }
        let arguments: [DBusValue]
        do {
            arguments = try DBusMarshalling.readAll(m)
        } catch {
            replyError(m, .invalidArgs(error.message))
            return 1
        }
        sd_bus_message_ref(m)
        handler(DBusIncomingCall(
            message: m, bus: self, sender: text(sd_bus_message_get_sender(m)), path: text(sd_bus_message_get_path(m)),
            interface: text(sd_bus_message_get_interface(m)), member: text(sd_bus_message_get_member(m)), arguments: arguments))
        return 1
    }

    func reply(_ call: DBusIncomingCall, _ result: Result<[DBusValue], DBusError>) {
        guard call.markAnswered(), sd_bus_message_get_expect_reply(call.message) > 0 else {
            if case .success(let values) = result { closeFDs(values) }
            return
        }
        switch result {
        case .success(let values):
            defer { closeFDs(values) }
            var reply: OpaquePointer?
            guard sd_bus_message_new_method_return(call.message, &reply) >= 0, let reply else { return }
            defer { sd_bus_message_unref(reply) }
            do {
                try DBusMarshalling.append(values, to: reply)
                _ = sd_bus_send(bus, reply, nil)
            } catch {
                replyError(call.message, error)
            }
        case .failure(let error):
            replyError(call.message, error)
        }
    }

    private func replyError(_ call: OpaquePointer, _ error: DBusError) {
        guard sd_bus_message_get_expect_reply(call) > 0 else { return }
        var e = csdbus_error_null()
        _ = sd_bus_error_set(&e, error.name, error.message)
        _ = sd_bus_reply_method_error(call, &e)
        sd_bus_error_free(&e)
    }

    func uniqueName(_ handler: @Sendable (Result<String, DBusError>) -> Void) {
        var p: UnsafePointer<CChar>?
        let r = sd_bus_get_unique_name(bus, &p)
        if r < 0 { return handler(.failure(DBusError(errno: -r, "asking for our bus name"))) }
        handler(.success(p.map { String(cString: $0) } ?? ""))
    }

    func emit(path: String, interface: String, member: String, _ arguments: [DBusValue]) {
        defer { closeFDs(arguments) }
        var m: OpaquePointer?
        guard sd_bus_message_new_signal(bus, &m, path, interface, member) >= 0, let m else { return }
        defer { sd_bus_message_unref(m) }
        guard (try? DBusMarshalling.append(arguments, to: m)) != nil else { return }
        _ = sd_bus_send(bus, m, nil)
    }

    func subscribe(
        sender: String?, path: String?, interface: String?, member: String?,
        installed: (@Sendable (DBusError?) -> Void)?, handler: @escaping @Sendable (DBusSignal) -> Void
    ) {
        let box = SignalBox(handler, installed: installed)
        retained.append(box)
        let r = sd_bus_match_signal_async(bus, nil, sender, path, interface, member, { message, userdata, _ in
            let box = Unmanaged<SignalBox>.fromOpaque(userdata!).takeUnretainedValue()
            let m = message!
            func text(_ p: UnsafePointer<CChar>?) -> String { p.map { String(cString: $0) } ?? "" }
            let arguments = (try? DBusMarshalling.readAll(m)) ?? []
            box.handler(DBusSignal(
                sender: text(sd_bus_message_get_sender(m)), path: text(sd_bus_message_get_path(m)),
                interface: text(sd_bus_message_get_interface(m)), member: text(sd_bus_message_get_member(m)), arguments: arguments))
            return 0
        }, { message, userdata, _ in
            let box = Unmanaged<SignalBox>.fromOpaque(userdata!).takeUnretainedValue()
            if case .failure(let e) = DBusBusThread.result(of: message!) { box.installed?(e) } else { box.installed?(nil) }
            return 0
        }, Unmanaged.passUnretained(box).toOpaque())
        if r < 0 { installed?(DBusError(errno: -r, "adding a signal match")) }
    }
}

private final class ReplyBox {
    let reply: @Sendable (Result<[DBusValue], DBusError>) -> Void
    init(_ reply: @escaping @Sendable (Result<[DBusValue], DBusError>) -> Void) { self.reply = reply }
}

private final class CallHandlerBox {
    let handler: @Sendable (DBusIncomingCall) -> Void
    unowned let thread: DBusBusThread
    init(_ handler: @escaping @Sendable (DBusIncomingCall) -> Void, thread: DBusBusThread) {
        self.handler = handler
        self.thread = thread
    }
}

private final class SignalBox {
    let handler: @Sendable (DBusSignal) -> Void
    let installed: (@Sendable (DBusError?) -> Void)?
    init(_ handler: @escaping @Sendable (DBusSignal) -> Void, installed: (@Sendable (DBusError?) -> Void)?) {
        self.handler = handler
        self.installed = installed
    }
}
