#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Synchronization
import Testing

@testable import GattDaemon

/// A fresh temp directory, removed at deinit.
private final class TempDirectory {
    let path: String
    init() {
        path = NSTemporaryDirectory() + "gattd-store-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        mkdir(path, 0o755)
    }
    func write(_ name: String, _ text: String) {
        _ = FileManager.default.createFile(atPath: path + "/" + name, contents: Data(text.utf8))
    }
    func read(_ name: String) -> String? {
        FileManager.default.contents(atPath: path + "/" + name).map { String(decoding: $0, as: UTF8.self) }
    }
    func names() -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []).sorted()
    }
    deinit {
        chmod(path, 0o755)
        try? FileManager.default.removeItem(atPath: path)
    }
}

@Suite struct PersistentStoreTests {
    @Test func roundTripAndExactFileFormat() throws {
        let dir = TempDirectory()
        let store = PersistentStore(directory: dir.path)
        let values: [String: [UInt8]] = ["label": Array("Kitchen".utf8), "alert": [0x01], "empty": []]
        try store.save(values)
        #expect(
            dir.read("values.json") == """
                {
                  "version": 1,
                  "values": {
                    "alert": {"hex": "01"},
                    "empty": {"hex": ""},
                    "label": {"hex": "4b69746368656e"}
                  }
                }

                """)
        let loaded = store.load()
        #expect(loaded == PersistentStore.LoadResult(values: values, problems: []))
        #expect(dir.names() == ["values.json"])

