#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import ArgumentParser
import GattControlProtocol
import GattCore

/// `gattctl respond`: answers the reads and writes gattd forwards for `"handler": "control"`
/// characteristics from the command line, without socket code.
struct Respond: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Answer a forwarded read or write of a control characteristic.",
        discussion: """
            REQUEST_ID is the "request" of a read_request/write_request event, as printed by \
            `gattctl watch --requests` (which makes that watch a responder: gattd forwards \
            requests only while a responder is connected). For a read, VALUE is the value \
            from the request's offset; a write is accepted with no VALUE. --status NAME \
            answers an ATT error instead (e.g. write_not_permitted, value_not_allowed).

                gattctl respond 7 --utf8 21.5
                gattctl respond 8 --status write_not_permitted
            """
    )

    @OptionGroup var global: GlobalOptions
    @Argument(help: ArgumentHelp("The request's number from its event.", valueName: "request-id")) var request: UInt64
    @Argument(help: "For a read: the value (from the request's offset).") var value: String?
    @Option(help: ArgumentHelp("success, or an ATT error name (write_not_permitted, unlikely_error, ...).", valueName: "name"))
    var status = "success"
    @Flag var encoding: ValueEncoding = .hex

    func run() throws {
        try runReportingFailures { () throws(GattctlFailure) in
            let result: Result<ControlValue, ATTError>
            if status == "success" {
                result = .success(try value.map { v throws(GattctlFailure) in try encoding.value(v) } ?? ControlValue(hex: []))
            } else if let e = ATTError(name: status) {
                guard value == nil else { throw .usage("a VALUE goes only with --status success") }
                result = .failure(e)
            } else {
                throw .usage("--status \(status): expected success or an ATT error name such as write_not_permitted")
            }
            try global.connect().expectOK(.respond(request: request, result: result))
        }
    }
}
