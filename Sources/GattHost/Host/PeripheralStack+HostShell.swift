import GattCore

/// The daemon's stack over the H4 host (`PeripheralStack<H4Host>`) with its shell wired: the
/// transport's `makeStack` for the daemon, the host tests (`H4Stack`), the `host` fuzz target and
/// the benchmarks all wire it here.
///
/// (The closures hold the stack, unowned, and the clock, not whoever owns the stack: they run
/// on every packet, and a reference to an object with weak references costs a slow retain
/// each time.)
extension PeripheralStack where Below == H4Host {
    /// Wires the H4 shell: each call it makes on the host (a packet read, a channel's call, the
    /// start of a link) runs in a turn of the stack at `clock()`, and each output of the host goes
    /// to the shell, in order. Call once, before the shell is used.
    public func attachShell(_ shell: any HostShell, clock: @escaping () -> Duration) {
        shell.runHost = { [unowned self] call in
            let now = clock()
            callBelow(now: now) { call(&$0, now) }
        }
        onBelowOutput = { shell.perform($0) }
    }
}

/// The I/O shell of the H4 transports, whose sans-I/O half (`H4Host`) runs in the daemon's
/// stack: it reads and writes the controller's packets. Called on the transport's event loop.
public protocol HostShell: AnyObject {
    /// Set by `attachShell`, before `open`: runs a call on the host in a turn of the stack (a
    /// packet read, a channel's call, the start of a link).
    var runHost: ((_ call: (inout H4Host, Duration) -> [HostOutput]) -> Void)? { get set }
    /// One output of the host, in order: a packet to write, a channel event, a warning, a
    /// fatal error (the stack has told the core `.lost` already).
    func perform(_ output: HostOutput)
}
