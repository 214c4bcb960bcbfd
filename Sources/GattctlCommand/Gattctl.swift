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
