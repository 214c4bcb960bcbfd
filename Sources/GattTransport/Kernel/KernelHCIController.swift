import CBlueZ
import GattCore
import GattHost
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// What HCIGETDEVINFO says about an adapter (`struct hci_dev_info`).
public struct KernelAdapterInfo: Sendable, Equatable {
    public var index: Int
    /// "hci0"
    public var name: String
    public var address: KernelBDAddress
    /// `hci_dev_info.flags`: bit numbers from the kernel's HCI_UP, HCI_RUNNING...
    public var flags: UInt32
    public var isUp: Bool { flags & (1 << UInt32(CBLUEZ_HCI_UP)) != 0 }
    /// ACL data packet length and count the controller reported (LE or shared buffers).
    public var aclMTU: Int
    public var aclPackets: Int
}

/// One adapter of the kernel's Bluetooth stack, driven through a raw HCI socket
/// (AF_BLUETOOTH, SOCK_RAW, BTPROTO_HCI, HCI_CHANNEL_RAW) bound to hciN.
///
/// The kernel keeps running its own stack on the adapter (L2CAP, SMP, connections);
/// this socket only adds commands of ours, such as the LE advertising ones. Commands
/// block the calling thread until their Command Complete/Status arrives (or the
/// timeout passes); they are serialised, so any thread may call ``send(opcode:parameters:name:)``.
public final class KernelHCIController: Sendable {
    public let index: Int
    /// "hci0"
    public var name: String { "hci\(index)" }
    public let address: KernelBDAddress
    /// LE Read Local Supported Features (Core Spec Vol 4 Part E §7.8.3): bit 0 = LE Encryption...
    public let leFeatures: UInt64
    /// Read Local Version Information (Vol 4 Part E §7.4.1); nil when the controller did not answer it.
    public let version: HCILocalVersionInformation?
    public let commandTimeout: Duration
    /// The raw socket; nil once closed. The lock also serialises commands.
    private let socket: Mutex<Int32?>

    /// Opens hciN, bringing it up (HCIDEVUP) when it is down, reads its address and LE features.
    /// `preparing` false (`gattd --probe`): no mgmt setting is changed; a down adapter is only brought up.
    public init(index: Int, commandTimeout: Duration = .seconds(2), preparing: Bool = true) throws(KernelTransportError) {
        let info = try Self.bringUp(index: index, preparing: preparing)
        let fd = try KernelSocket.openHCI()
        guard KernelSocket.bindHCI(fd, device: UInt16(truncatingIfNeeded: index), channel: CBLUEZ_HCI_CHANNEL_RAW) == 0 else {
            throw .system("bind(hci\(index), HCI_CHANNEL_RAW)", closing: fd)
        }
        self.index = index
        self.address = info.address
        self.commandTimeout = commandTimeout
        self.socket = Mutex(fd)
        // Only a placeholder until the real value is read: `leFeatures` is a let.
        var features: UInt64 = 0
        do {
            let reply = try Self.send(
                fd: fd, device: "hci\(index)", opcode: 0x2003, parameters: [], name: "LE Read Local Supported Features",
                timeout: commandTimeout)
            for (shift, byte) in reply.dropFirst().prefix(8).enumerated() { features |= UInt64(byte) << (8 * UInt64(shift)) }
        } catch {
            Glibc.close(fd)
            throw error
        }
        self.leFeatures = features
        // Informational only: the controller line of the log and `gattd --probe`.
        let version = try? Self.send(
            fd: fd, device: "hci\(index)", opcode: 0x1001, parameters: [], name: "Read Local Version Information", timeout: commandTimeout)
        self.version = version.flatMap(Self.versionInformation)
    }

    /// Read Local Version Information's return parameters (status first, Vol 4 Part E §7.4.1);
    /// nil when too short or not a success.
    static func versionInformation(_ reply: [UInt8]) -> HCILocalVersionInformation? {
        guard reply.count >= HCILocalVersionInformation.length, reply.first == 0 else { return nil }
        return HCILocalVersionInformation(fields: Array(reply.dropFirst()))
    }

