#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import ArgumentParser
import GattControlProtocol
import GattCore

/// `gattctl`: talks to a running gattd over its control socket (the `gattd` executable runs it
/// when called as `gattctl`, a link to it: Sources/gattd/main.swift).
public struct Gattctl: ParsableCommand, Sendable {
    public static let configuration = CommandConfiguration(
        commandName: "gattctl",
        abstract: "Control a running gattd: update and notify values, watch centrals.",
        discussion: """
            VALUE is hex by default ("0a1b", "0A 1B" and "0a:1b" all work); use --utf8 for
            text or --base64. The socket is --socket, else $GATTD_SOCKET, else
            /run/gattd/control.sock; its group (gattd) decides who may use it.

            Exit codes: 0 ok, 1 gattd answered an error, 64 bad usage or value,
            69 gattd is not running, 77 permission denied on the socket.
            """,
        version: GattdVersion.string,
        subcommands: [
            Notify.self, SetValue.self, GetValue.self, Status.self, Watch.self, Advertise.self, Disconnect.self,
            PairAccept.self, PairReject.self, Passkey.self, Confirm.self, Bonds.self, Unbond.self,
            AddService.self, RemoveService.self, ListServices.self,
            Respond.self, Serve.self, Capture.self, L2CAP.self, ConnectionParameters.self, PHY.self, DataLength.self, Improv.self,
        ]
    )

    /// So that `gattctl --socket PATH status` works as well as `gattctl status --socket PATH`.
    @OptionGroup var global: GlobalOptions

    public init() {}
}

/// Options every subcommand shares.
struct GlobalOptions: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp("The control socket (default: $GATTD_SOCKET or /run/gattd/control.sock).", valueName: "path"))
    var socket: String?

    var socketPath: String {
        if let socket { return socket }
        if let env = getenv("GATTD_SOCKET").map({ String(cString: $0) }), !env.isEmpty { return env }
        return "/run/gattd/control.sock"
    }

    func connect() throws(GattctlFailure) -> ControlClient {
        try ControlClient(path: socketPath)
    }
}

/// How VALUE is written on the command line (or how `get` prints it).
enum ValueEncoding: String, EnumerableFlag {
    case hex, utf8, base64

    static func help(for value: ValueEncoding) -> ArgumentHelp? {
        switch value {
        case .hex: "Hex digits, optionally separated by spaces, ':' or '-'."
        case .utf8: "Text, sent as its UTF-8 bytes."
        case .base64: "Standard base64."
        }
    }

    var literal: AttributeValueLiteral.Encoding {
        switch self {
        case .hex: .hex
        case .utf8: .utf8
        case .base64: .base64
        }
    }

    /// Checks `text` locally (for a clear message before anything is sent) and returns the
    /// protocol's value, sent as written, e.g. `{"utf8": "21.5"}`.
    func value(_ text: String) throws(GattctlFailure) -> ControlValue {
        do {
            return try ControlValue(text, as: literal)
        } catch {
            let hint = self == .hex ? " (use --utf8 to send text)" : ""
            throw .usage("invalid \(rawValue) value \"\(text)\": \(error.message)\(hint)")
        }
    }
}

/// Runs `body`, turning a failure into its message on stderr and its exit code.
func runReportingFailures(_ body: () throws(GattctlFailure) -> Void) throws {
    do {
        try body()
    } catch {
        StandardStream.error("gattctl: \(error.message)\n")
        throw ExitCode(error.exitCode)
    }
}

/// Prints a line, unbuffered (stdout is often a pipe).
func emit(_ line: String) {
    StandardStream.output(line + "\n")
}

/// stdout and stderr through write(2): nothing buffered, nothing lost at exit.
enum StandardStream {
    static func output(_ text: String) { write(text, to: 1) }
    static func error(_ text: String) { write(text, to: 2) }

    private static func write(_ text: String, to fd: Int32) {
        let bytes = Array(text.utf8)
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { raw in
                #if canImport(Glibc)
                Glibc.write(fd, raw.baseAddress! + offset, raw.count - offset)
                #else
                Darwin.write(fd, raw.baseAddress! + offset, raw.count - offset)
                #endif
            }
            if n < 0, errno == EINTR { continue }
            guard n > 0 else { return }
            offset += n
        }
    }
}

// MARK: - notify

