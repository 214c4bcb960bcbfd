import CBlueZ

#if canImport(Glibc)
import Glibc
#endif

/// Small wrappers over the socket calls the kernel transport makes, so the types above
/// read as Bluetooth rather than pointer juggling.
enum KernelSocket {
    static let seqpacket = Int32(SOCK_SEQPACKET.rawValue)
    static let raw = Int32(SOCK_RAW.rawValue)
    static let cloexec = Int32(SOCK_CLOEXEC.rawValue)
    static let nonblock = Int32(SOCK_NONBLOCK.rawValue)

    /// A raw HCI socket (AF_BLUETOOTH, SOCK_RAW, BTPROTO_HCI), close-on-exec.
    static func openHCI(nonBlocking: Bool = false) throws(KernelTransportError) -> Int32 {
        let fd = socket(CBLUEZ_AF_BLUETOOTH, raw | cloexec | (nonBlocking ? nonblock : 0), CBLUEZ_BTPROTO_HCI)
        guard fd >= 0 else {
            let code = errno
            if code == EAFNOSUPPORT || code == EPROTONOSUPPORT {
                throw KernelTransportError(
                    .adapterUnavailable,
                    "this kernel has no Bluetooth sockets (AF_BLUETOOTH: \(errnoDescription(code))); load the bluetooth module")
            }
            throw .system("socket(AF_BLUETOOTH, SOCK_RAW, BTPROTO_HCI)", errno: code)
        }
        return fd
    }

    /// bind(2) an HCI socket to `device` (HCI_DEV_NONE for none) on `channel`.
    static func bindHCI(_ fd: Int32, device: UInt16, channel: UInt16) -> Int32 {
        var address = sockaddr_hci()
        address.hci_family = sa_family_t(CBLUEZ_AF_BLUETOOTH)
        address.hci_dev = device
        address.hci_channel = channel
        return withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_hci>.size))
            }
        }
    }

    /// Installs an HCI socket filter: event packets only, these event codes, and
    /// (when non-zero) Command Complete/Status only for `opcode`.
    static func setEventFilter(_ fd: Int32, events: [UInt8], opcode: UInt16 = 0) -> Int32 {
        var filter = hci_filter()
        cbluez_filter_clear(&filter)
        cbluez_filter_set_ptype(&filter, Int32(HCI_EVENT_PKT))
        for event in events { cbluez_filter_set_event(&filter, Int32(event)) }
        cbluez_filter_set_opcode(&filter, opcode)
        return setsockopt(fd, CBLUEZ_SOL_HCI, CBLUEZ_HCI_FILTER, &filter, socklen_t(MemoryLayout<hci_filter>.size))
    }

    /// sockaddr_l2 for an LE fixed channel on `address`.
    static func l2capAddress(_ address: KernelBDAddress, cid: UInt16) -> sockaddr_l2 {
        var l2 = sockaddr_l2()
        l2.l2_family = sa_family_t(CBLUEZ_AF_BLUETOOTH)
        l2.l2_bdaddr = address.bdaddr
        l2.l2_cid = cid.littleEndian
        l2.l2_bdaddr_type = address.type.rawValue
        return l2
    }

    /// sockaddr_l2 for an LE PSM on `address` (a credit-based channel's listening socket).
    static func l2capAddress(_ address: KernelBDAddress, psm: UInt16) -> sockaddr_l2 {
        var l2 = sockaddr_l2()
        l2.l2_family = sa_family_t(CBLUEZ_AF_BLUETOOTH)
        l2.l2_bdaddr = address.bdaddr
        l2.l2_psm = psm.littleEndian
        l2.l2_bdaddr_type = address.type.rawValue
        return l2
    }

    /// Waits until `fd` is readable; false on timeout. `milliseconds` < 0 waits forever.
    static func waitReadable(_ fd: Int32, milliseconds: Int32) -> Bool {
        var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        while true {
            let ready = poll(&entry, 1, milliseconds)
            if ready < 0 && errno == EINTR { continue }
            return ready > 0
        }
    }

    /// Waits until `fd` is writable; false on timeout.
    static func waitWritable(_ fd: Int32, milliseconds: Int32) -> Bool {
        var entry = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
        while true {
            let ready = poll(&entry, 1, milliseconds)
            if ready < 0 && errno == EINTR { continue }
            return ready > 0
        }
    }

    /// "hci0" → 0.
    static func deviceIndex(named name: String) -> Int? {
        guard name.hasPrefix("hci"), let index = Int(name.dropFirst(3)), (0..<0xFFFF).contains(index) else { return nil }
        return index
    }
}
