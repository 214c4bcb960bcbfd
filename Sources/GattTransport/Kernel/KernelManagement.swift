import CBlueZ
import GattCore

#if canImport(Glibc)
import Glibc
#endif

/// The kernel's Bluetooth Management interface (the "mgmt" API bluetoothd uses: a raw HCI
/// socket on HCI_CHANNEL_CONTROL, BlueZ doc/mgmt-api.txt), for the few settings the kernel
/// transport needs before it can serve: LE on, bondable, powered.
///
/// Why not just HCIDEVUP: the kernel registers its SMP channels (pairing, encryption) only
/// when an adapter is powered on the management path (`hci_powered_update_sync` →
/// `smp_register`), which needs the adapter to be mgmt-managed (HCI_MGMT, set by the first
/// mgmt command for it). An adapter brought up with a bare HCIDEVUP that no mgmt client ever
/// touched has no SMP: `setsockopt(BT_SECURITY)` fails with EINVAL and dmesg says "SMP security
/// requested but not available". And a kernel that is not bondable answers a central's
/// Pairing Request with bonding with Pairing Not Supported.
public enum KernelManagement {
    /// Current Settings bits (mgmt-api.txt, Read Controller Information).
    public struct Settings: OptionSet, Sendable, Hashable {
        public let rawValue: UInt32
        public init(rawValue: UInt32) { self.rawValue = rawValue }
        public static let powered = Settings(rawValue: 1 << 0)
        public static let connectable = Settings(rawValue: 1 << 1)
        public static let bondable = Settings(rawValue: 1 << 4)
        public static let secureSimplePairing = Settings(rawValue: 1 << 6)
        public static let basicRateEDR = Settings(rawValue: 1 << 7)
        public static let lowEnergy = Settings(rawValue: 1 << 9)
        public static let advertising = Settings(rawValue: 1 << 10)
        public static let secureConnections = Settings(rawValue: 1 << 11)
    }

    /// Read Controller Information's settings.
    public struct Information: Sendable, Equatable {
        public var supported: Settings
        public var current: Settings
    }

    /// mgmt command opcodes used here (mgmt-api.txt "Management Commands").
    public enum Opcode: UInt16, Sendable {
        case readManagementSupportedCommands = 0x0002
        case readControllerInformation = 0x0004
        case setPowered = 0x0005
        case setBondable = 0x0009
        case setSecureSimplePairing = 0x000B
        case setLowEnergy = 0x000D
        case loadLongTermKeys = 0x0013
        case setIOCapability = 0x0018
        case unpairDevice = 0x001B
        case userConfirmationReply = 0x001C
        case userConfirmationNegativeReply = 0x001D
        case userPasskeyReply = 0x001E
        case userPasskeyNegativeReply = 0x001F
        case setSecureConnections = 0x002D
        case loadIdentityResolvingKeys = 0x0030
        case loadConnectionParameters = 0x0035
        case setDefaultSystemConfiguration = 0x004C
        case readAdvertisingFeatures = 0x003D
        case addAdvertising = 0x003E
        case removeAdvertising = 0x003F
        case addExtendedAdvertisingParameters = 0x0054
        case addExtendedAdvertisingData = 0x0055

        var name: String {
            switch self {
            case .readManagementSupportedCommands: "Read Management Supported Commands"
            case .readControllerInformation: "Read Controller Information"
            case .setPowered: "Set Powered"
            case .setBondable: "Set Bondable"
            case .setSecureSimplePairing: "Set Secure Simple Pairing"
            case .setLowEnergy: "Set Low Energy"
            case .loadLongTermKeys: "Load Long Term Keys"
            case .setIOCapability: "Set IO Capability"
            case .unpairDevice: "Unpair Device"
            case .userConfirmationReply: "User Confirmation Reply"
            case .userConfirmationNegativeReply: "User Confirmation Negative Reply"
            case .userPasskeyReply: "User Passkey Reply"
            case .userPasskeyNegativeReply: "User Passkey Negative Reply"
            case .setSecureConnections: "Set Secure Connections"
            case .loadIdentityResolvingKeys: "Load Identity Resolving Keys"
            case .loadConnectionParameters: "Load Connection Parameters"
            case .setDefaultSystemConfiguration: "Set Default System Configuration"
            case .readAdvertisingFeatures: "Read Advertising Features"
            case .addAdvertising: "Add Advertising"
            case .removeAdvertising: "Remove Advertising"
            case .addExtendedAdvertisingParameters: "Add Extended Advertising Parameters"
            case .addExtendedAdvertisingData: "Add Extended Advertising Data"
            }
        }
    }

