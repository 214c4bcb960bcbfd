/// The kernel transport's name for the shared poll thread (`SocketPoller`).
public typealias KernelPoller = SocketPoller
