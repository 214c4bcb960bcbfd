import CBlueZ
import GattCore
import GattHost
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A Command Complete or Command Status event as read from a raw HCI socket
/// (H4 indicator 0x04 first). Core Spec Vol 4 Part E §7.7.14, §7.7.15.
struct KernelCommandAnswer: Equatable {
    var opcode: UInt16
    /// Command Status's status or the first return parameter of Command Complete (nil if none).
    var status: UInt8?
    /// Command Complete: the return parameters; Command Status: `[status]`.
    var returnParameters: [UInt8]

    init?(packet: ArraySlice<UInt8>) {
        let bytes = Array(packet)
        guard bytes.count >= 3, bytes[0] == 0x04 else { return nil }
        let length = Int(bytes[2])
        guard bytes.count >= 3 + length else { return nil }
        let body = Array(bytes[3..<(3 + length)])
        switch bytes[1] {
        case KernelHCIEventCode.commandComplete:
            guard body.count >= 3 else { return nil }
            opcode = UInt16(body[1]) | UInt16(body[2]) << 8
            returnParameters = Array(body[3...])
            status = returnParameters.first
        case KernelHCIEventCode.commandStatus:
            guard body.count >= 4 else { return nil }
            opcode = UInt16(body[2]) | UInt16(body[3]) << 8
            status = body[0]
            returnParameters = [body[0]]
        default:
            return nil
        }
    }
}