    /// Sends an HCI command and returns its Command Complete return parameters (status first;
    /// `[0]` for a command answered by a successful Command Status).
    /// Throws `.commandFailed` for a non-zero status and `.commandTimeout` when no answer comes,
    /// both naming `name` ("LE Set Advertising Enable").
    @discardableResult
    public func send(opcode: UInt16, parameters: [UInt8], name: String) throws(KernelTransportError) -> [UInt8] {
        let device = self.name
        let timeout = commandTimeout
        return try socket.withLock { (fd: inout Int32?) throws(KernelTransportError) -> [UInt8] in
            guard let open = fd else { throw KernelTransportError(.adapterUnavailable, "\(device) is closed") }
            return try Self.send(fd: open, device: device, opcode: opcode, parameters: parameters, name: name, timeout: timeout)
        }
    }

    /// Sends one of GattCore's commands; see ``send(opcode:parameters:name:)``.
    @discardableResult
    public func send(_ command: HCICommand) throws(KernelTransportError) -> [UInt8] {
        try send(opcode: command.opcode.rawValue, parameters: command.parameters, name: command.name)
    }

    /// Reads HCIGETDEVINFO again (is it still up?).
    public func info() throws(KernelTransportError) -> KernelAdapterInfo {
        try Self.info(index: index)
    }

    public func close() {
        socket.withLock { fd in
            if let open = fd { Glibc.close(open) }
            fd = nil
        }
    }

    deinit { close() }

    // MARK: - Adapter discovery

    /// The registered adapters' indices (HCIGETDEVLIST).
    public static func adapterIndices() throws(KernelTransportError) -> [Int] {
        let fd = try KernelSocket.openHCI()
        defer { Glibc.close(fd) }
        var ids = [UInt16](repeating: 0, count: Int(CBLUEZ_HCI_MAX_DEV))
        let count = cbluez_get_dev_list(fd, &ids, Int32(ids.count))
        guard count >= 0 else { throw .system("HCIGETDEVLIST", errno: errno) }
        return ids.prefix(Int(count)).map { Int($0) }
    }

    /// HCIGETDEVINFO for hciN.
    public static func info(index: Int) throws(KernelTransportError) -> KernelAdapterInfo {
        let fd = try KernelSocket.openHCI()
        defer { Glibc.close(fd) }
        return try info(fd: fd, index: index)
    }

    private static func info(fd: Int32, index: Int) throws(KernelTransportError) -> KernelAdapterInfo {
        var info = hci_dev_info()
        guard cbluez_get_dev_info(fd, Int32(index), &info) == 0 else {
            let code = errno
            if code == ENODEV {
                let known = ((try? adapterIndices()) ?? []).map { "hci\($0)" }
                throw KernelTransportError(
                    .noSuchAdapter,
                    "no Bluetooth adapter hci\(index) (the kernel has: \(known.isEmpty ? "none" : known.joined(separator: ", ")))")
            }
            throw .system("HCIGETDEVINFO hci\(index)", errno: code)
        }
        let name = withUnsafeBytes(of: info.name) { raw in
            String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
        }
        return KernelAdapterInfo(
            index: index, name: name, address: KernelBDAddress(info.bdaddr, type: .lePublic), flags: info.flags,
            aclMTU: Int(info.acl_mtu), aclPackets: Int(info.acl_pkts))
    }

    /// Powers hciN on through the management interface (``KernelManagement/prepare(index:timeout:)``:
    /// LE on, bondable, powered, so the kernel's SMP can pair), falling back to HCIDEVUP when
    /// the kernel has no mgmt. EPERM/EACCES/mgmt Permission Denied: "needs CAP_NET_ADMIN".
    @discardableResult
    public static func bringUp(index: Int, preparing: Bool = true) throws(KernelTransportError) -> KernelAdapterInfo {
        let fd = try KernelSocket.openHCI()
        defer { Glibc.close(fd) }
        _ = try info(fd: fd, index: index)  // .noSuchAdapter names the adapters there are
        do {
            if preparing { try KernelManagement.prepare(index: index) }
        } catch {
            switch error.kind {
            case .permissionDenied, .adapterUnavailable: throw error
            default: break  // no mgmt (or it refused): the plain ioctl below
            }
        }
        let after = try info(fd: fd, index: index)
        if after.isUp { return after }
        if cbluez_ioctl_dev(fd, CBLUEZ_HCIDEVUP, Int32(index)) != 0 {
            let code = errno
            switch code {
            case EALREADY:
                break
            case EPERM, EACCES:
                throw KernelTransportError(
                    .permissionDenied,
                    "hci\(index) is down and bringing it up needs CAP_NET_ADMIN (run gattd as root or grant it CAP_NET_ADMIN)")
            case ERFKILL:
                throw KernelTransportError(
                    .adapterUnavailable, "hci\(index) is blocked by rfkill (rfkill unblock bluetooth)")
            default:
                throw .system("HCIDEVUP hci\(index)", errno: code)
            }
        }
        return try info(fd: fd, index: index)
    }

