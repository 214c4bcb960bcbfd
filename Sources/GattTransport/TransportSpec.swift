/// Where the daemon finds its Bluetooth controller, as written on the command line
/// (`--transport`) or in the configuration file.
///
/// Accepted forms:
/// - `tcp:HOST:PORT` — H4 over a TCP connection (for example Bumble's `tcp-server` transport).
///   An IPv6 host is written in brackets: `tcp:[::1]:9000`.
/// - `unix:PATH` — H4 over a Unix domain stream socket.
/// - `serial:DEVICE[@BAUD][,rtscts]` — H4 over a UART. The baud rate defaults to 1000000;
///   `,rtscts` turns on RTS/CTS hardware flow control (off by default).
///   Example: `serial:/dev/ttyACM0@115200,rtscts`.
/// - `user:hciN` — the Linux HCI user channel: exclusive raw access to controller N.
/// - `hciN` or `kernel:hciN` — the Linux kernel's Bluetooth stack (BlueZ management API).
/// - `bluez` or `bluez:hciN` — beside bluetoothd, through its D-Bus API (hci0 by default).
public enum TransportSpec: Sendable, Hashable, CustomStringConvertible {
    case tcp(host: String, port: Int)
    case unix(path: String)
    case serial(device: String, baudRate: Int, flowControl: Bool)
    case userChannel(controller: Int)
    case kernel(controller: Int)
    case bluez(controller: Int)

    /// The baud rate used when a `serial:` transport names none.
    public static let defaultBaudRate = 1_000_000

    /// Parses a transport string such as `tcp:127.0.0.1:9000` or `serial:/dev/ttyUSB0@115200`.
    public init(parsing text: String) throws(TransportSpecError) {
        let trimmed = text.trimmingWhitespace()
        guard !trimmed.isEmpty else {
            throw TransportSpecError("the transport is empty: expected one of \(TransportSpec.forms)")
        }
        if trimmed.lowercased() == "bluez" {
            self = .bluez(controller: 0)
            return
        }
        // Bare `hciN` means the kernel transport.
        if trimmed.hasPrefix("hci") && !trimmed.contains(":") {
            self = .kernel(controller: try Self.parseControllerName(trimmed, in: text))
            return
        }
        guard let colon = trimmed.firstIndex(of: ":") else {
            throw TransportSpecError(
                "'\(text)' is not a transport: expected one of \(TransportSpec.forms)")
        }
        let scheme = String(trimmed[..<colon]).lowercased()
        let rest = String(trimmed[trimmed.index(after: colon)...])
        switch scheme {
        case "tcp":
            self = try Self.parseTCP(rest, in: text)
        case "unix":
            guard !rest.isEmpty else {
                throw TransportSpecError("'\(text)': the Unix socket path is empty (expected unix:PATH)")
            }
            self = .unix(path: rest)
        case "serial":
            self = try Self.parseSerial(rest, in: text)
        case "user":
            self = .userChannel(controller: try Self.parseControllerName(rest, in: text))
        case "kernel":
            self = .kernel(controller: try Self.parseControllerName(rest, in: text))
        case "bluez":
            self = .bluez(controller: try Self.parseControllerName(rest, in: text))
        default:
            throw TransportSpecError(
                "'\(text)': unknown transport kind '\(scheme)' (expected tcp, unix, serial, user, kernel or bluez)")
        }
    }

    /// The canonical string form; parsing it gives back the same value.
    public var description: String {
        switch self {
        case .tcp(let host, let port):
            return host.contains(":") ? "tcp:[\(host)]:\(port)" : "tcp:\(host):\(port)"
        case .unix(let path):
            return "unix:\(path)"
        case .serial(let device, let baudRate, let flowControl):
            return "serial:\(device)@\(baudRate)" + (flowControl ? ",rtscts" : "")
        case .userChannel(let controller):
            return "user:hci\(controller)"
        case .kernel(let controller):
            return "kernel:hci\(controller)"
        case .bluez(let controller):
            return "bluez:hci\(controller)"
        }
    }

    /// The transport when `--transport` names none: hci0 through bluetoothd when it runs (the
    /// machine's keyboards and audio keep it), else through the kernel; and why, for the log.
    public static func chosen(bluetoothdRunning: Bool) -> (spec: TransportSpec, reason: String) {
        bluetoothdRunning
            ? (.bluez(controller: 0), "bluetoothd is running: gattd serves beside it, through its D-Bus API (bluez:hci0; --transport hci0 takes the kernel transport, with bluetoothd stopped)")
            : (.kernel(controller: 0), "bluetoothd is not running: gattd serves through the kernel (hci0; --transport bluez waits for bluetoothd instead)")
    }