    /// Makes hciN ready for the kernel transport: LE on (when the adapter supports it and it is
    /// off), bondable, powered. Returns the settings before and after. Throws
    /// `.systemCall(EAFNOSUPPORT/EINVAL)` when the kernel has no mgmt interface (the caller
    /// falls back to HCIDEVUP), `.permissionDenied` without CAP_NET_ADMIN.
    @discardableResult
    public static func prepare(index: Int, timeout: Duration = .seconds(5)) throws(KernelTransportError)
        -> (before: Information, after: Settings)
    {
        let fd = try KernelSocket.openHCI()
        defer { close(fd) }
        guard KernelSocket.bindHCI(fd, device: CBLUEZ_HCI_DEV_NONE, channel: CBLUEZ_HCI_CHANNEL_CONTROL) == 0 else {
            throw .system("bind(HCI_CHANNEL_CONTROL) (the kernel's management interface)", errno: errno)
        }
        let device = "hci\(index)"
        let reply = try command(fd, .readControllerInformation, index: index, device: device, timeout: timeout)
        guard let info = information(reply) else {
            throw KernelTransportError(.systemCall(errno: EPROTO), "\(device): short Read Controller Information reply (\(reply.count) bytes)")
        }
        var current = info.current
        if info.supported.contains(.lowEnergy), !current.contains(.lowEnergy) {
            current = settings(try command(fd, .setLowEnergy, index: index, parameters: [1], device: device, timeout: timeout)) ?? current
        }
        if !current.contains(.bondable) {
            current = settings(try command(fd, .setBondable, index: index, parameters: [1], device: device, timeout: timeout)) ?? current
        }
        if !current.contains(.powered) {
            current = settings(try command(fd, .setPowered, index: index, parameters: [1], device: device, timeout: timeout)) ?? current
        }
        return (info, current)
    }

    /// Parses Read Controller Information's return parameters: address (6), version (1),
    /// manufacturer (2), supported settings (4), current settings (4), ...
    /// The adapter's default LE connection parameters (mgmt Set Default System
    /// Configuration, kernel 5.8+: types 0x0017–0x001A). The kernel asks every central whose
    /// connection interval lies outside [min, max] to change it with an L2CAP Connection
    /// Parameter Update Request (l2cap_le_conn_ready): how a peripheral on the kernel stack
    /// gets `connection.preferred`.
    public static func setDefaultConnectionParameters(
        index: Int, _ p: LEConnectionParameters, timeout: Duration = .seconds(5)
    ) throws(KernelTransportError) {
        let fd = try controlSocket()
        defer { close(fd) }
        _ = try command(fd, .setDefaultSystemConfiguration, index: index, parameters: connectionParameterTLVs(p), device: "hci\(index)", timeout: timeout)
    }

    /// A blocking mgmt socket (HCI_CHANNEL_CONTROL) for commands; the caller closes it.
    static func controlSocket() throws(KernelTransportError) -> Int32 {
        let fd = try KernelSocket.openHCI()
        guard KernelSocket.bindHCI(fd, device: CBLUEZ_HCI_DEV_NONE, channel: CBLUEZ_HCI_CHANNEL_CONTROL) == 0 else {
            throw .system("bind(HCI_CHANNEL_CONTROL) (the kernel's management interface)", closing: fd)
        }
        return fd
    }

    /// The four TLVs (type u16, length u8, value u16; little-endian) of the LE connection parameters.
    static func connectionParameterTLVs(_ p: LEConnectionParameters) -> [UInt8] {
        let entries: [(UInt16, UInt16)] = [(0x0017, p.intervalMin), (0x0018, p.intervalMax), (0x0019, p.latency), (0x001A, p.supervisionTimeout)]
        return entries.flatMap { type, value in [UInt8(type & 0xFF), UInt8(type >> 8), 2, UInt8(value & 0xFF), UInt8(value >> 8)] }
    }

