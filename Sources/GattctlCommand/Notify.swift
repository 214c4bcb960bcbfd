#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import ArgumentParser
import GattControlProtocol
import GattCore

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
