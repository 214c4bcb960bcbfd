#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Logging
import Synchronization
import Testing

@testable import GattDaemon

@Suite struct JournalLogHandlerTests {
    /// 2026-11-22T10:00:00Z
    static let instant = 1_795_341_600

    @Test func plainFormatHasTimestampLevelMessageAndSortedMetadata() {
        let line = JournalLogHandler.line(
            level: .info, message: "central connected", metadata: ["mtu": "247", "central": "11:22:33:44:55:66"],
            format: .plain, secondsSinceEpoch: Self.instant)
        #expect(line == "2026-11-22T10:00:00Z info central connected central=11:22:33:44:55:66 mtu=247\n")
    }

    @Test func journalFormatHasPriorityPrefixAndNoTimestamp() {
        let line = JournalLogHandler.line(
            level: .warning, message: "queue full", metadata: ["central": "AA:BB"],
            format: .journal, secondsSinceEpoch: Self.instant)
        #expect(line == "<4>queue full central=AA:BB\n")
    }

    @Test func syslogPriorities() {
        let expected: [(Logger.Level, Int)] = [
            (.trace, 7), (.debug, 7), (.info, 6), (.notice, 5), (.warning, 4), (.error, 3), (.critical, 2),
        ]
        for (level, priority) in expected {
            #expect(JournalLogHandler.syslogPriority(level) == priority)
            #expect(
                JournalLogHandler.line(level: level, message: "m", metadata: [:], format: .journal, secondsSinceEpoch: 0)
                    == "<\(priority)>m\n")
        }
    }

    @Test func valuesWithSpacesAreQuotedAndNewlinesEscaped() {
        let line = JournalLogHandler.line(
            level: .error, message: "two\nlines", metadata: ["name": "Demo \"HR\"", "empty": "", "list": ["a", "b"]],
            format: .journal, secondsSinceEpoch: 0)
        #expect(line == "<3>two\\nlines empty=\"\" list=\"[a, b]\" name=\"Demo \\\"HR\\\"\"\n")
    }

    /// "\r\n" is one Character in Swift: a per-Character switch on "\n" and "\r" missed it
    /// and wrote a raw CR LF into a quoted metadata value, splitting the journal entry.
    @Test func crlfInsideAQuotedMetadataValueIsEscaped() {
        let line = JournalLogHandler.line(
            level: .info, message: "m", metadata: ["name": "a\r\nb c"], format: .journal, secondsSinceEpoch: 0)
        #expect(line == "<6>m name=\"a\\r\\nb c\"\n")
        let unquoted = JournalLogHandler.line(
            level: .info, message: "m", metadata: ["name": "x\r\ny"], format: .journal, secondsSinceEpoch: 0)
        #expect(unquoted == "<6>m name=\"x\\r\\ny\"\n")
    }

    /// Every line-breaking character (LF, CR, CR LF, VT, FF, NEL, LS, PS), in a message or a
    /// metadata key's value, alone or next to others, leaves exactly one line.
    @Test func noLineBreakInContentSplitsTheLine() {
        let breakers: Set<Unicode.Scalar> = ["\n", "\r", "\u{0B}", "\u{0C}", "\u{85}", "\u{2028}", "\u{2029}"]
        let breaks = ["\n", "\r", "\r\n", "\u{0B}", "\u{0C}", "\u{85}", "\u{2028}", "\u{2029}", "\n\r", "\r\r\n"]
        for b in breaks {
            for format in [JournalLogHandler.Format.journal, .plain] {
                let line = JournalLogHandler.line(
                    level: .info, message: "one\(b)two", metadata: ["k": "x\(b)y", "q": "a b\(b)\"c\""],
                    format: format, secondsSinceEpoch: 0)
                let breakingScalars: [Unicode.Scalar] = line.unicodeScalars.filter { breakers.contains($0) }
                #expect(breakingScalars == ["\n"], "\(b.unicodeScalars.map { $0.value }) in \(format)")
                #expect(line.hasSuffix("\n"))
            }
        }
        #expect(
            JournalLogHandler.line(
                level: .info, message: "a\u{2028}b\u{0B}c", metadata: ["k": "\u{0C}\u{85}\u{2029}"],
                format: .journal, secondsSinceEpoch: 0)
                == "<6>a\\u{2028}b\\vc k=\"\\f\\u{85}\\u{2029}\"\n")
    }

    @Test func timestampFormatting() {
        #expect(JournalLogHandler.timestamp(secondsSinceEpoch: 0) == "1970-01-01T00:00:00Z")
        #expect(JournalLogHandler.timestamp(secondsSinceEpoch: Self.instant + 3_723) == "2026-11-22T11:02:03Z")
    }

    @Test func handlerMergesHandlerProviderAndMessageMetadata() {
        let lines = Mutex<[String]>([])
        let provider = Logger.MetadataProvider { ["request": "7", "central": "provider"] }
        var handler = JournalLogHandler(label: "test", format: .journal, metadataProvider: provider) { line in
            lines.withLock { $0.append(line) }
        }
        handler.logLevel = .debug
        handler[metadataKey: "central"] = "handler"
        handler[metadataKey: "service"] = "hr"
        let logger = Logger(label: "test", factory: { _ in handler })
        logger.debug("hello", metadata: ["central": "message"])
        logger.trace("dropped: below the log level")
        #expect(lines.withLock { $0 } == ["<7>hello central=message request=7 service=hr\n"])
    }

    @Test func detectsJournalFromJournalStreamMatchingTheDescriptor() throws {
        let path = NSTemporaryDirectory() + "journal-detect-\(getpid())"
        let fd = open(path, O_CREAT | O_WRONLY, 0o600)
        #expect(fd >= 0)
        defer {
            close(fd)
            unlink(path)
        }
        var st = stat()
        #expect(fstat(fd, &st) == 0)
        let matching = "\(st.st_dev):\(st.st_ino)"
        #expect(JournalLogHandler.Format.detect(environment: ["JOURNAL_STREAM": matching], fileDescriptor: fd) == .journal)
        #expect(JournalLogHandler.Format.detect(environment: ["JOURNAL_STREAM": "\(st.st_dev):\(st.st_ino + 1)"], fileDescriptor: fd) == .plain)
        #expect(JournalLogHandler.Format.detect(environment: ["JOURNAL_STREAM": "garbage"], fileDescriptor: fd) == .plain)
        #expect(JournalLogHandler.Format.detect(environment: [:], fileDescriptor: fd) == .plain)
    }
}
