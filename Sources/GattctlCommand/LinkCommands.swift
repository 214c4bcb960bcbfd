import ArgumentParser
import GattControlProtocol
import GattCore

// MARK: - connection-parameters

// MARK: - phy

// MARK: - data-length

struct DataLength: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "data-length",
        abstract: "Ask a central's link for another data length (LE Set Data Length).",
        discussion: """
            The largest LL data payload gattd sends, 27 to 251 octets; what each side then \
            uses shows in `gattctl status` and as `link` events. Refused, with the reason, \
            where the controller lacks LE Data Packet Length Extension.
            """)

    @OptionGroup var global: GlobalOptions
    @Argument(help: "The central's address, as `gattctl status` shows it.") var address: String
    @Argument(help: "Octets to send per LL data PDU (27-251).") var octets: Int

    func run() throws {
        try runReportingFailures { () throws(GattctlFailure) in
            guard BluetoothAddress(address) != nil else { throw .usage("\"\(address)\" is not a Bluetooth address (AA:BB:CC:DD:EE:FF)") }
            guard (27...251).contains(octets) else { throw .usage("\(octets) octets: the data length is 27 to 251 octets") }
            try global.connect().expectOK(.dataLength(central: address, txOctets: octets))
        }
    }
}
