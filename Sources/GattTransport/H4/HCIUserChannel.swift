#if canImport(Glibc)
import Glibc
#endif

/// The Linux HCI user channel: a raw socket giving exclusive access to one controller,
/// bypassing the kernel's Bluetooth host. Each datagram is one H4 packet, indicator byte first.
enum HCIUserChannel {
    /// `AF_BLUETOOTH` from `<bluetooth/bluetooth.h>`.
    static let addressFamily: CInt = 31
    /// `BTPROTO_HCI`.
    static let hciProtocol: CInt = 1
    /// `HCI_CHANNEL_USER`.
    static let userChannel: UInt16 = 1

    /// Opens and binds a user-channel socket on controller `index`; returns a non-blocking
    /// descriptor the caller owns.
    static func open(controller index: Int) throws(HCITransportError) -> CInt {
        #if os(Linux)
        let name = "hci\(index)"
        guard let device = UInt16(exactly: index), device != 0xFFFF else {
            throw HCITransportError("\(name) is not a controller index")
        }
        let type = CInt(SOCK_RAW.rawValue) | CInt(SOCK_CLOEXEC.rawValue) | CInt(SOCK_NONBLOCK.rawValue)
        let fd = socket(addressFamily, type, hciProtocol)
        guard fd >= 0 else {
            let code = errno
            throw describe(errno: code, controller: name, during: "socket")
        }
        // struct sockaddr_hci { sa_family_t hci_family; unsigned short hci_dev; unsigned short hci_channel; }
        var address: (UInt16, UInt16, UInt16) = (sa_family_t(addressFamily), device, userChannel)
        let result = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { sockaddrPointer in
                bind(fd, sockaddrPointer, socklen_t(MemoryLayout<(UInt16, UInt16, UInt16)>.size))
            }
        }
        guard result == 0 else {
            let code = errno
            _ = close(fd)
            throw describe(errno: code, controller: name, during: "bind")
        }
        return fd
        #else
        throw HCITransportError("the HCI user channel exists only on Linux")
        #endif
    }

    /// Turns an errno from `socket`/`bind` into a sentence saying what to do about it.
    static func describe(errno code: CInt, controller name: String, during call: String) -> HCITransportError {
        switch code {
        case EAFNOSUPPORT, EPROTONOSUPPORT:
            return HCITransportError(
                "this kernel has no Bluetooth support (AF_BLUETOOTH sockets are unavailable): load the bluetooth module or use a tcp:, unix: or serial: transport",
                errno: code)
        case EBUSY:
            return HCITransportError(
                "\(name) is up or in use: bring it down first (`sudo btmgmt -i \(name) power off` or `hciconfig \(name) down`) or stop bluetoothd",
                errno: code)
        case EPERM, EACCES:
            return HCITransportError(
                "opening the HCI user channel on \(name) needs CAP_NET_ADMIN: run as root or grant the capability (for example AmbientCapabilities=CAP_NET_ADMIN in the systemd unit)",
                errno: code)
        case ENODEV:
            return HCITransportError("there is no Bluetooth controller \(name)", errno: code)
        case EALREADY:
            return HCITransportError("\(name) is already opened by another HCI user channel", errno: code)
        default:
            return HCITransportError(
                "cannot open the HCI user channel on \(name) (\(call): \(SerialPort.errnoText(code)))", errno: code)
        }
    }
}
