import GattCore
#if canImport(Glibc)
import Glibc
#endif

/// The bluetooth module's `enable_ecred` parameter (Linux 5.7+): whether the kernel offers
/// L2CAP Enhanced Credit Based Flow Control mode (Core Vol 3 Part A §3.4, BT_MODE_EXT_FLOWCTL)
/// to sockets. Off, the kernel refuses BT_MODE and answers an L2CAP Credit Based Connection
/// Request with Command Reject, so no Enhanced ATT bearer (Vol 3 Part F §3.2.11) can open.
enum KernelECREDParameter: Sendable, Equatable {
    case enabled
    case disabled
    /// Not there (a kernel before 5.7, or no bluetooth module) or not readable: why.
    case unavailable(String)

    static let path = "/sys/module/bluetooth/parameters/enable_ecred"

    /// Reads the parameter (a bool module parameter reads "Y\n" or "N\n").
    static func read(path: String = Self.path) -> KernelECREDParameter {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            let code = errno
            return .unavailable("\(path): \(errnoDescription(code))\(code == ENOENT ? " (Linux before 5.7, or the bluetooth module is not loaded)" : "")")
        }
        defer { close(fd) }
        var buffer = [UInt8](repeating: 0, count: 16)
        let n = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
        guard n >= 0 else { return .unavailable("\(path): \(errnoDescription(errno))") }
        return parse(String(decoding: buffer.prefix(n), as: UTF8.self), path: path)
    }

    static func parse(_ text: String, path: String = Self.path) -> KernelECREDParameter {
        switch text.trimmingASCIIWhitespace() {
        case "Y", "y", "1": .enabled
        case "N", "n", "0": .disabled
        default: .unavailable("\(path) reads \"\(text.trimmingASCIIWhitespace())\", not Y or N")
        }
    }
}

extension String {
    fileprivate func trimmingASCIIWhitespace() -> String {
        let bytes = Array(utf8)
        let isSpace: (UInt8) -> Bool = { $0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }
        guard let first = bytes.firstIndex(where: { !isSpace($0) }), let last = bytes.lastIndex(where: { !isSpace($0) }) else { return "" }
        return String(decoding: bytes[first...last], as: UTF8.self)
    }
}