    /// True for the transports that carry H4 packets (everything except the kernel stack and bluetoothd).
    public var isH4: Bool {
        switch self {
        case .kernel, .bluez: false
        case .tcp, .unix, .serial, .userChannel: true
        }
    }

    static let forms = "tcp:HOST:PORT, unix:PATH, serial:DEVICE[@BAUD][,rtscts], user:hciN, hciN or kernel:hciN, bluez[:hciN]"

    private static func parseTCP(_ rest: String, in text: String) throws(TransportSpecError) -> TransportSpec {
        let host: Substring
        let portText: Substring
        if rest.hasPrefix("[") {
            guard let close = rest.firstIndex(of: "]") else {
                throw TransportSpecError("'\(text)': the IPv6 host has no closing ']' (expected tcp:[ADDRESS]:PORT)")
            }
            host = rest[rest.index(after: rest.startIndex)..<close]
            let afterHost = rest[rest.index(after: close)...]
            guard afterHost.hasPrefix(":") else {
                throw TransportSpecError("'\(text)': the port is missing (expected tcp:[ADDRESS]:PORT)")
            }
            portText = afterHost.dropFirst()
        } else {
            guard let colon = rest.lastIndex(of: ":") else {
                throw TransportSpecError("'\(text)': the port is missing (expected tcp:HOST:PORT)")
            }
            host = rest[..<colon]
            portText = rest[rest.index(after: colon)...]
        }
        guard !host.isEmpty else {
            throw TransportSpecError("'\(text)': the host is empty (expected tcp:HOST:PORT)")
        }
        guard let port = Int(portText), (1...65535).contains(port) else {
            throw TransportSpecError("'\(text)': '\(portText)' is not a TCP port (expected a number from 1 to 65535)")
        }
        return .tcp(host: String(host), port: port)
    }

    private static func parseSerial(_ rest: String, in text: String) throws(TransportSpecError) -> TransportSpec {
        var parts = rest.split(separator: ",", omittingEmptySubsequences: false)
        let deviceAndBaud = parts.isEmpty ? "" : parts.removeFirst()
        var device = deviceAndBaud
        var baudRate = defaultBaudRate
        if let at = deviceAndBaud.lastIndex(of: "@") {
            device = deviceAndBaud[..<at]
            let baudText = deviceAndBaud[deviceAndBaud.index(after: at)...]
            guard let baud = Int(baudText), baud > 0 else {
                throw TransportSpecError("'\(text)': '\(baudText)' is not a baud rate (expected a number such as 115200 or 1000000)")
            }
            guard SerialBaudRate.isSupported(baud) else {
                throw TransportSpecError(
                    "'\(text)': baud rate \(baud) is not supported (supported: \(SerialBaudRate.supportedList))")
            }
            baudRate = baud
        }
        guard !device.isEmpty else {
            throw TransportSpecError("'\(text)': the serial device is empty (expected serial:DEVICE[@BAUD][,rtscts])")
        }
        var flowControl = false
        for option in parts {
            switch option.lowercased() {
            case "rtscts", "crtscts", "flow":
                flowControl = true
            case "nortscts", "noflow":
                flowControl = false
            default:
                throw TransportSpecError("'\(text)': unknown serial option '\(option)' (the only option is rtscts)")
            }
        }
        return .serial(device: String(device), baudRate: baudRate, flowControl: flowControl)
    }

    private static func parseControllerName(_ name: String, in text: String) throws(TransportSpecError) -> Int {
        guard name.hasPrefix("hci") else {
            throw TransportSpecError("'\(text)': '\(name)' is not a controller name (expected hciN, for example hci0)")
        }
        let digits = name.dropFirst(3)
        guard !digits.isEmpty, digits.allSatisfy({ $0.isASCII && $0.isNumber }),
            let index = Int(digits), index < 0xFFFF
        else {
            throw TransportSpecError("'\(text)': '\(name)' is not a controller name (expected hciN, for example hci0)")
        }
        return index
    }
}

/// A transport string that could not be parsed; the message names the bad part.
public struct TransportSpecError: Error, Sendable, Hashable, CustomStringConvertible {
    public let message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

extension String {
    fileprivate func trimmingWhitespace() -> String {
        var scalars = Substring(self)
        while let first = scalars.first, first.isWhitespace { scalars.removeFirst() }
        while let last = scalars.last, last.isWhitespace { scalars.removeLast() }
        return String(scalars)
    }
}
