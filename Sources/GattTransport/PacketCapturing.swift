import GattCore
import GattHost

/// A transport that records its traffic in a btsnoop file (`--btsnoop FILE`, the control
/// socket's `capture` op), started and stopped at run time. Called on the transport's event
/// loop.
public protocol PacketCapturing: AnyObject {
    /// Starts writing to `writer` (closing any capture in progress) or stops (nil).
    func setCapture(_ writer: BtsnoopWriter?)
    /// What this transport records, in a few words (for the log and the control reply).
    var captureScope: String { get }
}

extension H4PeripheralTransport: PacketCapturing {
    public func setCapture(_ writer: BtsnoopWriter?) {
        if btsnoop !== writer { btsnoop?.close() }
        btsnoop = writer
    }

    public var captureScope: String { "every HCI packet (commands, events, ACL data) as it crosses the H4 link" }
}

extension KernelPeripheralTransport: PacketCapturing {
    public func setCapture(_ writer: BtsnoopWriter?) {
        if sockets.capture !== writer { sockets.capture?.close() }
        sockets.capture = writer
    }

    public var captureScope: String {
        "the ATT PDUs gattd exchanges, each as an HCI ACL packet on its connection handle (the kernel owns the HCI link: btmon records the rest)"
    }
}

extension BtsnoopWriter {
    /// Appends an ATT PDU as the HCI ACL packet that carries it: H4 indicator 0x02, the
    /// connection handle with Packet_Boundary_Flag 0b10 (first automatically flushable
    /// packet), the L2CAP basic header for the ATT channel (CID 0x0004) and the PDU
    /// (Core Spec Vol 4 Part E 5.4.2, Vol 3 Part A 3.1). Wireshark and btmon decode it as ATT.
    public func writeATT(_ pdu: [UInt8], handle: UInt16, direction: Direction) {
        write(H4Packet(type: .acl, body: Self.aclBody(att: pdu, handle: handle)), direction: direction)
    }

    /// The ACL packet body (after the H4 indicator) that carries `pdu` on `handle`.
    public static func aclBody(att pdu: [UInt8], handle: UInt16) -> [UInt8] {
        let l2capLength = UInt16(truncatingIfNeeded: pdu.count)
        let aclLength = UInt16(truncatingIfNeeded: pdu.count + 4)
        let handleAndFlags = (handle & 0x0FFF) | 0x2000
        return [
            UInt8(handleAndFlags & 0xFF), UInt8(handleAndFlags >> 8),
            UInt8(aclLength & 0xFF), UInt8(aclLength >> 8),
            UInt8(l2capLength & 0xFF), UInt8(l2capLength >> 8),
            0x04, 0x00,
        ] + pdu
    }
}
