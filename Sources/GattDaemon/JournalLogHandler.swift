#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Logging

/// A swift-log `LogHandler` that writes one line per message to stderr.
///
/// Two line formats, picked once at bootstrap by `JournalLogHandler.Format.detect()`:
/// - `.journal` when stderr is connected to systemd-journald (`JOURNAL_STREAM` names
///   stderr's `st_dev:st_ino`): `<6>message key=value`. The `<N>` prefix is the syslog
///   priority journald parses (sd-daemon(3)); no timestamp, journald adds its own.
/// - `.plain` otherwise: `2026-11-22T10:00:00Z info message key=value` (UTC).
///
/// Metadata (handler, metadata provider, then per-message, later wins) is appended as
/// `key=value`, sorted by key; values with spaces, quotes, `=` or line breaks are
/// double-quoted. A line break inside a message or a value is escaped (`\n`, `\r`, `\v`,
/// `\f`, `\u{2028}`...) so every message stays one line (one journal entry).
///
/// ```swift
/// let format = JournalLogHandler.Format.detect()
/// LoggingSystem.bootstrap { label in
///     var h = JournalLogHandler(label: label, format: format)
///     h.logLevel = level
///     return h
/// }
/// ```
public struct JournalLogHandler: LogHandler {
    public enum Format: Sendable, Equatable {
        /// `<N>message key=value` for journald.
        case journal
        /// `2026-11-22T10:00:00Z info message key=value` for a terminal or a log file.
        case plain

        /// `.journal` when `JOURNAL_STREAM` ("DEV:INODE", decimal) matches the device and
        /// inode of `fd` (stderr by default), `.plain` otherwise.
        public static func detect(environment: [String: String]? = nil, fileDescriptor fd: Int32 = 2) -> Format {
            let value: String?
            if let environment {
                value = environment["JOURNAL_STREAM"]
            } else {
                value = getenv("JOURNAL_STREAM").map { String(cString: $0) }
            }
            guard let value else { return .plain }
            let parts = value.split(separator: ":", omittingEmptySubsequences: false)
            guard parts.count == 2, let dev = UInt64(parts[0]), let ino = UInt64(parts[1]) else { return .plain }
            var st = stat()
            guard fstat(fd, &st) == 0 else { return .plain }
            return UInt64(st.st_dev) == dev && UInt64(st.st_ino) == ino ? .journal : .plain
        }
    }

    public var logLevel: Logger.Level = .info
    public var metadata: Logger.Metadata = [:]
    public var metadataProvider: Logger.MetadataProvider?
    public let label: String
    public let format: Format
    private let output: @Sendable (String) -> Void

    /// - Parameters:
    ///   - output: receives each complete line including its trailing "\n"; defaults to
    ///     one `write(2)` to stderr per line.
    public init(
        label: String,
        format: Format = .detect(),
        metadataProvider: Logger.MetadataProvider? = LoggingSystem.metadataProvider,
        output: @escaping @Sendable (String) -> Void = JournalLogHandler.writeToStandardError
    ) {
        self.label = label
        self.format = format
        self.metadataProvider = metadataProvider
        self.output = output
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        var merged = metadata
        if let provided = metadataProvider?.get() {
            merged.merge(provided) { _, new in new }
        }
        if let own = event.metadata {
            merged.merge(own) { _, new in new }
        }
        if let error = event.error {
            merged["error"] = .string("\(error)")
        }
        output(
            Self.line(
                level: event.level, message: event.message.description, metadata: merged,
                format: format, secondsSinceEpoch: Self.now()))
    }

    // MARK: - Formatting (pure, tested)

    /// The syslog priority journald understands for a swift-log level (sd-daemon(3)).
    public static func syslogPriority(_ level: Logger.Level) -> Int {
        switch level {
        case .trace, .debug: 7
        case .info: 6
        case .notice: 5
        case .warning: 4
        case .error: 3
        case .critical: 2
        }
    }

