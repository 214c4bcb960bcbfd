import CBlueZ
import GattCore

/// A device address as the kernel's L2CAP sockets carry it: the BD_ADDR plus the kernel's
/// address type (`l2_bdaddr_type`: BDADDR_BREDR, BDADDR_LE_PUBLIC, BDADDR_LE_RANDOM).
public struct KernelBDAddress: Sendable, Hashable, CustomStringConvertible {
    /// The kernel's `BDADDR_*` address types (not the HCI encoding: LE public is 1 here).
    public enum AddressType: UInt8, Sendable, Hashable, CustomStringConvertible {
        case bredr = 0
        case lePublic = 1
        case leRandom = 2

        public var description: String {
            switch self {
            case .bredr: "BR/EDR"
            case .lePublic: "public"
            case .leRandom: "random"
            }
        }

        /// The HCI Own/Peer_Address_Type for an LE address type (BR/EDR maps to public).
        public var hciAddressType: BluetoothAddressType { self == .leRandom ? .random : .public }
    }

    public var address: BluetoothAddress
    public var type: AddressType

    public init(_ address: BluetoothAddress, type: AddressType = .lePublic) {
        self.address = address
        self.type = type
    }

    public var description: String { "\(address) (\(type))" }

    init(_ kernel: bdaddr_t, type: AddressType) {
        var copy = kernel
        // bdaddr_t holds the octets little-endian (b[0] = least significant), as HCI does.
        let littleEndian = withUnsafeBytes(of: &copy) { Array($0.prefix(6)) }
        self.address = BluetoothAddress(littleEndian: littleEndian) ?? .zero
        self.type = type
    }

    var bdaddr: bdaddr_t {
        var kernel = bdaddr_t()
        let littleEndian = address.littleEndianBytes
        withUnsafeMutableBytes(of: &kernel) { raw in
            for (index, byte) in littleEndian.prefix(6).enumerated() where index < raw.count { raw[index] = byte }
        }
        return kernel
    }
}
