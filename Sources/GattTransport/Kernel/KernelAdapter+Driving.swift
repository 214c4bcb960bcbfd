import GattCore

/// The few inputs a served link needs, for a program outside this module that drives the rules
/// with no kernel (the benchmarks run the daemon's composition over them): each is what the
/// shell feeds in when the kernel says it. Sockets are the shell's numbers.
extension KernelAdapter {
    /// The adapter opened, in a new session, with `controller` (the shell's open, its listen on
    /// the ATT channel and what it read of the controller, in one).
    public mutating func openForDriving(controller: ControllerInfo, description: String) -> [KernelOutput] {
        guard case .start(let session) = open() else { return [] }
        return opened(session: session, controller: controller, support: nil, description: description).map(KernelOutput.init)
    }

    /// An ATT socket the kernel accepted.
    public mutating func accepted(socket: Int, handle: UInt16?, peer: KernelBDAddress, security: SecurityLevel, now: Duration) -> [KernelOutput] {
        accepted(socket: KernelSocketID(rawValue: socket), handle: handle, peer: peer, security: security, now: now).map(KernelOutput.init)
    }

    /// A PDU read from a bearer's socket.
    public mutating func received(_ pdu: [UInt8], fromSocket socket: Int, security: SecurityLevel?) -> [KernelOutput] {
        received(pdu, from: KernelSocketID(rawValue: socket), security: security, sendMTU: nil).map(KernelOutput.init)
    }
}

extension KernelOutput {
    /// The socket and the PDU, when this output writes one.
    public var written: (socket: Int, pdu: [UInt8])? {
        guard case .write(let socket, let pdu) = action else { return nil }
        return (socket.rawValue, pdu)
    }
}
