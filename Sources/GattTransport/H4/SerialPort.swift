#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

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
