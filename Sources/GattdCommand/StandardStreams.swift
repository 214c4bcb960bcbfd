#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Writes text to standard output or error with write(2) (no Foundation in the daemon).
enum StandardStream {
    case output, error

    func write(_ text: String) {
        var bytes = Array(text.utf8)[...]
        let fd: Int32 = self == .output ? 1 : 2
        while !bytes.isEmpty {
            let n = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { return }
            bytes = bytes.dropFirst(n)
        }
    }
}
