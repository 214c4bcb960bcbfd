import ArgumentParser
import GattControlProtocol
import GattCore

/// `gattctl capture start FILE` / `gattctl capture stop`.
struct Capture: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Start or stop a btsnoop capture (Wireshark, btmon -r) while gattd runs.",
        discussion: """
            gattd creates FILE itself (a new file only; an absolute path as gattd sees it: \
            under systemd, /tmp is private to the service and most of the file system is \
            read-only, so use e.g. /var/lib/gattd/capture.btsnoop). On H4 transports it \
            records every HCI packet; on the kernel transport the ATT PDUs gattd exchanges \
            (as HCI ACL packets on their connection handles). A new start replaces the \
            capture in progress. gattd's reply says what is recorded; it is printed.
            """
    )

    enum Action: String, ExpressibleByArgument, CaseIterable {
        case start, stop
    }

    @OptionGroup var global: GlobalOptions
    @Argument(help: "start or stop.") var action: Action
    @Argument(help: "With start: the new file.") var file: String?

    func run() throws {
        try runReportingFailures { () throws(GattctlFailure) in
            switch (action, file) {
            case (.start, nil): throw .usage("capture start needs a FILE")
            case (.stop, _?): throw .usage("capture stop takes no FILE")
            case (.start, let file?):
                guard file.hasPrefix("/") else { throw .usage("FILE must be an absolute path (gattd creates it), got \(file)") }
                if case .capturing(let path, let records) = try global.connect().expectOK(.capture(file: file)) {
                    emit("capturing \(records) to \(path)")
                }
            case (.stop, nil):
                try global.connect().expectOK(.capture(file: nil))
            }
        }
    }
}
