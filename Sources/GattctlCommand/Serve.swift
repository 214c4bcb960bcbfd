#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import ArgumentParser
import GattControlProtocol
import GattCore

/// `gattctl serve --exec`: answers the reads and writes gattd forwards for `"handler": "control"`
/// characteristics by running a command per request, without socket code.
struct Serve: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Answer reads and writes of control characteristics by running a command per request.",
        discussion: """
            Becomes gattd's responder (`{"op":"watch","requests":true}`) and, for each \
            read_request and write_request, runs `/bin/sh -c CMD` with the event's JSON line \
            on stdin and these variables set:

              GATTD_OP              read or write
              GATTD_REQUEST         the request number
              GATTD_CHARACTERISTIC  the characteristic's id (or UUID)
              GATTD_CENTRAL         the central's address
              GATTD_OFFSET          the offset of the read or write
              GATTD_VALUE           a write's value, in hex

            Exit 0 answers success: for a read, stdout is the whole value (hex unless --utf8 \
            or --base64; one trailing newline is dropped) and gattctl sends the part from the \
            offset. A non-zero exit (or a signal) answers an error: the ATT error named on the \
            first line of stdout (e.g. write_not_permitted, value_not_allowed), else \
            --error-status (default unlikely_error). Requests are answered one at a time, in \
            order; gattd's --request-timeout applies to each. --follow keeps serving across \
            gattd restarts (for a systemd unit next to gattd's).

                gattctl serve --utf8 --exec 'cat /sys/class/thermal/thermal_zone0/temp'
            """
    )

    @OptionGroup var global: GlobalOptions
    @Option(help: ArgumentHelp("The command, run by /bin/sh -c for each request.", valueName: "cmd")) var exec: String
    @Option(help: ArgumentHelp("The ATT error a failing command answers when it names none.", valueName: "name"))
    var errorStatus = "unlikely_error"
    @Flag(help: "Print nothing on stderr per request.") var quiet = false
    @Flag(help: "Reconnect when gattd stops or restarts, and wait for it when it is not running.") var follow = false
    @Flag var encoding: ValueEncoding = .hex

    func run() throws {
        try runReportingFailures { () throws(GattctlFailure) in
            guard let fallback = ATTError(name: errorStatus) else {
                throw .usage("--error-status \(errorStatus): expected an ATT error name such as unlikely_error")
            }
            signal(SIGPIPE, SIG_IGN)
            var lost: String?
            while true {
                do throws(GattctlFailure) {
                    try serve(fallback: fallback, again: lost != nil)
                } catch where follow && error.exitCode != 64 && error.exitCode != 77 {
                    if lost == nil { StandardStream.error("gattctl: \(error.message); reconnecting (--follow)\n") }
                    lost = error.message
                    usleep(500_000)
                }
            }
        }
    }

    /// One connection to gattd as its responder, until it fails.
    private func serve(fallback: ATTError, again: Bool) throws(GattctlFailure) {
        let client = try global.connect()
        client.keepsEvents = true
        try client.expectOK(.watch(requests: true))
        if !quiet || again { StandardStream.error("gattctl: serving control requests with: \(exec)\n") }
        while true {
            let event: ControlEvent
            if !client.keptEvents.isEmpty {
                event = client.keptEvents.removeFirst()
            } else {
                guard case .event(let e)? = try client.readMessage(timeout: nil, answering: "watch") else { continue }
                event = e
            }
            guard let answer = try answer(event, fallback: fallback) else { continue }
            if case .failure(let e) = try client.request(.respond(request: answer.request, result: answer.result)) {
                StandardStream.error("gattctl: request \(answer.request): \(ControlClient.errorText(e))\n")
            } else if !quiet {
                let what = switch answer.result {
                case .success(let v): "success (\(v.bytes.count) bytes)"
                case .failure(let e): e.name
                }
                StandardStream.error("gattctl: request \(answer.request) \(answer.summary): \(what)\n")
            }
        }
    }

    struct Answer {
        var request: UInt64
        var result: Result<ControlValue, ATTError>
        var summary: String
    }

    /// Runs the command for a read or write request; nil for any other event.
    private func answer(_ event: ControlEvent, fallback: ATTError) throws(GattctlFailure) -> Answer? {
        var env: [String: String] = [:]
        let request: UInt64
        let offset: Int
        let isRead: Bool
        switch event {
        case .readRequest(let central, let r, let characteristic, let o):
            (request, offset, isRead) = (r, o, true)
            env = ["GATTD_OP": "read", "GATTD_CENTRAL": central, "GATTD_CHARACTERISTIC": characteristic]
        case .writeRequest(let central, let r, let characteristic, let o, let value):
            (request, offset, isRead) = (r, o, false)
            env = ["GATTD_OP": "write", "GATTD_CENTRAL": central, "GATTD_CHARACTERISTIC": characteristic,
                   "GATTD_VALUE": AttributeValueLiteral.hexString(value.bytes)]
        default:
            return nil
        }
        env["GATTD_REQUEST"] = String(request)
        env["GATTD_OFFSET"] = String(offset)
        let summary = "(\(env["GATTD_OP"]!) \(env["GATTD_CHARACTERISTIC"]!) from \(env["GATTD_CENTRAL"]!))"
        let (termination, output) = try Subprocess.run(exec, input: Array((event.text + "\n").utf8), environment: env)
        guard termination == .exited(0) else {
            let firstLine = String(decoding: output.prefix { $0 != 0x0A }, as: UTF8.self).trimmingSpaces
            let named = ATTError(name: firstLine)
            if !quiet {
                let how = switch termination {
                case .exited(let code): "exited \(code)"
                case .signalled(let s): "was killed by signal \(s)"
                }
                StandardStream.error("gattctl: request \(request) \(summary): the command \(how)\n")
            }
            return Answer(request: request, result: .failure(named ?? fallback), summary: summary)
        }
        guard isRead else { return Answer(request: request, result: .success(ControlValue(hex: [])), summary: summary) }
        var bytes = output
        if bytes.last == 0x0A { bytes.removeLast() }
        let value: [UInt8]
        if encoding == .utf8 {
            value = bytes
        } else {
            do {
                value = try encoding.value(String(decoding: bytes, as: UTF8.self).trimmingSpaces).bytes
            } catch {
                StandardStream.error("gattctl: request \(request) \(summary): \(error.message)\n")
                return Answer(request: request, result: .failure(fallback), summary: summary)
            }
        }
        guard offset <= value.count else { return Answer(request: request, result: .failure(.invalidOffset), summary: summary) }
        return Answer(request: request, result: .success(ControlValue(hex: Array(value[offset...]))), summary: summary)
    }
}

extension String {
    /// Without leading and trailing spaces, tabs and CR/LF.
    fileprivate var trimmingSpaces: String {
        let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\t" || $0 == "\r" || $0 == "\n" }
        return String(self.drop(while: isSpace).reversed().drop(while: isSpace).reversed())
    }
}
