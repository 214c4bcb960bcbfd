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

    /// Reads the adapter's settings (Read Controller Information, 0x0004) and sends what
    /// `KernelSecurityPlan` picks from them: Set IO Capability, Set Bondable when it differs,
    /// Set Secure Simple Pairing only where the kernel needs it for Secure Connections, Set
    /// Secure Connections. Returns a warning per setting that could not be applied (which
    /// setting, which command, the kernel's answer, what follows); the others still apply.
    static func applySecurity(index: Int, _ s: SecuritySettings, timeout: Duration = .seconds(5)) throws(KernelTransportError) -> [String] {
        let fd = try controlSocket()
        defer { close(fd) }
        let device = "hci\(index)"
        let reply = try command(fd, .readControllerInformation, index: index, device: device, timeout: timeout)
        guard let info = information(reply) else {
            throw KernelTransportError(.systemCall(errno: EPROTO), "\(device): short Read Controller Information reply (\(reply.count) bytes)")
        }
        let plan = KernelSecurityPlan(s, device: device, supported: info.supported, current: info.current)
        var warnings = plan.unavailable
        for step in plan.steps {
            do {
                _ = try command(fd, step.opcode, index: index, parameters: [step.parameter], device: device, timeout: timeout)
            } catch {
                if error.kind == .permissionDenied || error.kind == .noSuchAdapter { throw error }
                let (warning, skipRest) = plan.refusal(step, error)
                warnings.append(warning)
                if skipRest { break }
            }
        }
        return warnings
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
