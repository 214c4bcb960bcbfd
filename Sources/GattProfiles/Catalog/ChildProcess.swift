import CPseudoTerminal
import Dispatch
import Glibc
import NIOCore

/// A program run to completion off the event loop (`gattd_spawn_piped`): `input` on its stdin,
/// its stdout and stderr gathered (each up to 64 KiB), killed with its process group when it
/// outlives `timeout`. For the profiles' backends (Improv's Wi-Fi commands, nmcli).
struct ChildProcess {
    struct Outcome: Sendable {
        /// The exit status; nil when killed by a signal or for the timeout.
        var status: Int32?
        var timedOut: Bool
        var stdout: [UInt8]
        var stderr: [UInt8]
        var succeeded: Bool { status == 0 }
        var stderrText: String { String(decoding: stderr, as: UTF8.self).trimmingWhitespace }
    }

    struct Failure: Error, CustomStringConvertible {
        var program: String
        var code: CInt
        var description: String { "cannot run \(program): \(String(cString: strerror(code)))" }
    }

    static let outputLimit = 64 * 1024

    /// Runs `argv` (absolute path first) with `environment`; the outcome on `eventLoop`.
    static func run(
        _ argv: [String], input: [UInt8] = [], environment: [String] = PseudoTerminal.environment([]), timeout: Duration,
        on eventLoop: any EventLoop
    ) -> EventLoopFuture<Outcome> {
        let promise = eventLoop.makePromise(of: Outcome.self)
        // A serial queue of its own (a thread beyond the global pool's, as ConsoleSession's reap).
        DispatchQueue(label: "gattd.profiles.child").async {
            promise.completeWith(Result { try runBlocking(argv, input: input, environment: environment, timeout: timeout) })
        }
        return promise.futureResult
    }

    private static func runBlocking(_ argv: [String], input: [UInt8], environment: [String], timeout: Duration) throws -> Outcome {
        var pid: pid_t = 0
        var fds: [CInt] = [-1, -1, -1]
        let r = withCStringArray(argv) { args in withCStringArray(environment) { env in gattd_spawn_piped(args, env, &pid, &fds) } }
        guard r == 0 else { throw Failure(program: argv.first ?? "", code: r) }
        // stdin: written at once (small: a JSON line), then closed.
        var written = 0
        _ = signal(SIGPIPE, SIG_IGN)
        while written < input.count {
            let n = input.withUnsafeBytes { write(fds[0], $0.baseAddress! + written, $0.count - written) }
            if n < 0, errno == EINTR { continue }
            guard n > 0 else { break }
            written += n
        }
        close(fds[0])
        var out: [UInt8] = [], err: [UInt8] = []
        var open = [fds[1], fds[2]]
        let deadline = DispatchTime.now().uptimeNanoseconds + UInt64(max(0, timeout.components.seconds)) * 1_000_000_000
            + UInt64(max(0, timeout.components.attoseconds / 1_000_000_000))
        var timedOut = false
        var buffer = [UInt8](repeating: 0, count: 4096)
        while !open.isEmpty {
            let now = DispatchTime.now().uptimeNanoseconds
            if now >= deadline {
                timedOut = true
                break
            }
            var polls = open.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
            let wait = Int32(min(1000, (deadline - now) / 1_000_000 + 1))
            let n = poll(&polls, nfds_t(polls.count), wait)
            if n < 0, errno == EINTR { continue }
            for p in polls where p.revents != 0 {
                let got = buffer.withUnsafeMutableBytes { read(p.fd, $0.baseAddress, $0.count) }
                if got <= 0 {
                    if got < 0, errno == EINTR { continue }
                    close(p.fd)
                    open.removeAll { $0 == p.fd }
                } else if p.fd == fds[1] {
                    if out.count < outputLimit { out += buffer[0..<min(got, outputLimit - out.count)] }
                } else if err.count < outputLimit {
                    err += buffer[0..<min(got, outputLimit - err.count)]
                }
            }
        }
        open.forEach { close($0) }
        if timedOut { kill(-pid, SIGKILL) }
        var status: CInt = 0
        while waitpid(pid, &status, 0) < 0, errno == EINTR {}
        let exited = status & 0x7F == 0
        return Outcome(status: exited && !timedOut ? (status >> 8) & 0xFF : nil, timedOut: timedOut, stdout: out, stderr: err)
    }
}