    // MARK: - Commands

    static func send(
        fd: Int32, device: String, opcode: UInt16, parameters: [UInt8], name: String, timeout: Duration
    ) throws(KernelTransportError) -> [UInt8] {
        guard parameters.count <= 255 else {
            throw KernelTransportError(.commandFailed(status: 0x12), "\(name): \(parameters.count) parameter bytes (at most 255)")
        }
        // Only this command's Command Complete/Status reach the socket.
        guard
            KernelSocket.setEventFilter(
                fd, events: [KernelHCIEventCode.commandComplete, KernelHCIEventCode.commandStatus], opcode: opcode) == 0
        else { throw .system("setsockopt(HCI_FILTER) on \(device)", errno: errno) }
        var buffer = [UInt8](repeating: 0, count: 260)
        // Drop answers left over from an earlier command that timed out.
        while recv(fd, &buffer, buffer.count, Int32(MSG_DONTWAIT)) > 0 {}

        let packet = [0x01, UInt8(opcode & 0xFF), UInt8(opcode >> 8), UInt8(parameters.count)] + parameters
        let written = write(fd, packet, packet.count)
        if written != packet.count {
            let code = errno
            switch code {
            case EPERM, EACCES:
                throw KernelTransportError(
                    .permissionDenied, "\(name) on \(device): sending HCI commands on a raw socket needs CAP_NET_RAW")
            case ENETDOWN:
                throw KernelTransportError(.adapterUnavailable, "\(name): \(device) is down")
            case ENODEV, EPIPE:
                throw KernelTransportError(.adapterUnavailable, "\(name): \(device) went away")
            default:
                throw .system("\(name) on \(device): write", errno: code)
            }
        }

        let deadline = ContinuousClock.now.advanced(by: timeout)
        while true {
            let left = ContinuousClock.now.duration(to: deadline)
            let milliseconds = left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000
            guard milliseconds > 0, KernelSocket.waitReadable(fd, milliseconds: Int32(clamping: milliseconds)) else {
                throw KernelTransportError(
                    .commandTimeout, "\(name) (opcode 0x\(String(opcode, radix: 16))) on \(device): no answer within \(timeout)")
            }
            let count = read(fd, &buffer, buffer.count)
            if count < 0 {
                let code = errno
                if code == EINTR || code == EAGAIN { continue }
                throw .system("\(name) on \(device): read", errno: code)
            }
            guard let event = KernelCommandAnswer(packet: buffer.prefix(count)), event.opcode == opcode else { continue }
            if let status = event.status, status != 0 {
                throw KernelTransportError(
                    .commandFailed(status: status),
                    "\(name) (opcode 0x\(String(opcode, radix: 16))) on \(device) failed: status 0x\(String(status, radix: 16))")
            }
            return event.returnParameters
        }
    }
}

/// The HCI event codes the kernel transport filters on (Core Spec Vol 4 Part E §7.7).
enum KernelHCIEventCode {
    static let disconnectionComplete: UInt8 = 0x05
    static let encryptionChange: UInt8 = 0x08
    static let encryptionKeyRefreshComplete: UInt8 = 0x30
    /// Above 63: the socket filter's bit is 0x59 & 63, so 0x19 (Page Scan Repetition Mode
    /// Change) passes too and is ignored by the parser.
    static let encryptionChangeV2: UInt8 = 0x59
    static let commandComplete: UInt8 = 0x0E
    static let commandStatus: UInt8 = 0x0F
    static let leMeta: UInt8 = 0x3E
    /// Linux-only "stack internal" event raw sockets on HCI_DEV_NONE receive.
    static let stackInternal: UInt8 = 0xFD
}
