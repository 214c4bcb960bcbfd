import GattCore
import Glibc
import Logging
import NIOCore

/// Joins a Wi-Fi network and scans for them, for Improv: NetworkManager through `nmcli`, or
/// the config's programs. The password goes to a program on its stdin, never on a command
/// line others can read. Every program is killed after `timeout`.
struct ImprovWiFiBackend {
    let wifi: ImprovWiFiOptions.WiFi
    let timeout: Duration
    let eventLoop: any EventLoop
    let logger: Logger

    /// What became of a connection attempt.
    struct Connection {
        var connected: Bool
        /// The address, when the program printed one (first line of its stdout).
        var address: String?
    }

    /// The NetworkManager connection gattd creates (and replaces) for the network it is given.
    static let connectionName = "gattd-improv"

    func connect(ssid: String, password: String) -> EventLoopFuture<Connection> {
        switch wifi {
        case .command(let argv, _):
            let line = JSONText.object([("ssid", .string(ssid)), ("password", .string(password))]).text + "\n"
            return ChildProcess.run(argv, input: Array(line.utf8), timeout: timeout, on: eventLoop).map { outcome in
                report(outcome, what: argv[0])
                let first = String(decoding: outcome.stdout, as: UTF8.self).split(separator: "\n").first.map { String($0).trimmingWhitespace }
                return Connection(connected: outcome.succeeded, address: first.flatMap(Self.address))
            }.recover { error in
                logger.error("improv: \(error)")
                return Connection(connected: false)
            }
        case .networkManager:
            guard let nmcli = Self.inPath("nmcli") else {
                logger.error("improv: nmcli is not in PATH (\"wifi\": \"networkmanager\" needs NetworkManager)")
                return eventLoop.makeSucceededFuture(Connection(connected: false))
            }
            let name = Self.connectionName
            var add = [nmcli, "connection", "add", "type", "wifi", "con-name", name, "ifname", "*", "ssid", ssid]
            var up = [nmcli, "--wait", String(max(1, timeout.components.seconds)), "connection", "up", "id", name]
            var secret: [UInt8] = []
            if !password.isEmpty {
                add += ["wifi-sec.key-mgmt", "wpa-psk"]
                up += ["passwd-file", "/dev/stdin"]
                secret = Array("802-11-wireless-security.psk:\(password)\n".utf8)
            }
            let loop = eventLoop
            let (addCommand, upCommand, password) = (add, up, secret)
            return ChildProcess.run([nmcli, "connection", "delete", "id", name], timeout: timeout, on: loop)
                .flatMap { _ in ChildProcess.run(addCommand, timeout: timeout, on: loop) }
                .flatMap { added -> EventLoopFuture<ChildProcess.Outcome> in
                    guard added.succeeded else { return loop.makeSucceededFuture(added) }
                    return ChildProcess.run(upCommand, input: password, timeout: timeout, on: loop)
                }
                .map { outcome in
                    report(outcome, what: "nmcli")
                    return Connection(connected: outcome.succeeded)
                }
                .recover { error in
                    logger.error("improv: \(error)")
                    return Connection(connected: false)
                }
        }
    }

    /// The networks in range: (SSID, RSSI in dBm, auth type as Improv names it).
    func scan() -> EventLoopFuture<[(ssid: String, rssi: Int, auth: String)]> {
        switch wifi {
        case .command(_, let argv?):
            return ChildProcess.run(argv, timeout: timeout, on: eventLoop).map { outcome in
                report(outcome, what: argv[0])
                return Self.parseScanLines(outcome.stdout)
            }.recover { error in
                logger.error("improv: \(error)")
                return []
            }
        case .command(_, nil):
            return eventLoop.makeSucceededFuture([])
        case .networkManager:
            guard let nmcli = Self.inPath("nmcli") else { return eventLoop.makeSucceededFuture([]) }
            return ChildProcess.run([nmcli, "-t", "-f", "SSID,SIGNAL,SECURITY", "device", "wifi", "list", "--rescan", "yes"], timeout: timeout, on: eventLoop)
                .map { outcome in
                    report(outcome, what: "nmcli")
                    return Self.parseNmcli(outcome.stdout)
                }.recover { _ in [] }
        }
    }

