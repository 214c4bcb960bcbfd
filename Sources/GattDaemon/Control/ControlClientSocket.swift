import NIOCore

#if canImport(Glibc)
import Glibc
#endif

/// The file descriptor behind a control client's NIO channel, found when the client first
/// listens for L2CAP channels (their sockets go to it with SCM_RIGHTS, which NIO cannot send).
///
/// NIO does not expose a channel's descriptor, but its socket options are public: the
/// channel's SO_COOKIE (a number the kernel gives each socket, unique while the system runs)
/// is read through NIO, then looked for among this process's descriptors.
enum ControlClientSocket {
    static let soCookie: Int32 = 57  // SO_COOKIE, Linux 4.6+

    /// The descriptor of `channel`'s socket; nil where it cannot be found.
    static func descriptor(of channel: any Channel) -> Int32? {
        guard let provider = channel as? any SocketOptionProvider else { return nil }
        let future: EventLoopFuture<UInt64> = provider.unsafeGetSocketOption(level: .socket, name: .init(rawValue: soCookie))
        // On the channel's event loop the option is read at once: the future is complete.
        var cookie: UInt64?
        future.assumeIsolated().whenSuccess { cookie = $0 }
        return cookie.flatMap(find(cookie:))
    }

    /// Looks at every open descriptor (from /proc/self/fd) for the socket with `cookie`.
    static func find(cookie: UInt64) -> Int32? {
        guard let dir = opendir("/proc/self/fd") else { return nil }
        defer { closedir(dir) }
        let own = dirfd(dir)
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            guard let fd = Int32(name), fd != own else { continue }
            var st = stat()
            guard fstat(fd, &st) == 0, st.st_mode & S_IFMT == S_IFSOCK else { continue }
            var value: UInt64 = 0
            var length = socklen_t(MemoryLayout<UInt64>.size)
            guard getsockopt(fd, SOL_SOCKET, soCookie, &value, &length) == 0 else { continue }
            if value == cookie { return fd }
        }
        return nil
    }

    /// Sends one byte with `passing` attached (SCM_RIGHTS). True when sent; false with errno
    /// set otherwise (EAGAIN: the socket is full).
    static func send(_ byte: UInt8, passing passed: Int32, on fd: Int32) -> Bool {
        var data = byte
        let space = MemoryLayout<cmsghdr>.stride + MemoryLayout<Int32>.stride + 8
        var control = [UInt8](repeating: 0, count: space)
        return withUnsafeMutablePointer(to: &data) { dataPointer in
            control.withUnsafeMutableBytes { controlBytes in
                var iov = iovec(iov_base: UnsafeMutableRawPointer(dataPointer), iov_len: 1)
                return withUnsafeMutablePointer(to: &iov) { iovPointer in
                    var message = msghdr()
                    message.msg_iov = iovPointer
                    message.msg_iovlen = 1
                    message.msg_control = controlBytes.baseAddress
                    let headerLength = MemoryLayout<cmsghdr>.size + MemoryLayout<Int32>.size  // CMSG_LEN(sizeof(int))
                    message.msg_controllen = (MemoryLayout<cmsghdr>.size + MemoryLayout<Int32>.size + 7) & ~7  // CMSG_SPACE
                    let header = controlBytes.baseAddress!.assumingMemoryBound(to: cmsghdr.self)
                    header.pointee.cmsg_len = headerLength
                    header.pointee.cmsg_level = SOL_SOCKET
                    header.pointee.cmsg_type = Int32(SCM_RIGHTS)
                    (controlBytes.baseAddress! + MemoryLayout<cmsghdr>.size).storeBytes(of: passed, as: Int32.self)
                    while true {
                        let n = sendmsg(fd, &message, Int32(MSG_NOSIGNAL))
                        if n == 1 { return true }
                        if n < 0, errno == EINTR { continue }
                        return false
                    }
                }
            }
        }
    }
}