    /// One complete line, "\n" included.
    public static func line(
        level: Logger.Level, message: String, metadata: Logger.Metadata,
        format: Format, secondsSinceEpoch: Int
    ) -> String {
        var text: String
        switch format {
        case .journal:
            text = "<\(syslogPriority(level))>"
        case .plain:
            text = "\(timestamp(secondsSinceEpoch: secondsSinceEpoch)) \(level.rawValue) "
        }
        text += escapeNewlines(message)
        for key in metadata.keys.sorted() {
            guard let value = metadata[key] else { continue }
            text += " \(key)=\(quoted(render(value)))"
        }
        text += "\n"
        return text
    }

    /// `2026-11-22T10:00:00Z`.
    public static func timestamp(secondsSinceEpoch: Int) -> String {
        var t = time_t(secondsSinceEpoch)
        var parts = tm()
        guard gmtime_r(&t, &parts) != nil else { return "\(secondsSinceEpoch)" }
        func two(_ n: Int32) -> String { n < 10 ? "0\(n)" : "\(n)" }
        let year = Int(parts.tm_year) + 1900
        return "\(year)-\(two(parts.tm_mon + 1))-\(two(parts.tm_mday))T\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec))Z"
    }

    private static func render(_ value: Logger.Metadata.Value) -> String {
        switch value {
        case .string(let s): s
        case .stringConvertible(let c): c.description
        case .array(let a): "[" + a.map { render($0) }.joined(separator: ", ") + "]"
        case .dictionary(let d): "[" + d.keys.sorted().map { "\($0): \(d[$0].map(render) ?? "")" }.joined(separator: ", ") + "]"
        }
    }

    /// A metadata value, double-quoted (with `\"`, `\\`, `\t` and line breaks escaped)
    /// when it is empty or holds a space, quote, `=`, tab or line break. Works on Unicode
    /// scalars: "\r\n" is a single `Character`, which a per-character switch would miss.
    private static func quoted(_ s: String) -> String {
        let needsQuotes = s.isEmpty || s.unicodeScalars.contains {
            $0 == " " || $0 == "\"" || $0 == "=" || $0 == "\t" || lineBreakEscape($0) != nil
        }
        guard needsQuotes else { return s }
        var out = "\""
        for scalar in s.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\t": out += "\\t"
            default:
                if let escaped = lineBreakEscape(scalar) { out += escaped } else { out.unicodeScalars.append(scalar) }
            }
        }
        return out + "\""
    }

    /// The message with every line break escaped, so it stays on one line (one journal entry).
    private static func escapeNewlines(_ s: String) -> String {
        guard s.unicodeScalars.contains(where: { lineBreakEscape($0) != nil }) else { return s }
        var out = ""
        for scalar in s.unicodeScalars {
            if let escaped = lineBreakEscape(scalar) { out += escaped } else { out.unicodeScalars.append(scalar) }
        }
        return out
    }

    /// How a line-breaking scalar is written (`\n`, `\r`, `\v`, `\f`, `\u{85}`, `\u{2028}`,
    /// `\u{2029}`: every scalar for which `Character.isNewline` holds); nil for the others.
    private static func lineBreakEscape(_ scalar: Unicode.Scalar) -> String? {
        switch scalar {
        case "\n": "\\n"
        case "\r": "\\r"
        case "\u{0B}": "\\v"
        case "\u{0C}": "\\f"
        case "\u{85}", "\u{2028}", "\u{2029}": "\\u{\(String(scalar.value, radix: 16, uppercase: true))}"
        default: nil
        }
    }

    private static func now() -> Int {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return Int(ts.tv_sec)
    }

    /// Writes `line` to fd 2 with as few `write(2)` calls as possible (one, for lines
    /// shorter than the pipe buffer), retrying on EINTR; errors are ignored.
    @Sendable public static func writeToStandardError(_ line: String) {
        var bytes = Array(line.utf8)
        var offset = 0
        bytes.withUnsafeMutableBytes { buffer in
            guard let base = buffer.baseAddress else { return }
            while offset < buffer.count {
                let n = write(2, base + offset, buffer.count - offset)
                if n > 0 {
                    offset += n
                } else if n < 0 && errno == EINTR {
                    continue
                } else {
                    return
                }
            }
        }
    }
}
