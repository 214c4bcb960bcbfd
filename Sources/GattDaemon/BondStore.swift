#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import GattCore
import SystemPackage

/// A bond as kept on disk: the keys and when the pairing happened (for `max_bonds` eviction).
public struct StoredBond: Sendable, Equatable {
    public var bond: Bond
    /// Seconds since the Unix epoch.
    public var created: Int64
    public init(bond: Bond, created: Int64) {
        self.bond = bond
        self.created = created
    }
}

/// The bonds under `<state-dir>/bonds/`, one file per central, named by its identity address
/// (`00:1B:DC:01:02:03.json`, mode 0600). A save writes a temp file, fsyncs it, renames it
/// over the bond's file and fsyncs the directory, so a crash leaves the old or the new bond.
/// A file that cannot be read as a bond is renamed aside (`.corrupt-<time>`) and reported,
/// never fatal. The format is `BondCodec`'s.
public struct BondStore: Sendable {
    public struct Error: Swift.Error, Sendable, CustomStringConvertible {
        public var description: String
    }

    public let directory: FilePath

    /// The store in `stateDirectory/bonds`.
    public init(stateDirectory: String) {
        self.directory = FilePath(stateDirectory).appending("bonds")
    }

    func path(of address: BluetoothAddress) -> FilePath { directory.appending("\(address).json") }

    /// The saved bonds, oldest first, and sentences for the log about files set aside.
    public func load() -> (bonds: [StoredBond], problems: [String]) {
        var bonds: [StoredBond] = []
        var problems: [String] = []
        for name in Self.fileNames(in: directory) {
            let file = directory.appending(name)
            if name.contains(".json.tmp") {
                _ = unlink(file.string)
                continue
            }
            guard name.hasSuffix(".json") else { continue }
            let bytes: [UInt8]
            do {
                bytes = try Self.read(file)
            } catch {
                problems.append("cannot read the bond \(file): \(error)")
                continue
            }
            if let b = BondCodec.decode(bytes) {
                bonds.append(b)
            } else {
                let aside = file.string + ".corrupt-\(Self.unixTime())"
                let moved = rename(file.string, aside) == 0
                problems.append("the bond file \(file) is not a valid bond; \(moved ? "set aside as \(aside)" : "left in place") and ignored")
            }
        }
        return (bonds.sorted { ($0.created, $0.bond.address.description) < ($1.created, $1.bond.address.description) }, problems)
    }

    /// Writes `bond` durably (see the type's comment) before returning.
    public func save(_ bond: StoredBond) throws(Error) {
        try makeDirectory()
        let target = path(of: bond.bond.address)
        let temp = FilePath(target.string + ".tmp-\(getpid())")
        do {
            let fd = try FileDescriptor.open(temp, .writeOnly, options: [.create, .truncate], permissions: [.ownerReadWrite])
            try fd.closeAfter {
                _ = try fd.writeAll(BondCodec.encode(bond))
                guard fsync(fd.rawValue) == 0 else { throw Errno(rawValue: errno) }
            }
            guard rename(temp.string, target.string) == 0 else { throw Errno(rawValue: errno) }
            let dir = try FileDescriptor.open(directory, .readOnly)
            try dir.closeAfter {
                guard fsync(dir.rawValue) == 0 else { throw Errno(rawValue: errno) }
            }
        } catch {
            _ = unlink(temp.string)
            throw Error(description: "cannot save the bond \(target): \(error)")
        }
    }

    /// Deletes the bond of `address` (no error if there is none).
    public func remove(_ address: BluetoothAddress) {
        _ = unlink(path(of: address).string)
    }

    private func makeDirectory() throws(Error) {
        for dir in [directory.removingLastComponent(), directory] {
            if mkdir(dir.string, 0o700) != 0 && errno != EEXIST {
                throw Error(description: "cannot create \(dir): \(Errno(rawValue: errno))")
            }
        }
    }

    static func unixTime() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return Int64(ts.tv_sec)
    }

    static func read(_ path: FilePath) throws -> [UInt8] {
        let fd = try FileDescriptor.open(path, .readOnly)
        return try fd.closeAfter {
            var out: [UInt8] = []
            var chunk = [UInt8](repeating: 0, count: 4096)
            while true {
                let n = try chunk.withUnsafeMutableBytes { try fd.read(into: $0) }
                if n == 0 { return out }
                out += chunk[0..<n]
                if out.count > 65536 { return out }  // not a bond; the decoder refuses it
            }
        }
    }

    static func fileNames(in directory: FilePath) -> [String] {
        guard let dir = opendir(directory.string) else { return [] }
        defer { closedir(dir) }
        var names: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names.sorted()
    }
}
