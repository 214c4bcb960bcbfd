/// A method call to make (`DBusConnection.call`).
public struct DBusCall: Sendable, Equatable {
    public var destination: String
    public var path: String
    public var interface: String
    public var member: String
    public var arguments: [DBusValue]

    public init(destination: String, path: String, interface: String, member: String, _ arguments: [DBusValue] = []) {
        self.destination = destination
        self.path = path
        self.interface = interface
        self.member = member
        self.arguments = arguments
    }
}
