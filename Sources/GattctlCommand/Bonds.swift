#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import ArgumentParser
import GattControlProtocol
import GattCore

struct Bonds: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "List the bonded centrals.")

    @OptionGroup var global: GlobalOptions
    @Flag(help: "Print gattd's JSON reply as is.") var json = false

    func run() throws {
        try runReportingFailures { () throws(GattctlFailure) in
            let client = try global.connect()
            let reply = try client.expectOK(.bonds)
            guard case .bonds(let bonds) = reply else { throw .reply("gattd's reply has no bonds") }
            if json {
                emit(reply.json(id: client.lastReplyID).text)
            } else {
                StandardStream.output(Self.table(bonds))
            }
        }
    }

    /// `CENTRAL  TYPE  SECURITY  KEY  IRK  CREATED  LAST SEEN` (UTC), or "no bonds".
    static func table(_ bonds: [ControlBond]) -> String {
        guard !bonds.isEmpty else { return "no bonds\n" }
        var rows = [["CENTRAL", "TYPE", "SECURITY", "KEY", "IRK", "CREATED", "LAST SEEN"]]
        for b in bonds {
            let security = "\(b.authenticated ? "authenticated" : "unauthenticated"), \(b.secureConnections ? "LE SC" : "legacy")"
            rows.append([
                b.central.description, b.addressType.rawValue & 0x01 == 0 ? "public" : "random", security,
                String(b.keySize), b.irk ? "yes" : "no", utc(b.created), b.lastSeen.map(utc) ?? "-",
            ])
        }
        var widths = [Int](repeating: 0, count: rows[0].count)
        for row in rows { for (i, cell) in row.enumerated() { widths[i] = max(widths[i], cell.count) } }
        return rows.map { row in
            row.enumerated().map { i, cell in i == row.count - 1 ? cell : cell + String(repeating: " ", count: widths[i] - cell.count) }
                .joined(separator: "  ")
        }.joined(separator: "\n") + "\n"
    }

    /// `2026-11-23T19:27:10Z`.
    static func utc(_ seconds: Int) -> String {
        var t = tm()
        var s = time_t(seconds)
        gmtime_r(&s, &t)
        func two(_ n: Int32) -> String { n < 10 ? "0\(n)" : "\(n)" }
        return "\(t.tm_year + 1900)-\(two(t.tm_mon + 1))-\(two(t.tm_mday))T\(two(t.tm_hour)):\(two(t.tm_min)):\(two(t.tm_sec))Z"
    }
}
