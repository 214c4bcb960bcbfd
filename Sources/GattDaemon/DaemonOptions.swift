import GattCore
import Logging
import NIOCore

/// What a daemon needs besides the config and the transport.
public struct DaemonOptions: Sendable {
    /// Time a control client has to answer a forwarded read/write (`--request-timeout`).
    public var requestTimeout: Duration = .seconds(5)
    /// Where `persist` characteristics' values are kept; nil: not kept.
    public var stateDirectory: String?
    /// Whether runtime services and advertising choices are kept in `stateDirectory` and put
    /// back at start (state restoration; the config's `state_restoration` can turn it off too).
    public var restoresState = true
    /// Log size (bytes) above which a commit of persisted values compacts
    /// (`PersistentStore.compactionThreshold`).
    public var compactionThreshold = PersistentStore.defaultCompactionThreshold
    /// The files of `stateDirectory`'s persisted values; nil: the real directory (tests
    /// put a fake that fails on demand here).
    public var stateFiles: (any StateDirectory & Sendable)?
    /// Where commits of persisted values run; nil: a serial queue (`PersistedValues.CommitRunner`).
    public var commitRunner: PersistedValues.CommitRunner?
    /// systemd notifications (no-ops unless started by systemd with Type=notify).
    public var notifier = SystemdNotifier()
    /// Where the controller is (`tcp:127.0.0.1:9000`, `hci0`), for the systemd status
    /// "waiting for the controller at …".
    public var controllerLocation: String?
    /// The config file's name, before the paths of config errors found at run time
    /// (`gattd.json: advertising_sets[1]: ...`).
    public var configName: String?
    /// Expands `services` entries the core does not know (profiles) in `add_service` and in
    /// restored runtime services, as the config loader did for the config's.
    public var serviceExpander: (any ServiceExpander)?
    public init() {}

    /// The systemd STATUS= text while the controller is not (yet) there.
    var waitingStatus: String { "waiting for the controller" + (controllerLocation.map { " at \($0)" } ?? "") }

    /// The ATT server settings these options ask for.
    var attServerConfiguration: ATTServerConfiguration {
        var c = ATTServerConfiguration()
        c.deferredAccessTimeout = requestTimeout
        return c
    }

    /// The persisted values in `stateDirectory`; nil when values are not kept.
    func persistedValues(logger: Logger) -> PersistedValues? {
        guard let path = stateDirectory else { return nil }
        var files: any StateDirectory = SystemStateDirectory(path)
        if let stateFiles { files = stateFiles }
        return PersistedValues(store: PersistentStore(directory: files, compactionThreshold: compactionThreshold), logger: logger, runner: commitRunner)
    }
}

extension SystemdNotifier {
    /// Sends `WATCHDOG=1` every `watchdogPingInterval` on `eventLoop`; nil when systemd
    /// asked for no watchdog.
    func scheduleWatchdog(on eventLoop: any EventLoop) -> RepeatedTask? {
        guard let every = watchdogPingInterval, every > .zero else { return nil }
        return eventLoop.scheduleRepeatedTask(initialDelay: .zero, delay: TimeAmount(every)) { _ in
            try? self.watchdog()
        }
    }
}

extension TimeAmount {
    /// "250 ms", "1.5 s": how retry delays appear in the log.
    var logDescription: String {
        let ms = nanoseconds / 1_000_000
        return ms >= 1000 ? "\(Double(ms) / 1000) s" : "\(ms) ms"
    }
}
