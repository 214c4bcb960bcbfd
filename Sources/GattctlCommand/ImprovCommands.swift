import ArgumentParser
import GattControlProtocol

/// `gattctl improv authorize`: the button of an Improv Wi-Fi service (docs/profiles.md). Any
/// program (a GPIO button's handler) runs it; gattd's Improv agent, watching the socket, takes
/// the `signal` and lets a phone send Wi-Fi credentials for the config's authorization time.
struct Improv: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Improv Wi-Fi provisioning (the improv_wifi profile).", subcommands: [Authorize.self])

    struct Authorize: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Authorize Improv Wi-Fi provisioning, as the device's button would.",
            discussion: "Sends {\"op\":\"signal\",\"name\":\"improv.authorize\"} (with --id: \"ID.authorize\", that service only).")

        @OptionGroup var global: GlobalOptions
        @Option(help: "Only the improv_wifi service with this id.") var id: String?

        func run() throws {
            try runReportingFailures { () throws(GattctlFailure) in
                try global.connect().expectOK(.signal(name: "\(id ?? "improv").authorize"))
            }
        }
    }
}
