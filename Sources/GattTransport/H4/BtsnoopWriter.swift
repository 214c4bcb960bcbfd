import GattCore
import GattHost
import SystemPackage

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Writes HCI packets in the btsnoop format that Wireshark, btmon (`btmon -r`) and
/// Bumble read (RFC 1761 layout; version 1, datalink 1002 = H4, so each packet starts
/// with its H4 indicator). All fields are big-endian.
///
/// File header (16 bytes): `btsnoop\0`, version (UInt32 = 1), datalink (UInt32 = 1002).
/// Each record (24 bytes, then the packet): original length, included length (UInt32
/// each), flags (UInt32: bit 0 set = received from the controller, clear = sent to it;
/// bit 1 set = command or event, clear = data), cumulative drops (UInt32, 0), timestamp
/// (Int64 microseconds since midnight, January 1st, 0 AD, i.e. Unix time in µs plus
/// `epochOffset`).
///
/// Used on the event loop of the transport that owns it (not thread-safe). A write error
/// stops the capture and is reported once through `onError`.
public final class BtsnoopWriter {
    public static let magic: [UInt8] = Array("btsnoop".utf8) + [0]
    public static let version: UInt32 = 1
    /// Datalink type for H4 (UART) framing: packets carry their H4 indicator.
    public static let datalinkH4: UInt32 = 1002
    /// Microseconds from 0 AD to 1970-01-01 (btsnoop's epoch).
    public static let epochOffset: Int64 = 0x00DC_DDB3_0F2F_8000

    public enum Direction: Sendable {
        /// From the host (gattd) to the controller.
        case sent
        /// From the controller to the host.
        case received
    }

    public let path: String
    private var fd: FileDescriptor?
    private let onError: (String) -> Void

    /// Creates (or truncates) `path` and writes the file header. `exclusive`: only a new
    /// file (EEXIST otherwise), so a control client cannot make gattd overwrite its own files.
    public init(path: String, exclusive: Bool = false, onError: @escaping (String) -> Void = { _ in }) throws {
        self.path = path
        self.onError = onError
        let fd = try FileDescriptor.open(
            FilePath(path), .writeOnly, options: exclusive ? [.create, .exclusiveCreate, .closeOnExec] : [.create, .truncate, .closeOnExec],
            permissions: [.ownerReadWrite, .groupRead])
        do {
            _ = try fd.writeAll(Self.header)
        } catch {
            try? fd.close()
            throw error
        }
        self.fd = fd
    }

    deinit { try? fd?.close() }

    /// The 16-byte file header.
    public static var header: [UInt8] { magic + bigEndian(version) + bigEndian(datalinkH4) }

    /// One record for an H4 packet (indicator first) at `microseconds` since 1970.
    public static func record(_ h4: [UInt8], direction: Direction, microsecondsSince1970 t: Int64) -> [UInt8] {
        let indicator = h4.first.flatMap(H4PacketType.init(rawValue:))
        var flags: UInt32 = direction == .received ? 1 : 0
        if indicator == .command || indicator == .event { flags |= 2 }
        let length = UInt32(h4.count)
        var out = bigEndian(length) + bigEndian(length) + bigEndian(flags) + bigEndian(UInt32(0))
        out += bigEndian(UInt64(bitPattern: t + epochOffset))
        return out + h4
    }

    /// Appends `packet`; after a write error nothing more is written.
    public func write(_ packet: H4Packet, direction: Direction) {
        guard let fd else { return }
        do {
            _ = try fd.writeAll(Self.record(packet.encoded, direction: direction, microsecondsSince1970: Self.now()))
        } catch {
            try? fd.close()
            self.fd = nil
            onError("btsnoop capture \(path) stopped: \(error)")
        }
    }

    public func close() {
        try? fd?.close()
        fd = nil
    }

    /// Wall-clock time in microseconds since 1970 (CLOCK_REALTIME).
    static func now() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return Int64(ts.tv_sec) * 1_000_000 + Int64(ts.tv_nsec) / 1000
    }

    private static func bigEndian<T: FixedWidthInteger>(_ v: T) -> [UInt8] {
        (0..<(T.bitWidth / 8)).reversed().map { UInt8(truncatingIfNeeded: v >> ($0 * 8)) }
    }
}
