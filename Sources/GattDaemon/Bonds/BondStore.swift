#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import GattCore

/// A bond as kept on disk: the keys and when the pairing happened (for `max_bonds` eviction).
public struct StoredBond: Sendable, Equatable {
    public var bond: Bond
    /// Seconds since the Unix epoch.
    public var created: Int64
    /// The last Sign Counter accepted in a signed write with the central's CSRK (Core Spec
    /// Vol 3 Part C §10.4.2): a replayed or older counter is refused, also after a restart.
    public var peerSignCounter: UInt32?
    /// When the central last encrypted a link with this bond (seconds since the Unix epoch).
    public var lastSeen: Int64?
    public init(bond: Bond, created: Int64, peerSignCounter: UInt32? = nil, lastSeen: Int64? = nil) {
        self.bond = bond
        self.created = created
        self.peerSignCounter = peerSignCounter
        self.lastSeen = lastSeen
    }
}

/// The bonds under `<state-dir>/bonds/`, one file per central, named by its identity address
/// (`00:1B:DC:01:02:03.json`, mode 0600, directory 0700). A save replaces the file the
/// `SystemStateDirectory` way (temp file, fsync, rename, directory fsync), so a crash leaves
/// the old or the new bond. A file that cannot be read as a bond is set aside
/// (`.corrupt-<time>`) and reported, never fatal. The format is `BondCodec`'s.
public struct BondStore {
    public let directory: SystemStateDirectory

    /// The store in `stateDirectory/bonds`.
    public init(stateDirectory: String) {
        self.directory = SystemStateDirectory(stateDirectory + "/bonds")
    }

    static func fileName(_ address: BluetoothAddress) -> String { "\(address).json" }

    /// The saved bonds, oldest first, and sentences for the log about files set aside or
    /// left over from an interrupted save.
    public func load() -> (bonds: [StoredBond], problems: [String]) {
        var bonds: [StoredBond] = []
        var problems: [String] = []
        for name in directory.fileNames() {
            if name.contains(".json.tmp-") {
                do {
                    try directory.remove(name)
                    problems.append("removed \(directory.path)/\(name), left over from an interrupted save")
                } catch {
                    problems.append("\(error)")
                }
                continue
            }
            guard name.hasSuffix(".json") else { continue }
            do {
                guard let bytes = try directory.read(name) else { continue }
                if let b = BondCodec.decode(bytes) {
                    bonds.append(b)
                    continue
                }
                let aside = try directory.setAside(name, suffix: "corrupt-\(BondStore.unixTime())")
                problems.append("the bond file \(directory.path)/\(name) is not a valid bond; set aside as \(aside) and ignored")
            } catch {
                problems.append("\(error); the bond is ignored")
            }
        }
        return (bonds.sorted { ($0.created, $0.bond.address.description) < ($1.created, $1.bond.address.description) }, problems)
    }

    /// Writes `bond` durably before returning.
    public func save(_ bond: StoredBond) throws(StateFileError) {
        try directory.replace(Self.fileName(bond.bond.address), with: BondCodec.encode(bond))
    }

    /// Our Identity Resolving Key, `bonds/local-irk` (32 hex digits, mode 0600): made once
    /// and kept, so bonded centrals recognise our private addresses after restarts. A file
    /// that is not a key is set aside and a new key made (`problem` says so).
    public func localIRK() throws(StateFileError) -> (irk: [UInt8], problem: String?) {
        var problem: String?
        if let bytes = try directory.read("local-irk") {
            let text = String(decoding: bytes, as: UTF8.self).trimmingSuffix("\n")
            if let irk = BondCodec.unhex(text), irk.count == 16 { return (irk, nil) }
            let aside = try directory.setAside("local-irk", suffix: "corrupt-\(BondStore.unixTime())")
            problem = "\(directory.path)/local-irk is not a key; set aside as \(aside), a new one made (bonded centrals no longer resolve our private addresses)"
        }
        var generator = SystemRandomNumberGenerator()
        let irk = (0..<16).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
        try directory.replace("local-irk", with: Array((BondCodec.hex(irk) + "\n").utf8))
        return (irk, problem)
    }

    /// Deletes the bond of `address` (no error if there is none).
    public func remove(_ address: BluetoothAddress) throws(StateFileError) {
        try directory.remove(Self.fileName(address))
    }

    static func unixTime() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return Int64(ts.tv_sec)
    }
}

extension String {
    fileprivate func trimmingSuffix(_ suffix: String) -> String {
        hasSuffix(suffix) ? String(dropLast(suffix.count)) : self
    }
}
