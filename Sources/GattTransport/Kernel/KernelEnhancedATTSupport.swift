import GattCore
#if canImport(Glibc)
import Glibc
#endif

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
