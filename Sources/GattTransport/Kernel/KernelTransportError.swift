#if canImport(Glibc)
import Glibc
#endif

/// A failure of the kernel transport, with a message that says what to do about it.
public struct KernelTransportError: Error, Sendable, Hashable, CustomStringConvertible {
    public enum Kind: Sendable, Hashable {
        /// The process lacks a capability (the message names it).
        case permissionDenied
        /// bluetoothd owns the adapter's ATT channel.
        case bluetoothdRunning
        /// There is no such hciN.
        case noSuchAdapter
        /// The adapter is down, blocked or went away.
        case adapterUnavailable
        /// An HCI command got no Command Complete/Status in time.
        case commandTimeout
        /// An HCI command completed with a non-zero status (Core Spec Vol 1 Part F).
        case commandFailed(status: UInt8)
        /// The ATT bearer is closed.
        case disconnected
        /// Any other failing system call.
        case systemCall(errno: Int32)
    }

    public let kind: Kind
    public let message: String

    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    public var description: String { message }

    /// `what` failed with `code`: the message is "what: strerror(code)".
    static func system(_ what: String, errno code: Int32) -> KernelTransportError {
        KernelTransportError(.systemCall(errno: code), "\(what): \(errnoDescription(code))")
    }

    /// The error for a failed `what` on a socket being set up: reads errno, then closes `fd`.
    static func system(_ what: String, closing fd: Int32) -> KernelTransportError {
        let code = errno
        Glibc.close(fd)
        return .system(what, errno: code)
    }
}
