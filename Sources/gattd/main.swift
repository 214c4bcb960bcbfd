import GattctlCommand
import GattdCommand

// The one installed executable: `gattd`, and `gattctl` as a link to it (scripts/install,
// scripts/package), chosen by the name it is called by — one static Swift runtime on disk
// instead of two (docs/benchmarks.md, "Memory and the installed build").
switch Invocation(argument0: CommandLine.arguments.first) {
case .gattctl: Gattctl.main()
case .gattd: Gattd.main()
}
