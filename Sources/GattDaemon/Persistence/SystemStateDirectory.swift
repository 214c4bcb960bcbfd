#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import SystemPackage

/// `StateDirectory` on the file system, with swift-system's `FileDescriptor` and `FilePath`
/// (fsync, fdatasync, rename, mkdir and readdir, which swift-system lacks, are the libc calls).
public final class SystemStateDirectory: StateDirectory {
    public let directory: FilePath
    public var path: String { directory.string }

    public init(_ directory: String) { self.directory = FilePath(directory) }

    func file(_ name: String) -> FilePath { directory.appending(name) }

    public func read(_ name: String) throws(StateFileError) -> [UInt8]? {
        let p = file(name)
        let fd: FileDescriptor
        do {
            fd = try FileDescriptor.open(p, .readOnly, options: [.closeOnExec])
        } catch Errno.noSuchFileOrDirectory {
            return nil
        } catch {
            throw StateFileError("read", p.string, error as? Errno ?? .ioError)
        }
        var out: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        do {
            try fd.closeAfter {
                while true {
                    let n = try chunk.withUnsafeMutableBytes { try fd.read(into: $0) }
                    if n == 0 { break }
                    out += chunk[0..<n]
                }
            }
        } catch {
            throw StateFileError("read", p.string, error as? Errno ?? .ioError)
        }
        return out
    }

    public func replace(_ name: String, with bytes: [UInt8]) throws(StateFileError) {
        try makeDirectory()
        let target = file(name)
        let temp = file("\(name).tmp-\(getpid())")
        do {
            let fd = try FileDescriptor.open(temp, .writeOnly, options: [.create, .truncate, .closeOnExec], permissions: [.ownerReadWrite])
            do {
                try fd.closeAfter {
                    _ = try fd.writeAll(bytes)
                    try Self.check(fsync(fd.rawValue))
                }
            } catch {
                _ = temp.withPlatformString { unlink($0) }
                throw error
            }
        } catch {
            throw StateFileError("write", temp.string, error as? Errno ?? .ioError)
        }
        let moved = temp.withPlatformString { t in target.withPlatformString { rename(t, $0) } }
        if moved != 0 {
            let e = Errno(rawValue: errno)
            _ = temp.withPlatformString { unlink($0) }
            throw StateFileError("rename \(temp.string) to", target.string, e)
        }
        try syncDirectory()
    }

    public func write(_ name: String, _ bytes: [UInt8], at offset: Int) throws(StateFileError) {
        let p = file(name)
        do {
            let fd: FileDescriptor
            do {
                fd = try FileDescriptor.open(p, .writeOnly, options: [.closeOnExec])
            } catch .noSuchFileOrDirectory {
                try makeDirectory()
                fd = try FileDescriptor.open(p, .writeOnly, options: [.create, .closeOnExec], permissions: [.ownerReadWrite])
                try fd.closeAfter { try Self.check(fsync(fd.rawValue)) }
                try syncDirectory()
                return try write(name, bytes, at: offset)
            }
            try fd.closeAfter {
                _ = try fd.writeAll(toAbsoluteOffset: Int64(offset), bytes)
                try Self.check(fdatasync(fd.rawValue))
            }
        } catch let e as StateFileError {
            throw e
        } catch {
            throw StateFileError("write", p.string, error as? Errno ?? .ioError)
        }
    }

    public func truncate(_ name: String, to length: Int) throws(StateFileError) {
        let p = file(name)
        do {
            let fd = try FileDescriptor.open(p, .writeOnly, options: [.closeOnExec])
            try fd.closeAfter {
                try fd.resize(to: Int64(length))
                try Self.check(fsync(fd.rawValue))
            }
        } catch Errno.noSuchFileOrDirectory {
            return
        } catch {
            throw StateFileError("truncate", p.string, error as? Errno ?? .ioError)
        }
    }

    public func setAside(_ name: String, suffix: String) throws(StateFileError) -> String {
        let p = file(name)
        var candidate = FilePath("\(p.string).\(suffix)")
        var n = 2
        while candidate.withPlatformString({ access($0, F_OK) }) == 0 {
            candidate = FilePath("\(p.string).\(suffix)-\(n)")
            n += 1
        }
        let moved = p.withPlatformString { from in candidate.withPlatformString { rename(from, $0) } }
        guard moved == 0 else { throw StateFileError("rename", p.string, Errno(rawValue: errno)) }
        return candidate.string
    }

    public func removeFiles(withPrefix prefix: String) -> [String] {
        fileNames().filter { $0.hasPrefix(prefix) }.map { name in
            let full = file(name)
            if full.withPlatformString({ unlink($0) }) == 0 { return "removed \(full), left over from an interrupted save" }
            return "cannot remove \(full), left over from an interrupted save: \(Errno(rawValue: errno))"
        }
    }

    /// The names in the directory, sorted, without `.` and `..` (none when it is missing).
    public func fileNames() -> [String] {
        guard let dir = directory.withPlatformString({ opendir($0) }) else { return [] }
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

    /// Deletes the file durably (a missing file is fine).
    public func remove(_ name: String) throws(StateFileError) {
        let p = file(name)
        if p.withPlatformString({ unlink($0) }) != 0 {
            let e = Errno(rawValue: errno)
            if e == .noSuchFileOrDirectory { return }
            throw StateFileError("remove", p.string, e)
        }
        try syncDirectory()
    }

    // MARK: Helpers

    private static func check(_ result: Int32) throws(Errno) {
        if result != 0 { throw Errno(rawValue: errno) }
    }

    private func syncDirectory() throws(StateFileError) {
        do {
            let fd = try FileDescriptor.open(directory, .readOnly, options: [.directory, .closeOnExec])
            try fd.closeAfter { try Self.check(fsync(fd.rawValue)) }
        } catch {
            throw StateFileError("fsync", path, error as? Errno ?? .ioError)
        }
    }

    /// `mkdir -p`: missing parents get 0755, the directory itself 0700.
    private func makeDirectory() throws(StateFileError) {
        var missing: [FilePath] = []
        var current = directory
        var st = stat()
        while !current.isEmpty, current.withPlatformString({ stat($0, &st) }) != 0 {
            let e = Errno(rawValue: errno)
            guard e == .noSuchFileOrDirectory else { throw StateFileError("create", path, e) }
            missing.append(current)
            guard current.removeLastComponent() else { break }
        }
        if missing.isEmpty, (st.st_mode & S_IFMT) != S_IFDIR {
            throw StateFileError("use", path, .notDirectory)
        }
        for (i, d) in missing.reversed().enumerated() {
            let mode: mode_t = i == missing.count - 1 ? 0o700 : 0o755
            if d.withPlatformString({ mkdir($0, mode) }) != 0, errno != EEXIST {
                throw StateFileError("create", d.string, Errno(rawValue: errno))
            }
        }
    }
}