struct Notify: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Update a value and notify/indicate the subscribed centrals.",
        discussion: """
            VALUE "-" reads values from stdin, one per line (empty lines are skipped), and \
            sends each in order. When gattd's queue is full (busy), gattctl waits for \
            gattd's "ready" and resends the same value, so nothing is dropped:

                sensor | gattctl notify temperature - --utf8

            A value gattd rejects (invalid, too long) is reported and skipped; other errors \
            stop the stream. The exit code is 1 if any value was not sent.

            More ID VALUE pairs update several values at once and notify them together: a \
            central that supports it gets them in one Multiple Handle Value Notification \
            (Enhanced ATT era centrals), others one notification per value:

                gattctl notify temperature 1a00 humidity 3c
            """
    )

    @OptionGroup var global: GlobalOptions
    @Argument(help: "The characteristic's id (or UUID) from the config.") var id: String
    @Argument(help: "The value, or - to read one value per line from stdin.") var value: String
    @Argument(help: ArgumentHelp("More characteristics and values, notified together with the first.", valueName: "id value")) var more: [String] = []
    @Flag var encoding: ValueEncoding = .hex
    @Option(name: .long, help: ArgumentHelp("Only notify this central.", valueName: "address")) var central: String?
    @Flag(help: "Say nothing when nobody is subscribed.") var quiet = false

    /// How long to wait for "ready" after "busy" before resending anyway.
    static let readyTimeout: Duration = .seconds(5)

    func run() throws {
        try runReportingFailures { () throws(GattctlFailure) in
            if !more.isEmpty {
                try sendTogether()
            } else if value == "-" {
                try streamFromStandardInput()
            } else {
                let v = try encoding.value(value)
                let client = try global.connect()
                var told = false
                if let failure = try send(v, client: client, told: &told) { throw .reply(failure.message) }
            }
        }
    }

    /// `notify ID VALUE ID VALUE ...`: one `notify` with `values`.
    private func sendTogether() throws(GattctlFailure) {
        guard more.count % 2 == 0 else { throw .usage("give a value after every characteristic: ID VALUE [ID VALUE ...]") }
        guard value != "-", !more.contains("-") else { throw .usage("- (stdin) takes one characteristic: gattctl notify ID -") }
        var values = [ControlNotifyValue(characteristic: id, value: try encoding.value(value))]
        for i in stride(from: 0, to: more.count, by: 2) {
            values.append(ControlNotifyValue(characteristic: more[i], value: try encoding.value(more[i + 1])))
        }
        let client = try global.connect()
        var told = false
        if let failure = try send(.notifyValues(values: values, central: central), client: client, told: &told) { throw .reply(failure.message) }
    }

    private func streamFromStandardInput() throws(GattctlFailure) {
        let client = try global.connect()
        var lineNumber = 0
        var failed = 0
        var told = false
        while var line = Swift.readLine(strippingNewline: true) {
            lineNumber += 1
            if line.hasSuffix("\r") { line.removeLast() }
            if line.isEmpty { continue }
            let v: ControlValue
            do {
                v = try encoding.value(line)
            } catch {
                StandardStream.error("gattctl: stdin line \(lineNumber): \(error.message); skipped\n")
                failed += 1
                continue
            }
            if let failure = try send(v, client: client, told: &told) {
                let message = "stdin line \(lineNumber): \(failure.message)"
                guard failure.skippable else { throw .reply(message) }
                StandardStream.error("gattctl: \(message); skipped\n")
                failed += 1
            }
        }
        if failed > 0 { throw .reply("\(failed) value\(failed == 1 ? "" : "s") not sent") }
    }

    struct Rejection {
        var message: String
        /// A problem with this value only: the stream can go on.
        var skippable: Bool
    }

    /// Sends one notify, waiting out `busy`. Returns nil when sent. The first value that
    /// reached nobody (`"sent":0`) is said on stderr unless --quiet (`told`: said already).
    private func send(_ value: ControlValue, client: ControlClient, told: inout Bool) throws(GattctlFailure) -> Rejection? {
        try send(.notify(characteristic: id, value: value, central: central), client: client, told: &told)
    }

    /// `send` of any notify command.
    private func send(_ command: ControlCommand, client: ControlClient, told: inout Bool) throws(GattctlFailure) -> Rejection? {
        while true {
            let reply = try client.request(command)
            if case .sent(0) = reply, !quiet, !told {
                told = true
                let who = central.map { "\($0) is not subscribed to" } ?? "nobody is subscribed to"
                StandardStream.error("gattctl: \(who) \(id); the value was set but not sent\n")
            }
            guard case .failure(let e) = reply else { return nil }
            if e.code == .busy {
                try waitForReady(client)
                continue
            }
            return Rejection(message: ControlClient.errorText(e), skippable: e.code == .invalidValue || e.code == .valueTooLong)
        }
    }

    /// Reads until `{"event":"ready"}`; after `readyTimeout` without one, returns anyway
    /// (the resend then either goes through or is busy again).
    private func waitForReady(_ client: ControlClient) throws(GattctlFailure) {
        let deadline = ContinuousClock.now + Self.readyTimeout
        while true {
            let left = deadline - ContinuousClock.now
            guard left > .zero, let message = try client.readMessage(timeout: left, answering: "notify") else { return }
            if message == .event(.ready) { return }
        }
    }
}