    private func report(_ outcome: ChildProcess.Outcome, what: String) {
        if outcome.timedOut {
            logger.warning("improv: \(what) did not finish within \(timeout) (timeout_s); killed")
        } else if !outcome.succeeded {
            let err = outcome.stderrText
            logger.warning("improv: \(what) failed (\(outcome.status.map { "exit status \($0)" } ?? "killed by a signal"))\(err.isEmpty ? "" : ": \(err)")")
        }
    }

    /// A scan program's output: one JSON object `{"ssid", "rssi", "auth"}` per line (others skipped).
    static func parseScanLines(_ bytes: [UInt8]) -> [(ssid: String, rssi: Int, auth: String)] {
        bytes.split(separator: 0x0A).compactMap { line in
            guard let v = try? JSONParser.parse(Array(line)), case .object(let members) = v.kind else { return nil }
            var ssid: String?, rssi = 0, auth = "NO"
            for m in members {
                switch (m.key, m.value.kind) {
                case ("ssid", .string(let s)): ssid = s
                case ("rssi", .number(let n)): rssi = Int(Double(n) ?? 0)
                case ("auth", .string(let s)): auth = s
                default: break
                }
            }
            return ssid.map { ($0, rssi, auth) }
        }
    }

    /// `nmcli -t -f SSID,SIGNAL,SECURITY device wifi list`: `SSID:SIGNAL:SECURITY` with `\:`
    /// escapes; SIGNAL is 0-100 (dBm ≈ SIGNAL / 2 - 100); hidden networks (no SSID) skipped.
    static func parseNmcli(_ bytes: [UInt8]) -> [(ssid: String, rssi: Int, auth: String)] {
        String(decoding: bytes, as: UTF8.self).split(separator: "\n").compactMap { line in
            var fields: [String] = [""]
            var escaped = false
            for c in line {
                if escaped {
                    fields[fields.count - 1].append(c)
                    escaped = false
                } else if c == "\\" {
                    escaped = true
                } else if c == ":" {
                    fields.append("")
                } else {
                    fields[fields.count - 1].append(c)
                }
            }
            guard fields.count == 3, !fields[0].isEmpty, let signal = Int(fields[1]) else { return nil }
            let security = fields[2].split(separator: " ").map { $0 == "WPA1" ? "WPA" : String($0) }.filter { $0.hasPrefix("WPA") || $0 == "WEP" }
            return (fields[0], signal / 2 - 100, security.isEmpty ? "NO" : security.joined(separator: "/"))
        }
    }

    /// An IPv4 or IPv6 address as a program printed it; nil for anything else.
    static func address(_ text: String) -> String? {
        var v4 = in_addr(), v6 = in6_addr()
        guard inet_pton(AF_INET, text, &v4) == 1 || inet_pton(AF_INET6, text, &v6) == 1 else { return nil }
        return text
    }

    /// The first IPv4 address of an interface that is up and not the loopback.
    static func hostAddress() -> String? {
        var list: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&list) == 0 else { return nil }
        defer { freeifaddrs(list) }
        var p = list
        while let a = p {
            defer { p = a.pointee.ifa_next }
            let flags = Int32(bitPattern: a.pointee.ifa_flags)
            guard let sa = a.pointee.ifa_addr, sa.pointee.sa_family == sa_family_t(AF_INET), flags & Int32(IFF_UP) != 0,
                flags & Int32(IFF_LOOPBACK) == 0
            else { continue }
            var text = [CChar](repeating: 0, count: Int(INET_ADDRSTRLEN))
            var addr = sa.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { $0.pointee.sin_addr }
            guard inet_ntop(AF_INET, &addr, &text, socklen_t(text.count)) != nil else { continue }
            return String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        }
        return nil
    }

    /// `name` in PATH (or /usr/bin, /bin without one).
    static func inPath(_ name: String) -> String? {
        let path = getenv("PATH").map { String(cString: $0) } ?? "/usr/local/bin:/usr/bin:/bin"
        for dir in path.split(separator: ":") where access("\(dir)/\(name)", X_OK) == 0 { return "\(dir)/\(name)" }
        return nil
    }
}
