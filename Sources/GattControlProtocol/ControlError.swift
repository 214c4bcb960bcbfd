import GattCore

/// A failed request (or an undecodable line): the code and a human-readable message.
public struct ControlError: Error, Sendable, Equatable {
    public var code: ControlErrorCode
    public var message: String
    public init(_ code: ControlErrorCode, _ message: String) {
        self.code = code
        self.message = message
    }
}

/// Why a line is not a valid request, with the `id` to echo when it could be read.
public struct ControlRequestError: Error, Sendable, Equatable {
    public var id: JSONText?
    public var error: ControlError
    public init(id: JSONText?, error: ControlError) {
        self.id = id
        self.error = error
    }
}
