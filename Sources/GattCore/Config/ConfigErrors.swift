/// The problems found in a config file, in document order: at most the
/// first `reportLimit`, and how many there were in all. Output stays small
/// however broken the file is (it goes to the journal on every reload).
public struct ConfigErrors: Error, Sendable, CustomStringConvertible {
    /// How many errors are kept and reported; the rest are only counted.
    public static let reportLimit = 100

    /// The first errors (at most `reportLimit`).
    public var errors: [ConfigError]
    /// How many errors the file has in all (at least `errors.count`).
    public var totalCount: Int

    /// Keeps the first `reportLimit` of `errors`; `totalCount` defaults to `errors.count`.
    public init(_ errors: [ConfigError], totalCount: Int? = nil) {
        self.errors = Array(errors.prefix(Self.reportLimit))
        self.totalCount = max(totalCount ?? errors.count, self.errors.count)
    }

    /// True when the file could not be read at all (missing, unreadable,
    /// a directory): `gattd --check-config` exits with EX_NOINPUT then.
    public var isReadFailure: Bool { errors.count == 1 && errors[0].path == ConfigError.filePath }

    /// How many errors are counted but not in `errors`.
    public var omittedCount: Int { totalCount - errors.count }

    /// The report: one line per error ("path: message", after `prefix` when given),
    /// then "… and N more errors" when some were left out.
    public func lines(prefix: String = "") -> [String] {
        var out = errors.map { prefix + $0.description }
        let n = omittedCount
        if n > 0 { out.append("… and \(n) more error\(n == 1 ? "" : "s")") }
        return out
    }

    /// The report, one line per error.
    public var description: String { lines().joined(separator: "\n") }
}
