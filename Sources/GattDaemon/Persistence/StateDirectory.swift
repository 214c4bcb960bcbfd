#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import SystemPackage

/// A file operation that failed: what, on which path, and the system's error.
public struct StateFileError: Error, Sendable, Equatable, CustomStringConvertible {
    public var operation: String
    public var path: String
    public var errno: Errno
    public init(_ operation: String, _ path: String, _ errno: Errno) {
        self.operation = operation
        self.path = path
        self.errno = errno
    }
    public var description: String { "cannot \(operation) \(path): \(errno.description)" }
}

/// The few file operations `PersistentStore` needs, on the files of one directory
/// (names, not paths). Each mutating operation returns only once it is durable.
/// `SystemStateDirectory` is the real one; tests use fakes that fail or tear writes.
public protocol StateDirectory: AnyObject {
    /// The directory, for messages.
    var path: String { get }
    /// The whole file; nil when it does not exist.
    func read(_ name: String) throws(StateFileError) -> [UInt8]?
    /// Replaces the file atomically and durably: temp file, fsync, rename, fsync of the
    /// directory (created, mode 0700, when missing).
    func replace(_ name: String, with bytes: [UInt8]) throws(StateFileError)
    /// Writes `bytes` at `offset` (creating the file) and fdatasyncs it.
    func write(_ name: String, _ bytes: [UInt8], at offset: Int) throws(StateFileError)
    /// Cuts the file to `length` and fsyncs it (a missing file is fine).
    func truncate(_ name: String, to length: Int) throws(StateFileError)
    /// Renames the file to `name.<suffix>` (or `-2`, `-3`...); returns the new path.
    func setAside(_ name: String, suffix: String) throws(StateFileError) -> String
    /// Removes files whose names start with `prefix`; returns a sentence for each.
    func removeFiles(withPrefix prefix: String) -> [String]
}
