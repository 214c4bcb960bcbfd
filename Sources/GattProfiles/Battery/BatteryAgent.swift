import GattControlProtocol
import Glibc
import Logging
import NIOCore

/// Runs one `battery` service: reads the capacity file every `poll_interval_s` and notifies
/// Battery Level when it changed (the control `notify` op: it sets the value and notifies every
/// subscribed central, waiting for room rather than dropping one). Without a capacity file
/// the level is whatever programs `notify`/`set`. Confined to the event loop.
final class BatteryAgent: ProfileAgent, @unchecked Sendable {
    let options: BatteryOptions
    let eventLoop: any EventLoop
    let connect: () -> EventLoopFuture<CInt>
    let logger: Logger
    private var connection: ControlConnection?
    private var task: RepeatedTask?
    private var reading = BatteryReading()
    private var stopped = false

    init(options: BatteryOptions, eventLoop: any EventLoop, connect: @escaping () -> EventLoopFuture<CInt>, logger: Logger) {
        self.options = options
        self.eventLoop = eventLoop
        self.connect = connect
        self.logger = logger
    }

    func start() {
        guard let file = options.capacityFile ?? Self.systemBattery() else {
            logger.info("battery: no power supply reports a capacity; \(options.levelID) is set with gattctl notify \(options.levelID) LEVEL")
            return
        }
        ControlConnection.open(connect, on: eventLoop, logger: logger, what: "battery") { [self] c in
            guard !stopped else { return c.close() }
            connection = c
            logger.info("battery: \(options.levelID) follows \(file)")
            let every = TimeAmount(options.pollInterval)
            task = eventLoop.scheduleRepeatedTask(initialDelay: .zero, delay: every) { [weak self] _ in
                self?.poll(file)
            }
        }
    }

    func stop() {
        stopped = true
        task?.cancel()
        task = nil
        connection?.close()
        connection = nil
    }

    private func poll(_ file: String) {
        let text = SystemFacts.readSmallFile(file)
        switch reading.update(text) {
        case .none: break
        case .unreadable(let first):
            if first { logger.warning("battery: cannot read a level (0-100) from \(file); \(options.levelID) keeps its value") }
        case .changed(let level):
            _ = connection?.request(.notify(characteristic: options.levelID, value: ControlValue(hex: [level]), central: nil, wait: true))
        }
    }

    /// The capacity file of the first power supply of type Battery, if any.
    static func systemBattery(root: String = "/sys/class/power_supply") -> String? {
        guard let dir = opendir(root) else { return nil }
        defer { closedir(dir) }
        var names: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            if !name.hasPrefix(".") { names.append(name) }
        }
        for name in names.sorted() {
            let base = root + "/" + name
            guard SystemFacts.readSmallFile(base + "/type")?.trimmingWhitespace == "Battery", SystemFacts.readSmallFile(base + "/capacity") != nil
            else { continue }
            return base + "/capacity"
        }
        return nil
    }
}

/// The level as last read (the rule apart from the I/O): a change is notified, an unreadable
/// file is logged once until it reads again.
struct BatteryReading {
    enum Change: Equatable {
        case none
        case changed(UInt8)
        /// `first`: the first failure since the last good reading.
        case unreadable(first: Bool)
    }
    private(set) var level: UInt8?
    private var failing = false

    mutating func update(_ text: String?) -> Change {
        guard let t = text?.trimmingWhitespace, let n = Int(t), n >= 0 else {
            defer { failing = true }
            return .unreadable(first: !failing)
        }
        failing = false
        let l = UInt8(min(n, 100))
        guard l != level else { return .none }
        level = l
        return .changed(l)
    }
}
