#if canImport(Glibc)
import Glibc
#endif
import Synchronization
import SystemPackage

@testable import GattDaemon

/// An in-memory `StateDirectory` whose files are what a crash would leave at any moment
/// (each operation is durable when it returns). Failures and torn writes are injected.
final class FakeStateDirectory: StateDirectory, @unchecked Sendable {
    struct State {
        var files: [String: [UInt8]] = [:]
        /// Every operation fails with this errno while set.
        var failing: Errno?
        /// The next `write` puts only this many bytes on "disk", then fails with EIO.
        var tearNextWriteAfter: Int?
        var writes = 0
        var replaces = 0
        /// `write` waits while this is set (group commit tests).
        var blockWrites = false
        var blocked = 0
    }
    let state = Mutex(State())
    let path = "/fake"

    var files: [String: [UInt8]] { state.withLock { $0.files } }
    func text(_ name: String) -> String? { state.withLock { $0.files[name].map { String(decoding: $0, as: UTF8.self) } } }
    func setFailing(_ e: Errno?) { state.withLock { $0.failing = e } }

    private func check(_ op: String, _ name: String) throws(StateFileError) {
        if let e = state.withLock({ $0.failing }) { throw StateFileError(op, "\(path)/\(name)", e) }
    }

    func read(_ name: String) throws(StateFileError) -> [UInt8]? {
        try check("read", name)
        return state.withLock { $0.files[name] }
    }

    func replace(_ name: String, with bytes: [UInt8]) throws(StateFileError) {
        try check("write", name + ".tmp")
        state.withLock {
            $0.files[name] = bytes
            $0.replaces += 1
        }
    }

    func write(_ name: String, _ bytes: [UInt8], at offset: Int) throws(StateFileError) {
        while state.withLock({ s in
            if s.blockWrites { s.blocked += 1 }
            return s.blockWrites
        }) {
            usleepMilliseconds(1)
        }
        try check("write", name)
        let torn: Int? = state.withLock { s in
            var file = s.files[name] ?? []
            let tear = s.tearNextWriteAfter
            s.tearNextWriteAfter = nil
            let part = tear.map { Array(bytes.prefix($0)) } ?? bytes
            if file.count < offset { file += [UInt8](repeating: 0, count: offset - file.count) }
            for (i, b) in part.enumerated() {
                if offset + i < file.count { file[offset + i] = b } else { file.append(b) }
            }
            s.files[name] = file
            s.writes += 1
            return tear
        }
        if torn != nil { throw StateFileError("write", "\(path)/\(name)", .ioError) }
    }

    func truncate(_ name: String, to length: Int) throws(StateFileError) {
        try check("truncate", name)
        state.withLock { s in
            if let f = s.files[name] { s.files[name] = Array(f.prefix(length)) }
        }
    }

    func setAside(_ name: String, suffix: String) throws(StateFileError) -> String {
        try check("rename", name)
        return state.withLock { s in
            s.files["\(name).\(suffix)"] = s.files.removeValue(forKey: name)
            return "\(path)/\(name).\(suffix)"
        }
    }

    func removeFiles(withPrefix prefix: String) -> [String] {
        state.withLock { s in
            let names = s.files.keys.filter { $0.hasPrefix(prefix) }.sorted()
            for n in names { s.files[n] = nil }
            return names.map { "removed \(path)/\($0), left over from an interrupted save" }
        }
    }
}

func usleepMilliseconds(_ ms: Int) {
    var ts = timespec(tv_sec: 0, tv_nsec: ms * 1_000_000)
    nanosleep(&ts, nil)
}
