import CBlueZ
import GattCore

#if canImport(Glibc)
import Glibc
#endif

// Pairing settings and keys through mgmt: what the kernel transport does with the `security`
// config and the bond store. Each call opens its own blocking mgmt socket and runs on the
// transport's command thread.
extension KernelManagement {
    /// The part of the `security` config the kernel's SMP can be told.
    public struct SecuritySettings: Sendable, Equatable {
        public var ioCapability: SMPIOCapability
        public var bondable: Bool
        public var secureConnectionsOnly: Bool

        public init(_ c: SecurityManagerConfiguration) {
            ioCapability = c.ioCapability
            bondable = c.bondable
            secureConnectionsOnly = c.secureConnectionsOnly
        }
    }

    /// Set IO Capability (0x0018), Set Bondable (0x0009), Set Secure Connections (0x002D: 1 on,
    /// 2 Secure Connections Only). Returns a sentence per setting the kernel refused; the
    /// others still apply. On an adapter with BR/EDR on, the kernel refuses Secure Connections
    /// (Rejected) until Secure Simple Pairing is on (mgmt set_secure_conn), so it is switched on
    /// first (0x000B, as bluetoothd does) and Secure Connections asked again: without it the
    /// kernel pairs LE with legacy pairing only (no Numeric Comparison, no P-256 keys).
    static func applySecurity(index: Int, _ s: SecuritySettings, timeout: Duration = .seconds(5)) throws(KernelTransportError) -> [String] {
        let fd = try controlSocket()
        defer { close(fd) }
        let device = "hci\(index)"
        var refused: [String] = []
        let steps: [(Opcode, UInt8, String)] = [
            (.setIOCapability, s.ioCapability.rawValue, "security.io_capability"),
            (.setBondable, s.bondable ? 1 : 0, "security.bondable"),
            (.setSecureConnections, s.secureConnectionsOnly ? 2 : 1, "security.secure_connections_only"),
        ]
        for (opcode, value, setting) in steps {
            do {
                do {
                    _ = try command(fd, opcode, index: index, parameters: [value], device: device, timeout: timeout)
                } catch where opcode == .setSecureConnections && error.kind == .commandFailed(status: Status.rejected) {
                    _ = try command(fd, .setSecureSimplePairing, index: index, parameters: [1], device: device, timeout: timeout)
                    _ = try command(fd, opcode, index: index, parameters: [value], device: device, timeout: timeout)
                }
            } catch {
                if error.kind == .permissionDenied || error.kind == .noSuchAdapter { throw error }
                refused.append("\(setting) not applied: \(error)")
            }
        }
        return refused
    }

    /// How many keys went into the kernel, and how many did not fit one command.
    struct LoadedKeys: Sendable, Equatable {
        var longTermKeys: Int
        var identityResolvingKeys: Int
        var leftOut: Int
    }

    /// Load Long Term Keys (0x0013) then Load Identity Resolving Keys (0x0030): both replace
    /// what the kernel holds, so the kernel ends up with exactly `keys` (an empty list
    /// clears it). Load IRKs also tells the kernel that user space keeps IRKs, so it asks
    /// centrals for theirs when pairing. More keys than one command carries: the last ones
    /// (the newest bonds) are kept.
    static func loadKeys(index: Int, _ keys: KernelKeySet, timeout: Duration = .seconds(5)) throws(KernelTransportError) -> LoadedKeys {
        let fd = try controlSocket()
        defer { close(fd) }
        let device = "hci\(index)"
        let limit = raiseSendLimit(fd)
        let ltks = Array(keys.longTermKeys.suffix(KernelKeyCommands.capacity(recordSize: KernelLongTermKey.size, packetLimit: limit)))
        let irks = Array(
            keys.identityResolvingKeys.suffix(KernelKeyCommands.capacity(recordSize: KernelIdentityResolvingKey.size, packetLimit: limit)))
        _ = try command(fd, .loadLongTermKeys, index: index, parameters: KernelKeyCommands.loadLongTermKeys(ltks), device: device, timeout: timeout)
        _ = try command(
            fd, .loadIdentityResolvingKeys, index: index, parameters: KernelKeyCommands.loadIdentityResolvingKeys(irks), device: device,
            timeout: timeout)
        let leftOut = keys.longTermKeys.count - ltks.count + keys.identityResolvingKeys.count - irks.count
        return LoadedKeys(longTermKeys: ltks.count, identityResolvingKeys: irks.count, leftOut: leftOut)
    }

    /// Unpair Device (0x001B) with Disconnect = 1: the kernel forgets the device's LTK and
    /// IRK and drops its link. False when the kernel had no keys for it (Not Paired).
    @discardableResult
    static func unpair(index: Int, _ peer: KernelBDAddress, timeout: Duration = .seconds(5)) throws(KernelTransportError) -> Bool {
        let fd = try controlSocket()
        defer { close(fd) }
        do {
            _ = try command(
                fd, .unpairDevice, index: index, parameters: KernelKeyCommands.unpairDevice(peer, disconnect: true), device: "hci\(index)",
                timeout: timeout)
            return true
        } catch {
            if case .commandFailed(status: 0x06) = error.kind { return false }  // Not Paired
            throw error
        }
    }

    /// The largest mgmt packet the socket sends: 1028 octets (HCI_MAX_FRAME_SIZE) unless the
    /// kernel lets BT_SNDMTU raise it (as bluetoothd's src/shared/mgmt.c does).
    private static func raiseSendLimit(_ fd: Int32) -> Int {
        let btSendMTU: Int32 = 12  // BT_SNDMTU, lib/bluetooth/bluetooth.h
        var mtu = UInt16.max
        if setsockopt(fd, CBLUEZ_SOL_BLUETOOTH, btSendMTU, &mtu, socklen_t(MemoryLayout<UInt16>.size)) == 0 { return Int(UInt16.max) }
        return 1028
    }
}
