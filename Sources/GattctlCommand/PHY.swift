import ArgumentParser
import GattControlProtocol
import GattCore

struct PHY: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "phy",
        abstract: "Ask a central for other PHYs (LE Set PHY).",
        discussion: """
            1m, 2m, coded, coded_s2 or coded_s8, for both directions or --tx/--rx apart. \
            Refused, with the reason, where the controller lacks LE 2M or LE Coded.
            """)

    @OptionGroup var global: GlobalOptions
    @Argument(help: "The central's address, as `gattctl status` shows it.") var address: String
    @Argument(help: "The PHY both ways (or give --tx and --rx).") var phy: String?
    @Option(help: "The PHY to transmit on.") var tx: String?
    @Option(help: "The PHY to receive on.") var rx: String?

    func run() throws {
        try runReportingFailures { () throws(GattctlFailure) in
            guard BluetoothAddress(address) != nil else { throw .usage("\"\(address)\" is not a Bluetooth address (AA:BB:CC:DD:EE:FF)") }
            guard let tx = tx ?? phy, let rx = rx ?? phy else { throw .usage("give a PHY, or --tx and --rx") }
            // The names are checked as gattd checks them (one decoder).
            let line: JSONText = .object([("op", .string("phy")), ("central", .string(address)), ("tx", .string(tx)), ("rx", .string(rx))])
            let request: ControlRequest
            do throws(ControlRequestError) {
                request = try ControlRequest.decode(Array(line.text.utf8))
            } catch {
                throw .usage(error.error.message)
            }
            try global.connect().expectOK(request.command)
        }
    }
}
