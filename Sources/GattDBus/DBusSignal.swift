/// A signal that a subscription matched (`DBusConnection.subscribe`).
public struct DBusSignal: Sendable, Equatable {
    public var sender: String
    public var path: String
    public var interface: String
    public var member: String
    public var arguments: [DBusValue]
}
