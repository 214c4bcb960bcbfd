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

/// Whether the kernel transport can accept Enhanced ATT bearers: decided once (the first time
/// it is asked), from `enable_ecred` and whether gattd may bind the SIG-assigned PSM 0x0027.
enum KernelEnhancedATTSupport: Sendable, Equatable {
    case supported
    /// Why not, for the log (said once) and `gattd --probe`.
    case unsupported(String)

    /// `bind`: tries a socket on PSM 0x0027 in Enhanced Credit Based mode (nil: it can be
    /// bound; else what the kernel said), asked only when `enable_ecred` is on.
    static func decide(_ parameter: KernelECREDParameter, bind: () -> KernelTransportError?) -> KernelEnhancedATTSupport {
        switch parameter {
        case .disabled:
            return .unsupported(
                "the kernel's Enhanced Credit Based mode is off (\(KernelECREDParameter.path) = N); "
                    + "turn it on with `echo Y > \(KernelECREDParameter.path)` (or the module option bluetooth.enable_ecred=1) and restart gattd")
        case .unavailable(let why):
            return .unsupported("the kernel offers no Enhanced Credit Based mode (\(why))")
        case .enabled:
            guard let error = bind() else { return .supported }
            if error.kind == .permissionDenied {
                return .unsupported("PSM 0x0027 (EATT) is SIG-assigned and needs CAP_NET_BIND_SERVICE, which gattd lacks; grant it (systemd: AmbientCapabilities=CAP_NET_BIND_SERVICE)")
            }
            return .unsupported("cannot bind PSM 0x0027 (EATT) in Enhanced Credit Based mode: \(error)")
        }
    }
}

/// What the transport does with its Enhanced ATT listening socket on PSM 0x0027: listen
/// while EATT is asked for (`setEnhancedATT(true)`), the kernel supports it and the adapter
/// is open; close it otherwise. Bearers already open stay (a reload applies to new channels).
enum KernelEnhancedATTPlan: Sendable, Equatable {
    case listen
    case stopListening
    case nothing

    init(wanted: Bool, support: KernelEnhancedATTSupport, adapterReady: Bool, listening: Bool) {
        let shouldListen = wanted && support == .supported && adapterReady
        switch (shouldListen, listening) {
        case (true, false): self = .listen
        case (false, true): self = .stopListening
        default: self = .nothing
        }
    }
}

/// The Enhanced ATT bearer of one accepted EATT channel: its id (the channel's local CID,
/// from getsockname) and its ATT_MTU (Vol 3 Part F §3.2.11: min of the two L2CAP MTUs).
struct KernelEnhancedBearerPlan: Sendable, Equatable {
    let id: BearerID
    let mtu: Int

    /// `localCID`: the kernel's CID of the channel (nil when getsockname did not tell one);
    /// `taken`: the channels of the connection's bearers open now. Without a CID (or with one
    /// the connection already has, or the fixed channel's), the first free one from 0x0040 up.
    init(connection: ConnectionID, localCID: UInt16?, taken: Set<UInt16>, ourMTU: Int?, peerMTU: Int?) {
        var channel: UInt16
        if let localCID, localCID != BearerID.fixedATTChannel, localCID != 0, !taken.contains(localCID) {
            channel = localCID
        } else {
            channel = 0x0040
            while taken.contains(channel) { channel &+= 1 }
        }
        id = BearerID(connection, channel: channel)
        // An L2CAP Enhanced Credit Based channel has an MTU of at least 64 (Vol 3 Part A §4.25).
        let ours = ourMTU ?? KernelEnhancedATT.mtu
        mtu = max(23, min(ours, peerMTU ?? ours))
    }
}

extension KernelEnhancedBearerPlan {
    /// The bearer's ATT_MTU after the central's MTU became `peerMTU` (a Credit Based
    /// Reconfigure the kernel answered, Vol 3 Part A §4.27): the new ATT_MTU when it grew,
    /// else nil (an MTU only grows; unknown says nothing).
    static func reconfigured(current: Int, ourMTU: Int, peerMTU: Int?) -> Int? {
        guard let peerMTU else { return nil }
        let mtu = max(23, min(ourMTU, peerMTU))
        return mtu > current ? mtu : nil
    }
}

/// Constants of EATT on the kernel transport.
enum KernelEnhancedATT {
    /// The SIG-assigned SPSM of EATT (Assigned Numbers §2.4; Vol 3 Part F §3.2.11).
    static let psm: UInt16 = 0x0027
    /// Our MTU on EATT channels: the largest ATT value (512) plus headers, as on the H4 host.
    static let mtu = 517
    /// The listening socket's settings: BT_SECURITY medium, so the kernel itself refuses the
    /// channel on an unencrypted link (Insufficient Authentication/Encryption).
    static let server = L2CAPChannelServer(id: "Enhanced ATT", psm: psm, security: .encryption, mtu: mtu)
}

extension String {
    fileprivate func trimmingASCIIWhitespace() -> String {
        let bytes = Array(utf8)
        let isSpace: (UInt8) -> Bool = { $0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }
        guard let first = bytes.firstIndex(where: { !isSpace($0) }), let last = bytes.lastIndex(where: { !isSpace($0) }) else { return "" }
        return String(decoding: bytes[first...last], as: UTF8.self)
    }
}
