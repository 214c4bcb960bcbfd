import ArgumentParser
import GattControlProtocol
import GattCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

struct L2CAPServe: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Run a command for each channel a central opens (inetd style).",
        discussion: """
            Listens for the channel ID (from the config's "l2cap_channels" or published) and, \
            for each channel a central opens, runs `/bin/sh -c CMD` with the channel as its \
            stdin and stdout: each read returns one SDU, each write sends one (at most the \
            central's MTU). Commands run side by side, one per channel. Variables set:

              GATTD_CENTRAL        the central's address
              GATTD_L2CAP_CHANNEL  the channel's id
              GATTD_PSM            its PSM
              GATTD_MTU            the largest SDU gattd takes
              GATTD_PEER_MTU       the largest SDU the central takes

                gattctl l2cap serve stream --exec cat     # an echo server
            """
    )

    @OptionGroup var global: GlobalOptions
    @Argument(help: "The channel's id.") var id: String
    @Option(help: ArgumentHelp("The command, run by /bin/sh -c for each channel.", valueName: "cmd")) var exec: String
    @Flag(help: "Print nothing on stderr per channel.") var quiet = false

    func run() throws {
        try runReportingFailures { () throws(GattctlFailure) in
            signal(SIGPIPE, SIG_IGN)
            let client = try global.connect()
            let channel = try L2CAPListening.listen(client, id)
            StandardStream.error("gattctl: serving L2CAP channel \"\(id)\" (PSM \(channel.psm)) with: \(exec)\n")
            // gattctl keeps each channel's socket while its command runs, then until what the
            // command wrote has left it: closing the socket ends the channel, and the kernel
            // drops what still waits for the central's credits.
            var running: [pid_t: Int32] = [:]
            var draining: [Int32] = []
            while true {
                for pid in Self.reap() {
                    if let socket = running.removeValue(forKey: pid) { draining.append(socket) }
                }
                draining.removeAll { socket in
                    guard ChannelSendQueue.isDone(socket) else { return false }
                    close(socket)
                    return true
                }
                guard let (event, socket) = try L2CAPListening.next(client, timeout: .seconds(1)) else { continue }
                if !quiet { StandardStream.error("gattctl: \(event.central) opened \"\(id)\" (MTU \(event.peerMTU))\n") }
                L2CAPListening.makeBlocking(socket)
                do throws(GattctlFailure) {
                    let pid = try Subprocess.spawn(exec, stdio: socket, environment: [
                        "GATTD_CENTRAL": event.central, "GATTD_L2CAP_CHANNEL": id, "GATTD_PSM": String(event.psm),
                        "GATTD_MTU": String(event.mtu), "GATTD_PEER_MTU": String(event.peerMTU),
                    ])
                    running[pid] = socket
                } catch {
                    StandardStream.error("gattctl: \(error.message)\n")
                    close(socket)
                }
            }
        }
    }

    /// Collects finished commands (no zombies); returns their pids.
    static func reap() -> [pid_t] {
        var status: Int32 = 0
        var done: [pid_t] = []
        while true {
            let pid = waitpid(-1, &status, WNOHANG)
            guard pid > 0 else { return done }
            done.append(pid)
        }
    }
}