    static func information(_ reply: [UInt8]) -> Information? {
        guard reply.count >= 17 else { return nil }
        return Information(supported: Settings(rawValue: littleEndian32(reply, at: 9)), current: Settings(rawValue: littleEndian32(reply, at: 13)))
    }

    /// Set Powered/Bondable/Low Energy return the new Current Settings (4 octets).
    static func settings(_ reply: [UInt8]) -> Settings? {
        reply.count >= 4 ? Settings(rawValue: littleEndian32(reply, at: 0)) : nil
    }

    static func littleEndian32(_ bytes: [UInt8], at offset: Int) -> UInt32 {
        (0..<4).reduce(UInt32(0)) { value, i in value | UInt32(bytes[offset + i]) << (8 * UInt32(i)) }
    }

    /// A command packet: opcode, controller index, parameter length (all little-endian), parameters.
    static func packet(_ opcode: Opcode, index: Int, parameters: [UInt8]) -> [UInt8] {
        let op = opcode.rawValue
        let ix = UInt16(truncatingIfNeeded: index)
        let length = UInt16(truncatingIfNeeded: parameters.count)
        return [UInt8(op & 0xFF), UInt8(op >> 8), UInt8(ix & 0xFF), UInt8(ix >> 8), UInt8(length & 0xFF), UInt8(length >> 8)]
            + parameters
    }

    /// The answer to `opcode` in an event packet: (status, return parameters), or nil when the
    /// packet is something else (another event, another index, another command).
    static func answer(_ packet: [UInt8], to opcode: Opcode, index: Int) -> (status: UInt8, parameters: [UInt8])? {
        guard packet.count >= 6 else { return nil }
        let event = UInt16(packet[0]) | UInt16(packet[1]) << 8
        let eventIndex = Int(UInt16(packet[2]) | UInt16(packet[3]) << 8)
        let length = Int(UInt16(packet[4]) | UInt16(packet[5]) << 8)
        guard eventIndex == index, packet.count >= 6 + length, length >= 3 else { return nil }
        let body = Array(packet[6..<(6 + length)])
        guard UInt16(body[0]) | UInt16(body[1]) << 8 == opcode.rawValue else { return nil }
        switch event {
        case 0x0001: return (body[2], Array(body[3...]))  // Command Complete
        case 0x0002: return (body[2], [])  // Command Status
        default: return nil
        }
    }

    static func command(
        _ fd: Int32, _ opcode: Opcode, index: Int, parameters: [UInt8] = [], device: String, timeout: Duration
    ) throws(KernelTransportError) -> [UInt8] {
        let bytes = packet(opcode, index: index, parameters: parameters)
        guard write(fd, bytes, bytes.count) == bytes.count else {
            throw .system("mgmt \(opcode.name) on \(device): write", errno: errno)
        }
        let deadline = ContinuousClock.now.advanced(by: timeout)
        var buffer = [UInt8](repeating: 0, count: 1024)
        while true {
            let left = ContinuousClock.now.duration(to: deadline)
            let milliseconds = left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000
            guard milliseconds > 0, KernelSocket.waitReadable(fd, milliseconds: Int32(clamping: milliseconds)) else {
                throw KernelTransportError(.commandTimeout, "mgmt \(opcode.name) on \(device): no answer within \(timeout)")
            }
            let count = read(fd, &buffer, buffer.count)
            if count < 0 {
                let code = errno
                if code == EINTR || code == EAGAIN { continue }
                throw .system("mgmt \(opcode.name) on \(device): read", errno: code)
            }
            guard let (status, reply) = answer(Array(buffer.prefix(count)), to: opcode, index: index) else { continue }
            switch status {
            case 0x00:
                return reply
            case 0x14:
                throw KernelTransportError(
                    .permissionDenied,
                    "\(device): mgmt \(opcode.name) needs CAP_NET_ADMIN (run gattd as root or grant it CAP_NET_ADMIN and CAP_NET_RAW)")
            case 0x11:
                throw KernelTransportError(.noSuchAdapter, "no Bluetooth adapter \(device) (or another program holds it exclusively)")
            case 0x12:
                throw KernelTransportError(.adapterUnavailable, "\(device) is blocked by rfkill (rfkill unblock bluetooth)")
            default:
                throw KernelTransportError(
                    .commandFailed(status: status), "mgmt \(opcode.name) on \(device) failed: \(Status.describe(status))")
            }
        }
    }
}
