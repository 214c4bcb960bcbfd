/// One problem in a config file: where (a JSON path such as
/// `services[0].characteristics[1].uuid`) and what is wrong.
public struct ConfigError: Error, Sendable, Equatable, CustomStringConvertible {
    public var path: String
    public var message: String
    public init(path: String, message: String) {
        self.path = path
        self.message = message
    }

    /// The path used when the file itself cannot be read.
    public static let filePath = "(file)"
    /// The path used for the document as a whole (e.g. it is not an object).
    public static let rootPath = "(top level)"

    /// "path: message"
    public var description: String { "\(path): \(message)" }
}
