import ArgumentParser
import GattCore
import Logging

/// `gattd`: the BLE GATT peripheral daemon (the `gattd` executable runs it unless it is
/// called as `gattctl`: Sources/gattd/main.swift).
public struct Gattd: ParsableCommand, Sendable {
    public static let configuration = CommandConfiguration(
        commandName: "gattd",
        abstract: "Bluetooth Low Energy GATT peripheral daemon.",
        discussion: """
            Serves the GATT database described by a JSON config (see docs/config.md) and
            advertises it. Use --check-config FILE to validate a config and print its
            attribute table and advertising payloads without touching any Bluetooth hardware.

            Transports (--transport):
              (none)                          hci0: bluez when bluetoothd runs, else the kernel
              hciN, kernel:hciN               the kernel's Bluetooth stack
              user:hciN                       HCI user channel (hciN must be down)
              serial:DEVICE[@BAUD][,rtscts]   H4 over a UART or pty (default 1000000 baud)
              tcp:HOST:PORT                   H4 over TCP (virtual or network controllers)
              unix:PATH                       H4 over a Unix stream socket (e.g. btvirt -s)
              bluez, bluez:hciN               beside bluetoothd, through its D-Bus API
            """,
        version: GattdVersion.string
    )

    @Option(name: .long, help: ArgumentHelp("The config file to serve.", valueName: "file"))
    var config: String = "/etc/gattd/gattd.json"

    @Option(name: .long, help: ArgumentHelp("Validate FILE, print its attribute table and advertising payloads and exit (65 when invalid, 66 when unreadable; warnings on stderr).", valueName: "file"))
    var checkConfig: String?

    @Option(name: .long, help: ArgumentHelp("Where the controller is (forms above). Default: hci0, through bluetoothd when it runs (bluez), else through the kernel; the log says which.", valueName: "spec"))
    var transport: String?

    @Option(name: .long, help: ArgumentHelp("The control socket path.", valueName: "path"))
    var control: String = "/run/gattd/control.sock"

    @Option(name: .long, help: ArgumentHelp("Group allowed to use the control socket.", valueName: "group"))
    var controlGroup: String?

    @Option(name: .long, help: ArgumentHelp("Control clients connected at once; one more gets an error line and is closed.", valueName: "n"))
    var maxControlClients: Int = 256

    @Option(name: .long, help: ArgumentHelp("Where bonds and persisted values are kept.", valueName: "dir"))
    var stateDir: String = "/var/lib/gattd"

    @Flag(name: .long, help: "Do not keep services added at run time, advertising turned on or off and run-time advertising data across restarts and reloads (state restoration); the config file alone says what is served.")
    var noStateRestoration = false

    @Option(name: .long, help: ArgumentHelp("Seconds a control client has to answer a forwarded read or write before the central gets Unlikely Error.", valueName: "seconds"))
    var requestTimeout: Double = 5

    @Option(name: .long, help: ArgumentHelp("Log level.", valueName: "level"))
    var logLevel: Logger.Level = .info

    @Option(name: .long, help: ArgumentHelp("Capture to FILE in the btsnoop format (Wireshark, btmon -r): every HCI packet on H4 transports, the ATT PDUs on the kernel transport. Also at run time: gattctl capture.", valueName: "file"))
    var btsnoop: String?

    @Flag(name: .long, help: "Open the controller --transport names, print what it is and can do (version, manufacturer, LE features, advertising sets and data length, ACL buffers, how gattd advertises on it) and exit; nothing goes on the air. With --check-config FILE: also check FILE's advertising sets against that controller (65 when one does not fit).")
    var probe = false

    public init() {}

    public func run() throws {
        if let file = checkConfig {
            let (code, out, err) = CheckConfig.run(path: file)
            if !out.isEmpty { StandardStream.output.write(out) }
            if !err.isEmpty { StandardStream.error.write(err) }
            if code != 0 { throw ExitCode(code) }
            if probe { try checkConfigAgainstController(file, self) }
            return
        }
        if probe { return try runProbe(self) }
        try runDaemon(self)
    }
}

extension Logger.Level: @retroactive ExpressibleByArgument {}
