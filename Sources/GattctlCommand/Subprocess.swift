#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Runs `/bin/sh -c COMMAND` with bytes on its stdin and extra environment variables,
/// and collects its stdout (stderr is gattctl's). For `gattctl serve --exec`.
enum Subprocess {
    /// How the command ended.
    enum Termination: Equatable {
        case exited(Int32)
        case signalled(Int32)
    }

    /// Most stdout kept (the rest is read and dropped): far more than any ATT value.
    static let maximumOutput = 1 << 20

    static func run(_ command: String, input: [UInt8], environment: [String: String]) throws(GattctlFailure) -> (Termination, [UInt8]) {
        var stdinPipe: [Int32] = [-1, -1]
        var stdoutPipe: [Int32] = [-1, -1]
        guard pipe(&stdinPipe) == 0 else { throw .reply("pipe: \(errnoText())") }
        guard pipe(&stdoutPipe) == 0 else {
            close(stdinPipe[0]); close(stdinPipe[1])
            throw .reply("pipe: \(errnoText())")
        }
        // Only the command's stdin and stdout (dup2 clears the flag) reach it.
        for fd in stdinPipe + stdoutPipe { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        let (pid, rc) = shell(command, stdin: stdinPipe[0], stdout: stdoutPipe[1], environment: environment)
        close(stdinPipe[0])
        close(stdoutPipe[1])
        guard rc == 0 else {
            close(stdinPipe[1]); close(stdoutPipe[0])
            throw .reply("cannot run /bin/sh: \(String(cString: strerror(rc)))")
        }
        // The request is small (under the pipe's buffer): written whole, then EOF.
        var offset = 0
        while offset < input.count {
            let n = input.withUnsafeBytes { write(stdinPipe[1], $0.baseAddress! + offset, $0.count - offset) }
            if n < 0, errno == EINTR { continue }
            guard n > 0 else { break }  // the command does not read its stdin: fine
            offset += n
        }
        close(stdinPipe[1])
        var output: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = chunk.withUnsafeMutableBytes { read(stdoutPipe[0], $0.baseAddress, $0.count) }
            if n < 0, errno == EINTR { continue }
            guard n > 0 else { break }
            if output.count < maximumOutput { output += chunk[0..<min(n, maximumOutput - output.count)] }
        }
        close(stdoutPipe[0])
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 {
            guard errno == EINTR else { throw .reply("waitpid: \(errnoText())") }
        }
        let termination: Termination = status & 0x7F == 0 ? .exited((status >> 8) & 0xFF) : .signalled(status & 0x7F)
        return (termination, output)
    }

    /// Starts `/bin/sh -c COMMAND` with `stdio` as its stdin and stdout (an L2CAP channel),
    /// without waiting for it (the caller reaps it). Returns its pid.
    static func spawn(_ command: String, stdio: Int32, environment: [String: String]) throws(GattctlFailure) -> pid_t {
        let (pid, rc) = shell(command, stdin: stdio, stdout: stdio, environment: environment)
        guard rc == 0 else { throw .reply("cannot run /bin/sh: \(String(cString: strerror(rc)))") }
        return pid
    }

    /// posix_spawn of `/bin/sh -c COMMAND` with `stdin` and `stdout` as fds 0 and 1, gattctl's
    /// environment plus `environment`, and SIGPIPE back to its default (gattctl ignores it).
    /// Returns the pid and posix_spawn's result.
    private static func shell(_ command: String, stdin: Int32, stdout: Int32, environment: [String: String]) -> (pid_t, Int32) {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, stdin, 0)
        posix_spawn_file_actions_adddup2(&actions, stdout, 1)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var defaults = sigset_t()
        sigemptyset(&defaults)
        sigaddset(&defaults, SIGPIPE)
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGDEF))
        var env = Self.currentEnvironment().filter { entry in !environment.keys.contains { entry.hasPrefix($0 + "=") } }
        env += environment.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }
        let argv: [UnsafeMutablePointer<CChar>?] = ["/bin/sh", "-c", command].map { s in s.withCString { strdup($0) } } + [nil]
        let envp: [UnsafeMutablePointer<CChar>?] = env.map { s in s.withCString { strdup($0) } } + [nil]
        defer {
            for p in argv { free(p) }
            for p in envp { free(p) }
        }
        var pid: pid_t = 0
        let rc = posix_spawn(&pid, "/bin/sh", &actions, &attributes, argv, envp)
        return (pid, rc)
    }

    private static func currentEnvironment() -> [String] {
        var result: [String] = []
        var p = environ
        while let entry = p.pointee {
            result.append(String(cString: entry))
            p += 1
        }
        return result
    }

    private static func errnoText() -> String { String(cString: strerror(errno)) }
}