        var st = stat()
        #expect(stat(store.path, &st) == 0)
        #expect(st.st_mode & 0o777 == 0o600)
    }

    @Test func emptyStoreAndSpecialKeys() throws {
        let dir = TempDirectory()
        let store = PersistentStore(directory: dir.path)
        try store.save([:])
        #expect(dir.read("values.json") == "{\n  \"version\": 1,\n  \"values\": {}\n}\n")
        #expect(store.load() == PersistentStore.LoadResult(values: [:], problems: []))
        let odd: [String: [UInt8]] = ["quote\"back\\slash\nnl": [0xFF], "0000180d-0000-1000-8000-00805f9b34fb": [0]]
        try store.save(odd)
        #expect(store.load().values == odd)
    }

    @Test func missingDirectoryAndFileLoadAsEmpty() {
        let dir = TempDirectory()
        #expect(PersistentStore(directory: dir.path).load() == PersistentStore.LoadResult(values: [:], problems: []))
        #expect(PersistentStore(directory: dir.path + "/nope/deeper").load() == PersistentStore.LoadResult(values: [:], problems: []))
    }

    @Test func saveCreatesMissingDirectoriesWithMode0700() throws {
        let dir = TempDirectory()
        let stateDir = dir.path + "/var/lib/gattd"
        try PersistentStore(directory: stateDir).save(["a": [1, 2]])
        var st = stat()
        #expect(stat(stateDir, &st) == 0)
        #expect(st.st_mode & 0o777 == 0o700)
        #expect(stat(dir.path + "/var", &st) == 0)
        #expect(st.st_mode & 0o777 == 0o755)
        #expect(PersistentStore(directory: stateDir).load().values == ["a": [1, 2]])
    }

    @Test func leftoverTempFileFromAKilledSaveIsRemovedAndTheOldValuesKept() throws {
        let dir = TempDirectory()
        let store = PersistentStore(directory: dir.path)
        try store.save(["label": [0x41]])
        // A save killed after writing half of its temp file.
        dir.write("values.json.tmp-4242", "{\n  \"version\": 1,\n  \"values\": {\n    \"label\": {\"hex\": \"42")
        let loaded = store.load()
        #expect(loaded.values == ["label": [0x41]])
        #expect(loaded.problems == ["removed \(dir.path)/values.json.tmp-4242, left over from an interrupted save"])
        #expect(dir.names() == ["values.json"])
    }

    @Test func truncatedMainFileIsSetAsideNotFatal() throws {
        let dir = TempDirectory()
        let store = PersistentStore(directory: dir.path)
        try store.save(["label": [0x41, 0x42]])
        let full = try #require(dir.read("values.json"))
        dir.write("values.json", String(full.prefix(full.count / 2)))

        let loaded = store.load()
        #expect(loaded.values == [:])
        #expect(loaded.problems.count == 1)
        let aside = try #require(dir.names().first { $0.hasPrefix("values.json.corrupt-") })
        #expect(aside.wholeMatch(of: /values\.json\.corrupt-\d{8}T\d{6}Z/) != nil)
        #expect(loaded.problems.first == "\(store.path) is not a valid state file (not valid JSON); moved it to \(dir.path)/\(aside) and started with no saved values")
        #expect(dir.read(aside) == String(full.prefix(full.count / 2)))
        #expect(!dir.names().contains("values.json"))

        // The next save works and a second corrupt file gets a distinct name.
        try store.save(["label": [0x43]])
        #expect(store.load().values == ["label": [0x43]])
        dir.write("values.json", "")
        let again = store.load()
        #expect(again.problems.first?.contains("(the file is empty)") == true)
        #expect(dir.names().filter { $0.hasPrefix("values.json.corrupt-") }.count == 2)
    }

    @Test func wrongShapesAreRejectedWithReasons() {
        func reason(_ text: String) -> String? {
            if case .failure(let e) = PersistentStore.decode(Array(text.utf8)) { return e.message }
            return nil
        }
        #expect(reason("[1]") == "the top level is not an object")
        #expect(reason("{\"values\":{}}") == "\"version\" is missing")
        #expect(reason("{\"version\":2,\"values\":{}}") == "unsupported version 2, expected 1")
        #expect(reason("{\"version\":1}") == "\"values\" is missing or not an object")
    }

    @Test func badEntriesAreSkippedOthersKept() throws {
        let dir = TempDirectory()
        dir.write(
            "values.json",
            """
            {"version": 1, "values": {"good": {"hex": "0A0b"}, "text": {"utf8": "hi"}, "bad": {"hex": "zz"}, "num": 5}}
            """)
        let loaded = PersistentStore(directory: dir.path).load()
        #expect(loaded.values == ["good": [0x0A, 0x0B], "text": [0x68, 0x69]])
        #expect(
            loaded.problems == [
                "\(dir.path)/values.json: values.bad: 'z' at position 1 is not a hex digit; ignored",
                "\(dir.path)/values.json: values.num: expected {\"hex\": \"...\"}; ignored",
            ])
        #expect(dir.names() == ["values.json"])
    }

    @Test func saveErrorsAreReportedNotFatal() throws {
        let dir = TempDirectory()
        dir.write("file", "x")
        let underFile = PersistentStore(directory: dir.path + "/file/state")
        #expect(throws: PersistentStore.Error("cannot create \(dir.path)/file/state: \(dir.path)/file/state: Not a directory")) {
            try underFile.save(["a": [1]])
        }
        let isFile = PersistentStore(directory: dir.path + "/file")
        #expect(throws: PersistentStore.Error("\(dir.path)/file exists and is not a directory")) {
            try isFile.save(["a": [1]])
        }
        // The state file is a directory: unreadable, reported, not renamed.
        mkdir(dir.path + "/values.json", 0o755)
        let loaded = PersistentStore(directory: dir.path).load()
        #expect(loaded.values == [:])
        #expect(loaded.problems == ["cannot read \(dir.path)/values.json: Is a directory; starting with no saved values"])
        #expect(throws: PersistentStore.Error.self) { try PersistentStore(directory: dir.path).save(["a": [1]]) }
        #expect(dir.names() == ["file", "values.json"])
    }

    @Test(.enabled(if: getuid() != 0, "root ignores file permissions"))
    func permissionErrorsAreReported() throws {
        let dir = TempDirectory()
        let store = PersistentStore(directory: dir.path)
        try store.save(["a": [1]])
        chmod(store.path, 0o000)
        #expect(store.load().problems == ["cannot read \(store.path): Permission denied; starting with no saved values"])
        chmod(dir.path, 0o500)
        #expect(throws: PersistentStore.Error("cannot create \(store.path).tmp-\(getpid()): Permission denied")) {
            try store.save(["a": [2]])
        }
    }

    @Test func writerCoalescesChangesAndFlushes() throws {
        let dir = TempDirectory()
        let store = PersistentStore(directory: dir.path)
        let errors = Mutex<[String]>([])
        let writer = PersistentValueWriter(store: store, initialValues: ["keep": [9]], interval: .seconds(30)) { e in
            errors.withLock { $0.append(e.message) }
        }
        for i in 0..<100 { writer.set("counter", [UInt8(i)]) }
        // Nothing written yet: the save is 30 s away.
        #expect(dir.names() == [])
        try writer.flush()
        #expect(store.load().values == ["keep": [9], "counter": [99]])
        writer.remove("keep")
        try writer.flush()
        #expect(store.load().values == ["counter": [99]])
        #expect(writer.values == ["counter": [99]])
        #expect(errors.withLock { $0 } == [])
    }

    @Test func writerSavesOnItsOwnAfterTheInterval() async throws {
        let dir = TempDirectory()
        let store = PersistentStore(directory: dir.path)
        let writer = PersistentValueWriter(store: store, interval: .milliseconds(20)) { _ in }
        writer.set("a", [1])
        writer.set("a", [2])
        var waited = 0
        while store.load().values != ["a": [2]] && waited < 200 {
            try await Task.sleep(for: .milliseconds(10))
            waited += 1
        }
        #expect(store.load().values == ["a": [2]])
    }

    @Test func writerReportsAndRetriesFailedSaves() throws {
        let dir = TempDirectory()
        dir.write("blocker", "x")
        let store = PersistentStore(directory: dir.path + "/blocker")
        let writer = PersistentValueWriter(store: store, interval: .seconds(30)) { _ in }
        writer.set("a", [1])
        #expect(throws: PersistentStore.Error("\(dir.path)/blocker exists and is not a directory")) { try writer.flush() }
        // Still dirty: a later flush retries once the problem is gone.
        unlink(dir.path + "/blocker")
        try writer.flush()
        #expect(store.load().values == ["a": [1]])
    }
}
