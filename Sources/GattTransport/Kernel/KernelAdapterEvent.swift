import CBlueZ
import GattCore
import GattHost
import NIOCore
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// What the kernel tells about an adapter and its LE links.
public enum KernelAdapterEvent: Sendable, Equatable {
    /// hciN appeared (plugged in, btvirt/vhci opened...).
    case registered(index: Int)
    /// hciN went away (unplugged). Its raw sockets are dead: reopen once it is back.
    case unregistered(index: Int)
    /// hciN came up (HCIDEVUP, `hciconfig up`, power on).
    case up(index: Int)
    /// hciN went down: its advertising and connections are gone.
    case down(index: Int)
    /// LE (Enhanced) Connection Complete, Core Spec Vol 4 Part E §7.7.65.1 / §7.7.65.10;
    /// `link`: the new link's parameters (nil when the event is too short to carry them).
    case leConnectionComplete(status: UInt8, handle: UInt16, role: UInt8, peer: KernelBDAddress, link: LinkParameters? = nil)
    /// LE Connection Update Complete, LE PHY Update Complete or LE Data Length Change: a
    /// link's parameters changed, or a procedure on it ended (`LinkProcedures`).
    case linkProcedure(HCILEMetaEvent)
    /// Disconnection Complete, Core Spec Vol 4 Part E §7.7.5.
    case disconnectionComplete(status: UInt8, handle: UInt16, reason: UInt8)
    /// Encryption Change (v1 §7.7.8, v2 §7.7.8.2) or Encryption Key Refresh Complete (§7.7.39):
    /// the link's encryption started, stopped or was refreshed (the kernel's SMP drives it).
    case encryptionChanged(status: UInt8, handle: UInt16)

    /// Parses a packet (H4 indicator first) read from a raw HCI socket; nil for anything else.
    public init?(packet: [UInt8]) {
        guard packet.count >= 3, packet[0] == 0x04, packet.count >= 3 + Int(packet[2]) else { return nil }
        let body = Array(packet[3..<(3 + Int(packet[2]))])
        switch packet[1] {
        case KernelHCIEventCode.stackInternal:
            // evt_stack_internal { u16 type = EVT_SI_DEVICE (1); evt_si_device { u16 event; u16 dev_id } }
            guard body.count >= 6, body[0] == 0x01, body[1] == 0x00 else { return nil }
            let event = UInt16(body[2]) | UInt16(body[3]) << 8
            let index = Int(UInt16(body[4]) | UInt16(body[5]) << 8)
            switch event {
            case 1: self = .registered(index: index)
            case 2: self = .unregistered(index: index)
            case 3: self = .up(index: index)
            case 4: self = .down(index: index)
            default: return nil
            }
        case KernelHCIEventCode.disconnectionComplete:
            guard body.count >= 4 else { return nil }
            self = .disconnectionComplete(status: body[0], handle: (UInt16(body[1]) | UInt16(body[2]) << 8) & 0x0FFF, reason: body[3])
        case KernelHCIEventCode.encryptionChange, KernelHCIEventCode.encryptionChangeV2, KernelHCIEventCode.encryptionKeyRefreshComplete:
            // status, connection handle first in all three.
            guard body.count >= 3 else { return nil }
            self = .encryptionChanged(status: body[0], handle: (UInt16(body[1]) | UInt16(body[2]) << 8) & 0x0FFF)
        case KernelHCIEventCode.leMeta:
            let meta = try? HCILEMetaEvent(decoding: body)
            switch meta {
            case .connectionUpdateComplete, .phyUpdateComplete, .dataLengthChange:
                self = .linkProcedure(meta!)
                return
            default:
                break
            }
            // Subevent 0x01 LE Connection Complete and 0x0A LE Enhanced Connection Complete share
            // the first fields: status, handle, role, peer address type, peer address.
            guard body.count >= 12, body[0] == 0x01 || body[0] == 0x0A else { return nil }
            let type: KernelBDAddress.AddressType = body[5] & 0x01 == 0 ? .lePublic : .leRandom
            guard let address = BluetoothAddress(littleEndian: body[6..<12]) else { return nil }
            let peer = KernelBDAddress(address, type: type)
            let link = meta?.connectionComplete.map {
                LinkParameters.atConnection(connectionInterval: $0.connectionInterval, peripheralLatency: $0.peripheralLatency, supervisionTimeout: $0.supervisionTimeout)
            }
            self = .leConnectionComplete(
                status: body[1], handle: (UInt16(body[2]) | UInt16(body[3]) << 8) & 0x0FFF, role: body[4], peer: peer, link: link)
        default:
            return nil
        }
    }
}
