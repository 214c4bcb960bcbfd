/// Identifies one LE connection (one ATT client, whose fixed ATT bearer a `ConnectionID`
/// also names; `BearerID` names each of its bearers): the HCI connection handle, a socket
/// fd number, or any other value the transport picks.
public struct ConnectionID: Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt16
    public init(_ rawValue: UInt16) { self.rawValue = rawValue }
    public var description: String { "conn#\(rawValue)" }
}

/// Identifies a deferred access the server handed out and waits for
/// (`ATTServerEvent.deferredAccess`, answered with `ATTServer.respond(to:result:now:)`).
public struct PendingRequestID: Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt64
    public init(_ rawValue: UInt64) { self.rawValue = rawValue }
    public var description: String { "req#\(rawValue)" }
}
