#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Why the control socket cannot be set up.
public struct ControlSocketError: Error, Sendable, Equatable, CustomStringConvertible {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

/// Filesystem side of the control socket: stale sockets, a second daemon,
/// permissions and group.
public enum ControlSocketPath {
    /// What is at the socket path before binding.
    public enum Existing: Sendable, Equatable {
        case nothing
        /// A socket file nobody listens on (a crashed daemon): safe to remove.
        case stale
        /// A socket something listens on.
        case live
        case notASocket
    }

    /// Looks at `path` (connect() answers: ECONNREFUSED = stale, success = live).
    public static func inspect(_ path: String) -> Existing {
        var st = stat()
        guard lstat(path, &st) == 0 else { return .nothing }
        guard st.st_mode & S_IFMT == S_IFSOCK else { return .notASocket }
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return .stale }
        defer { close(fd) }
        guard var addr = socketAddress(path) else { return .stale }
        let r = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        return r == 0 ? .live : .stale
    }

    /// Makes `path` free for bind(): removes a stale socket; throws when another
    /// daemon listens there or something else is in the way. Creates a missing
    /// parent directory (mode 0755).
    public static func prepare(_ path: String) throws(ControlSocketError) {
        guard socketAddress(path) != nil else {
            throw ControlSocketError("control socket path \(path) is too long (at most 107 bytes)")
        }
        let parent = parentDirectory(of: path)
        if !parent.isEmpty, access(parent, F_OK) != 0, mkdir(parent, 0o755) != 0, errno != EEXIST {
            throw ControlSocketError("cannot create \(parent): \(String(cString: strerror(errno)))")
        }
        switch inspect(path) {
        case .nothing:
            return
        case .live:
            throw ControlSocketError("another gattd is running on \(path)")
        case .notASocket:
            throw ControlSocketError("\(path) exists and is not a socket; remove it or choose another --control path")
        case .stale:
            if unlink(path) != 0, errno != ENOENT {
                throw ControlSocketError("cannot remove the stale socket \(path): \(String(cString: strerror(errno)))")
            }
        }
    }

    /// The group id of `name`; throws when there is no such group.
    public static func groupID(_ name: String) throws(ControlSocketError) -> gid_t {
        guard let g = getgrnam(name) else { throw ControlSocketError("group \"\(name)\" does not exist (--control-group)") }
        return g.pointee.gr_gid
    }

    /// Sets mode 0660 and, when given, the group (after bind()).
    public static func setPermissions(_ path: String, group: gid_t?) throws(ControlSocketError) {
        if let group, chown(path, uid_t.max, group) != 0 {
            throw ControlSocketError("cannot give \(path) to group \(group): \(String(cString: strerror(errno)))")
        }
        if chmod(path, 0o660) != 0 {
            throw ControlSocketError("cannot chmod \(path): \(String(cString: strerror(errno)))")
        }
    }

    static func parentDirectory(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "" }
        return String(path[..<slash])
    }

    static func socketAddress(_ path: String) -> sockaddr_un? {
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        let capacity = MemoryLayout.size(ofValue: addr.sun_path)
        guard !bytes.isEmpty, bytes.count < capacity else { return nil }
        withUnsafeMutableBytes(of: &addr.sun_path) { raw in
            for (i, b) in bytes.enumerated() { raw[i] = b }
        }
        return addr
    }
}
