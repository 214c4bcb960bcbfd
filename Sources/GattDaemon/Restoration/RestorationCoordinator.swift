import GattControlProtocol
import GattCore
import Logging

/// State restoration in one place: owns `<state-dir>/restore.json` (`RestoredState`), what
/// programs changed at run time, written durably before the change is acknowledged, and
/// read back at start. Off (no state directory, `--no-state-restoration` or the config's
/// `"state_restoration": false`): nothing is read or written, and a restart serves the
/// config alone.
struct RestorationCoordinator {
    static let fileName = "restore.json"

    /// Nil: restoration is off.
    let directory: SystemStateDirectory?
    let logger: Logger
    /// The state as last written (what a restart would put back).
    private(set) var state = RestoredState()

    init(stateDirectory: String?, enabled: Bool, logger: Logger) {
        directory = enabled ? stateDirectory.map { SystemStateDirectory($0) } : nil
        self.logger = logger
    }

    var isEnabled: Bool { directory != nil }

    /// Reads the file (at start). An unreadable one is set aside and reported: gattd starts
    /// with the config alone rather than not at all.
    mutating func load() -> RestoredState {
        guard let directory else { return state }
        do {
            guard let bytes = try directory.read(Self.fileName) else { return state }
            if let s = RestoredStateCodec.decode(bytes) {
                state = s
            } else {
                let aside = try directory.setAside(Self.fileName, suffix: "corrupt-\(BondStore.unixTime())")
                logger.warning("\(directory.path)/\(Self.fileName) is not valid; set aside as \(aside) (runtime services and advertising choices are not restored)")
            }
        } catch {
            logger.warning("\(error); runtime services and advertising choices are not restored")
        }
        return state
    }

    /// Makes `new` the state a restart puts back, durably (temp file, fsync, rename) before
    /// returning; on failure nothing changes and the error says why.
    mutating func save(_ new: RestoredState) throws(StateFileError) {
        guard let directory, new != state else { return }
        try directory.replace(Self.fileName, with: RestoredStateCodec.encode(new))
        state = new
    }

    /// `save`, with a failure logged (for changes that are applied whatever happens).
    mutating func keep(_ new: RestoredState, what: String) {
        do {
            try save(new)
        } catch {
            logger.error("\(error); \(what) lasts only until gattd stops")
        }
    }
}
