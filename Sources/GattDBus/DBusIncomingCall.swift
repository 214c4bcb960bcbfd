import Synchronization

/// A method call made to one of our objects (`DBusConnection.export`). Answer it once with
/// `DBusConnection.reply`; one dropped unanswered is answered with an error for the caller.
public final class DBusIncomingCall: @unchecked Sendable, CustomStringConvertible {
    public let sender: String
    public let path: String
    public let interface: String
    public let member: String
    public let arguments: [DBusValue]
    /// The call's message (a reference of ours), touched on the bus thread only.
    let message: OpaquePointer
    /// Held strongly: a call may outlive its connection (kept by whoever answers it), and its
    /// deinit still hands the message back to that thread (or frees it once the thread is gone).
    let bus: DBusBusThread
    private let answered = Atomic<Bool>(false)

    init(message: OpaquePointer, bus: DBusBusThread, sender: String, path: String, interface: String, member: String, arguments: [DBusValue]) {
        self.message = message
        self.bus = bus
        self.sender = sender
        self.path = path
        self.interface = interface
        self.member = member
        self.arguments = arguments
    }

    public var description: String { "\(interface).\(member) on \(path) from \(sender)" }

    /// True the first time only: a call is answered once.
    func markAnswered() -> Bool { !answered.exchange(true, ordering: .relaxed) }

    deinit { bus.release(message, answer: answered.load(ordering: .relaxed) ? nil : DBusError("org.freedesktop.DBus.Error.Failed", "gattd dropped this call unanswered")) }
}
