import GattCore

/// The daemon's stack over the kernel transport's rules (`PeripheralStack<KernelAdapter>`) with
/// its shell wired: the kernel transport's `makeStack` for the daemon, `KernelAdapterTests`, the
/// `kernel` fuzz target and the benchmarks all wire it here.
///
/// (The closures hold the stack, unowned, and the clock, not whoever owns the stack: they run
/// on every socket read, and a reference to an object with weak references costs a slow
/// retain each time.)
extension PeripheralStack where Below == KernelAdapter {
    /// Wires the kernel transport's shell: each call it makes on the rules (a socket read, a
    /// mgmt event, a command's answer) runs in a turn of the stack at `clock()`, and each action
    /// of the rules goes to the shell, in order. Call once, before the shell is used.
    public func attachShell(_ shell: any KernelShell, clock: @escaping () -> Duration) {
        shell.runKernel = { [unowned self] call in
            let now = clock()
            callBelow(now: now) { call(&$0, now) }
        }
        onBelowOutput = { shell.perform($0) }
    }
}

/// The I/O shell of the kernel transport, whose rules (`KernelAdapter`) run in the daemon's
/// stack: it feeds in what the kernel says and performs their actions. Called on its event loop.
public protocol KernelShell: AnyObject {
    /// Set by `attachShell`, before `open`: runs a call on the rules in a turn of the stack (a
    /// socket read, a mgmt event, a command's answer); it runs before this returns.
    var runKernel: ((_ call: (inout KernelAdapter, Duration) -> [KernelOutput]) -> Void)? { get set }
    /// One action of the rules, in order (the stack has queued their events for the core).
    func perform(_ output: KernelOutput)
}
