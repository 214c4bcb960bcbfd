import CPseudoTerminal
import Glibc

/// A program running on a new pseudoterminal (`gattd_pty_spawn`): the master's descriptor
/// (gattd's end) and the program's process id; the program leads its own session, with the
/// pty as its controlling terminal.
struct PseudoTerminal {
    let master: CInt
    let pid: pid_t

    /// Opens a pty of 24 rows x 80 columns and runs `argv` on it with `environment` (NAME=value).
    static func spawn(_ argv: [String], environment: [String]) -> Result<PseudoTerminal, SpawnFailure> {
        var slave = [CChar](repeating: 0, count: 128)
        let master = gattd_pty_open(&slave, slave.count, 24, 80)
        guard master >= 0 else { return .failure(SpawnFailure(step: "cannot open a pseudoterminal", code: -master)) }
        var pid: pid_t = 0
        let r = withCStringArray(argv) { args in withCStringArray(environment) { env in gattd_pty_spawn(slave, args, env, &pid) } }
        guard r == 0 else {
            close(master)
            return .failure(SpawnFailure(step: "cannot run \(argv.first ?? "")", code: r))
        }
        return .success(PseudoTerminal(master: master, pid: pid))
    }

    /// gattd's environment with `overrides` (NAME=value) in place of the same names.
    static func environment(_ overrides: [String]) -> [String] {
        let names = Set(overrides.map { $0.prefix { $0 != "=" } })
        var out: [String] = []
        var p = environ
        while let entry = p.pointee {
            let s = String(cString: entry)
            if !names.contains(s.prefix { $0 != "=" }) { out.append(s) }
            p += 1
        }
        return out + overrides
    }

    struct SpawnFailure: Error, CustomStringConvertible {
        var step: String
        var code: CInt
        var description: String { "\(step): \(String(cString: strerror(code)))" }
    }
}
