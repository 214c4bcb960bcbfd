import GattCore

/// The one composition of the daemon's stack (`PeripheralStack<ControllerBelow>`): what the
/// daemon runs, and what the tests, fuzz targets and benchmarks drive.
extension PeripheralStack where Below == ControllerBelow {
    /// Wires the transport's shell to this stack: each call the shell makes on its value (a
    /// packet or socket read, an answer of the kernel) runs in a turn of the stack at `clock()`,
    /// and each output of the value goes to the shell, in order. A transport that runs its own
    /// rules has no shell. Call once, before the shell is used.
    ///
    /// (The closures hold the stack, unowned, and the clock, not whoever owns the stack: they
    /// run on every packet, and a reference to an object with weak references costs a slow
    /// retain each time.)
    public func attachShell(clock: @escaping () -> Duration) {
        if let shell = below.hostShell {
            shell.runHost = { [unowned self] call in
                let now = clock()
                callBelow(now: now) { $0.runHost(now: now, call) }
            }
            onBelowOutput = { if case .host(let o) = $0 { shell.perform(o) } }
        }
        if let shell = below.kernelShell {
            shell.runKernel = { [unowned self] call in
                let now = clock()
                callBelow(now: now) { $0.runKernel(now: now, call) }
            }
            onBelowOutput = { if case .kernel(let o) = $0 { shell.perform(o) } }
        }
    }
}
