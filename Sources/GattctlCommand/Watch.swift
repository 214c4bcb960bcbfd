#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import ArgumentParser
import GattControlProtocol
import GattCore

struct Watch: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print gattd's events (connections, subscriptions, writes...) as they happen.",
        discussion: """
            One readable line per event, or with --json the protocol's JSON lines exactly as             received. Watching is passive: reads and writes of "handler": "control"             characteristics are forwarded only while a responder is connected; --requests             makes this watch one (answer with `gattctl respond`). --follow keeps watching             across gattd restarts (reconnecting every half second; a note on stderr).
            """)

    @OptionGroup var global: GlobalOptions
    @Flag(help: "Print the raw JSON event lines.") var json = false
    @Flag(help: "Be the responder for control characteristics (answer with gattctl respond).") var requests = false
    @Flag(help: "Reconnect when gattd stops or restarts, and wait for it when it is not running.") var follow = false

    func run() throws {
        try runReportingFailures { () throws(GattctlFailure) in
            var lost: String?
            while true {
                do throws(GattctlFailure) {
                    let client = try global.connect()
                    try client.expectOK(.watch(requests: requests ? true : nil))
                    if lost != nil { StandardStream.error("gattctl: watching again\n") }
                    lost = nil
                    while true {
                        guard let line = try client.readLine(timeout: nil) else { continue }
                        if json {
                            emit(line)
                        } else {
                            emit(Rendering.line(try ControlClient.decode(line, answering: "watch"), at: Rendering.now()))
                        }
                    }
                } catch where follow && error.exitCode != 64 && error.exitCode != 77 {
                    if lost == nil { StandardStream.error("gattctl: \(error.message); reconnecting (--follow)\n") }
                    lost = error.message
                    usleep(500_000)
                }
            }
        }
    }
}
