#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The UART baud rates the serial transport can set, mapped to termios speed constants.
enum SerialBaudRate {
    #if os(Linux)
    static let speeds: [(rate: Int, speed: speed_t)] = [
        (9600, speed_t(B9600)), (19200, speed_t(B19200)), (38400, speed_t(B38400)),
        (57600, speed_t(B57600)), (115_200, speed_t(B115200)), (230_400, speed_t(B230400)),
        (460_800, speed_t(B460800)), (500_000, speed_t(B500000)), (576_000, speed_t(B576000)),
        (921_600, speed_t(B921600)), (1_000_000, speed_t(B1000000)), (1_152_000, speed_t(B1152000)),
        (1_500_000, speed_t(B1500000)), (2_000_000, speed_t(B2000000)), (2_500_000, speed_t(B2500000)),
        (3_000_000, speed_t(B3000000)), (3_500_000, speed_t(B3500000)), (4_000_000, speed_t(B4000000)),
    ]
    #else
    static let speeds: [(rate: Int, speed: speed_t)] = [
        (9600, speed_t(B9600)), (19200, speed_t(B19200)), (38400, speed_t(B38400)),
        (57600, speed_t(B57600)), (115_200, speed_t(B115200)), (230_400, speed_t(B230400)),
    ]
    #endif

    static func speed(for rate: Int) -> speed_t? {
        speeds.first(where: { $0.rate == rate })?.speed
    }

    static func isSupported(_ rate: Int) -> Bool { speed(for: rate) != nil }

    static var supportedList: String { speeds.map { String($0.rate) }.joined(separator: ", ") }
}

/// A UART opened for H4: raw mode, the requested speed, optional RTS/CTS flow control.
enum SerialPort {
    /// Opens and configures `device`; returns a non-blocking descriptor the caller owns.
    static func open(device: String, baudRate: Int, flowControl: Bool) throws(HCITransportError) -> CInt {
        guard let speed = SerialBaudRate.speed(for: baudRate) else {
            throw HCITransportError(
                "baud rate \(baudRate) is not supported (supported: \(SerialBaudRate.supportedList))")
        }
        let fd = device.withCString { Glibc_open($0, O_RDWR | O_NOCTTY | O_NONBLOCK) }
        guard fd >= 0 else {
            let code = errno
            throw HCITransportError("cannot open serial device \(device): \(SerialPort.errnoText(code))", errno: code)
        }
        do {
            try configure(fd: fd, device: device, speed: speed, flowControl: flowControl)
        } catch {
            _ = close(fd)
            throw error
        }
        return fd
    }

    private static func configure(fd: CInt, device: String, speed: speed_t, flowControl: Bool) throws(HCITransportError) {
        var attributes = termios()
        guard tcgetattr(fd, &attributes) == 0 else {
            let code = errno
            throw HCITransportError("\(device) is not a serial port (tcgetattr: \(SerialPort.errnoText(code)))", errno: code)
        }
        cfmakeraw(&attributes)
        attributes.c_cflag |= tcflag_t(CLOCAL | CREAD)
        if flowControl {
            attributes.c_cflag |= tcflag_t(CRTSCTS)
        } else {
            attributes.c_cflag &= ~tcflag_t(CRTSCTS)
        }
        guard cfsetispeed(&attributes, speed) == 0, cfsetospeed(&attributes, speed) == 0 else {
            let code = errno
            throw HCITransportError("cannot set the speed of \(device): \(SerialPort.errnoText(code))", errno: code)
        }
        guard tcsetattr(fd, TCSANOW, &attributes) == 0 else {
            let code = errno
            throw HCITransportError("cannot configure \(device): \(SerialPort.errnoText(code))", errno: code)
        }
        _ = tcflush(fd, TCIOFLUSH)
    }
}

/// `open(2)` under a name that does not clash with `SerialPort.open`.
private func Glibc_open(_ path: UnsafePointer<CChar>, _ flags: CInt) -> CInt {
    open(path, flags)
}

extension SerialPort {
    /// strerror(3) as a Swift string.
    static func errnoText(_ code: CInt) -> String {
        String(cString: strerror(code))
    }
}