// MARK: - set / get

struct SetValue: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "set", abstract: "Change a value without notifying anyone.")

    @OptionGroup var global: GlobalOptions
    @Argument(help: "The characteristic's id (or UUID).") var id: String
    @Argument(help: "The new value.") var value: String
    @Flag var encoding: ValueEncoding = .hex

    func run() throws {
        try runReportingFailures { () throws(GattctlFailure) in
            let v = try encoding.value(value)  // a bad value is 64 whether gattd runs or not
            try global.connect().expectOK(.set(characteristic: id, value: v))
        }
    }
}

struct GetValue: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "get", abstract: "Print a characteristic's current value (hex unless --utf8 or --base64).")

    @OptionGroup var global: GlobalOptions
    @Argument(help: "The characteristic's id (or UUID).") var id: String
    @Flag var encoding: ValueEncoding = .hex

    func run() throws {
        try runReportingFailures { () throws(GattctlFailure) in
            guard case .value(let value) = try global.connect().expectOK(.get(characteristic: id)) else {
                throw .reply("gattd's reply has no value")
            }
            let bytes = value.bytes
            switch encoding {
            case .hex: emit(AttributeValueLiteral.hexString(bytes))
            case .base64: emit(AttributeValueLiteral.base64String(bytes))
            case .utf8:
                guard let text = String(validating: bytes, as: UTF8.self) else {
                    throw .reply("the value (\(AttributeValueLiteral.hexString(bytes))) is not valid UTF-8; use --hex")
                }
                emit(text)
            }
        }
    }
}

// MARK: - status / watch

struct Status: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Show advertising and the connected centrals.")

    @OptionGroup var global: GlobalOptions
    @Flag(help: "Print gattd's JSON reply as is.") var json = false

    func run() throws {
        try runReportingFailures { () throws(GattctlFailure) in
            let client = try global.connect()
            let reply = try client.expectOK(.status)
            guard case .status(let status) = reply else { throw .reply("gattd's reply has no status") }
            if json {
                emit(Rendering.sortedKeys(reply.json(id: client.lastReplyID)).text)
            } else {
                StandardStream.output(Rendering.statusTable(status))
            }
        }
    }
}

struct Watch: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print gattd's events (connections, subscriptions, writes...) as they happen.",
        discussion: """
            One readable line per event, or with --json the protocol's JSON lines exactly as             received. Watching is passive: reads and writes of "handler": "control"             characteristics are forwarded only while a responder is connected; --requests             makes this watch one (answer with `gattctl respond`). --follow keeps watching             across gattd restarts (reconnecting every half second; a note on stderr).
            """)

    @OptionGroup var global: GlobalOptions
    @Flag(help: "Print the raw JSON event lines.") var json = false
    @Flag(help: "Be the responder for control characteristics (answer with gattctl respond).") var requests = false
    @Flag(help: "Reconnect when gattd stops or restarts, and wait for it when it is not running.") var follow = false

    func run() throws {
        try runReportingFailures { () throws(GattctlFailure) in
            var lost: String?
            while true {
                do throws(GattctlFailure) {
                    let client = try global.connect()
                    try client.expectOK(.watch(requests: requests ? true : nil))
                    if lost != nil { StandardStream.error("gattctl: watching again\n") }
                    lost = nil
                    while true {
                        guard let line = try client.readLine(timeout: nil) else { continue }
                        if json {
                            emit(line)
                        } else {
                            emit(Rendering.line(try ControlClient.decode(line, answering: "watch"), at: Rendering.now()))
                        }
                    }
                } catch where follow && error.exitCode != 64 && error.exitCode != 77 {
                    if lost == nil { StandardStream.error("gattctl: \(error.message); reconnecting (--follow)\n") }
                    lost = error.message
                    usleep(500_000)
                }
            }
        }
    }
}

// MARK: - disconnect

struct Disconnect: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Disconnect a central.")

    @OptionGroup var global: GlobalOptions
    @Argument(help: "The central's address, as `gattctl status` shows it.") var address: String

    func run() throws {
        try runReportingFailures { () throws(GattctlFailure) in
            guard BluetoothAddress(address) != nil else {
                throw .usage("\"\(address)\" is not a Bluetooth address (AA:BB:CC:DD:EE:FF)")
            }
            try global.connect().expectOK(.disconnect(central: address))
        }
    }
}
