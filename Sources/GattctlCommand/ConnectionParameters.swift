import ArgumentParser
import GattControlProtocol
import GattCore

struct ConnectionParameters: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "connection-parameters",
        abstract: "Ask a central (or every connected one) for new connection parameters.",
        discussion: """
            A preset: low_latency (15 ms, latency 0, 2 s), balanced (30-50 ms, 0, 5 s) or \
            low_power (120-150 ms, 2, 6 s); or --interval MIN,MAX --latency N --timeout MS, \
            checked against the rules of the config's connection.preferred (Apple's too). \
            Waits until the central took or refused them.
            """)

    @OptionGroup var global: GlobalOptions
    @Argument(help: "low_latency, balanced or low_power (or leave out and give --interval, --latency and --timeout).") var preset: String?
    @Option(help: "The central's address (default: every connected central).") var central: String?
    @Option(help: "The connection interval range in ms, MIN,MAX (multiples of 1.25).") var interval: String?
    @Option(help: "The peripheral latency (connection events).") var latency: Int?
    @Option(help: "The supervision timeout in ms.") var timeout: Int?

    func run() throws {
        try runReportingFailures { () throws(GattctlFailure) in
            if let central, BluetoothAddress(central) == nil {
                throw .usage("\"\(central)\" is not a Bluetooth address (AA:BB:CC:DD:EE:FF)")
            }
            try global.connect().expectOK(.connectionParameters(central: central, try parameters()))
        }
    }

    private func parameters() throws(GattctlFailure) -> ControlConnectionParameters {
        if let preset {
            guard interval == nil, latency == nil, timeout == nil else { throw .usage("give a preset or --interval, --latency and --timeout, not both") }
            guard let p = ConnectionParameterPreset(rawValue: preset) else {
                throw .usage("unknown preset \"\(preset)\"; expected \(ConnectionParameterPreset.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            return .preset(p)
        }
        guard let interval, let latency, let timeout else { throw .usage("give a preset, or all of --interval MIN,MAX, --latency and --timeout") }
        let bounds = interval.split(separator: ",").compactMap { Double(String($0.filter { $0 != " " })) }
        guard bounds.count == 2, latency >= 0, latency <= Int(UInt16.max), timeout >= 0 else {
            throw .usage("--interval takes MIN,MAX in ms (e.g. 30,45); --latency and --timeout non-negative integers")
        }
        // Vol 6 Part B §4.5.1: 7.5 ms to 4 s; anything else (inf, nan, 1e300) never reaches gattd.
        if let bad = bounds.first(where: { !$0.isFinite || $0 < 7.5 || $0 > 4000 }) {
            throw .usage("--interval: \(bad) is not a connection interval; MIN and MAX are milliseconds from 7.5 to 4000")
        }
        guard timeout <= 32000 else { throw .usage("--timeout: \(timeout) ms is out of range; the supervision timeout is 100 to 32000 ms") }
        // gattd checks the rules (and says which one is broken).
        return .explicit(PreferredConnectionParameters(intervalMinMs: bounds[0], intervalMaxMs: bounds[1], latency: UInt16(latency), timeoutMs: timeout))
    }
}
