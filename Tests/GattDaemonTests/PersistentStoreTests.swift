#if canImport(Glibc)
import Glibc
#endif
import SystemPackage
import Testing

@testable import GattDaemon

/// A fresh temp directory on the real file system, removed at deinit.
final class TempDirectory {
    let path: String
    init() {
        path = "/tmp/gattd-store-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        mkdir(path, 0o755)
    }
    func write(_ name: String, _ text: String) {
        let fd = open(path + "/" + name, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        _ = Array(text.utf8).withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
        close(fd)
    }
    func read(_ name: String) -> String? {
        guard let bytes = try? SystemStateDirectory(path).read(name) else { return nil }
        return String(decoding: bytes, as: UTF8.self)
    }
    func names() -> [String] {
        guard let d = opendir(path) else { return [] }
        defer { closedir(d) }
        var out: [String] = []
        while let e = readdir(d) {
            let n = withUnsafeBytes(of: e.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            if n != ".", n != ".." { out.append(n) }
        }
        return out.sorted()
    }
    deinit { _ = system("rm -rf '\(path)'") }
}

@Suite struct PersistentStoreTests {
    private func reload(_ dir: any StateDirectory) -> PersistentStore.LoadResult {
        PersistentStore(directory: dir).load(now: 1_795_000_000)
    }

    @Test func commitsAppendOneLogLineEachAndCompactionWritesTheSnapshot() throws {
        let dir = FakeStateDirectory()
        let store = PersistentStore(directory: dir)
        #expect(store.load() == PersistentStore.LoadResult(values: [:], problems: []))
        try store.commit(["label": Array("Kitchen".utf8)])
        try store.commit(["alert": [0x02], "empty": []])
        #expect(dir.text("values.log") == """
            {"crc32":"\(StateFileFormat.hex8(CRC32.checksum(Array(#""generation":0,"values":{"label":{"hex":"4b69746368656e"}}"#.utf8))))","generation":0,"values":{"label":{"hex":"4b69746368656e"}}}
            {"crc32":"\(StateFileFormat.hex8(CRC32.checksum(Array(#""generation":0,"values":{"alert":{"hex":"02"},"empty":{"hex":""}}"#.utf8))))","generation":0,"values":{"alert":{"hex":"02"},"empty":{"hex":""}}}

            """)
        #expect(dir.files["values.json"] == nil)
        let expected: [String: [UInt8]] = ["label": Array("Kitchen".utf8), "alert": [0x02], "empty": []]
        #expect(reload(dir).values == expected)
        #expect(dir.state.withLock { $0.writes } == 2)

        try store.compact()
        #expect(dir.text("values.json") == """
            {
              "version": 1,
              "generation": 1,
              "values": {
                "alert": {"hex": "02"},
                "empty": {"hex": ""},
                "label": {"hex": "4b69746368656e"}
              }
            }

            """)
        #expect(dir.files["values.log"] == [])
        #expect(reload(dir) == PersistentStore.LoadResult(values: expected, problems: []))
    }

    @Test func crcKnownAnswer() {
        #expect(CRC32.checksum(Array("123456789".utf8)) == 0xCBF4_3926)
    }

    @Test func aSnapshotWithoutGenerationFromEarlierVersionsLoads() throws {
        let dir = FakeStateDirectory()
        dir.state.withLock { $0.files["values.json"] = Array("{\n  \"version\": 1,\n  \"values\": {\n    \"label\": {\"hex\": \"41\"}\n  }\n}\n".utf8) }
        let store = PersistentStore(directory: dir)
        #expect(store.load().values == ["label": [0x41]])
        try store.commit(["other": [0x01]])
        #expect(reload(dir).values == ["label": [0x41], "other": [0x01]])
    }

    @Test func aTornTailIsIgnoredReportedAndOverwritten() throws {
        let dir = FakeStateDirectory()
        let store = PersistentStore(directory: dir)
        _ = store.load()
        try store.commit(["a": [1]])
        try store.commit(["a": [2]])
        let intact = dir.files["values.log"] ?? []
        // A crash in the middle of the third line.
        let third = StateFileFormat.logRecord(["a": [3]], generation: 0)
        for cut in [1, third.count / 2, third.count - 1] {
            dir.state.withLock { $0.files["values.log"] = intact + third.prefix(cut) }
            let r = reload(dir)
            #expect(r.values == ["a": [2]])
            #expect(r.problems == ["/fake/values.log: ignored \(cut) bytes after offset \(intact.count) (a write torn by a crash)"])
        }
        // A flipped bit in a complete line: its CRC fails.
        var flipped = third
        flipped[third.count - 6] ^= 0x01
        dir.state.withLock { $0.files["values.log"] = intact + flipped }
        #expect(reload(dir).values == ["a": [2]])

        // The next commit after a load cuts the tail first, so nothing valid follows garbage.
        let next = PersistentStore(directory: dir)
        _ = next.load()
        try next.commit(["b": [9]])
        #expect(reload(dir) == PersistentStore.LoadResult(values: ["a": [2], "b": [9]], problems: []))
    }

    @Test func aFailedCommitChangesNothingAndTheStoreRecoversByCompacting() throws {
        let dir = FakeStateDirectory()
        let store = PersistentStore(directory: dir)
        _ = store.load()
        try store.commit(["a": [1]])
        dir.setFailing(.noSpace)
        #expect(throws: PersistentStore.Error("cannot write /fake/values.log: No space left on device", errno: .noSpace)) {
            try store.commit(["a": [2]])
        }
        #expect(store.values == ["a": [1]])
        dir.setFailing(nil)
        #expect(reload(dir).values == ["a": [1]])
        // Writable again: the next commit compacts (the log may hold part of the failed line).
        try store.commit(["b": [3]])
        #expect(dir.state.withLock { $0.replaces } == 1)
        #expect(reload(dir) == PersistentStore.LoadResult(values: ["a": [1], "b": [3]], problems: []))
        try store.commit(["b": [4]])
        #expect(dir.state.withLock { $0.replaces } == 1)
        #expect(reload(dir).values == ["a": [1], "b": [4]])
    }

    @Test func aTornFailedWriteIsNeverFollowedByLaterLines() throws {
        let dir = FakeStateDirectory()
        let store = PersistentStore(directory: dir)
        _ = store.load()
        try store.commit(["a": [1]])
        dir.state.withLock { $0.tearNextWriteAfter = 20 }
        #expect(throws: PersistentStore.Error.self) { try store.commit(["a": [2]]) }
        #expect(reload(dir).values == ["a": [1]])
        try store.commit(["a": [3]])
        try store.commit(["c": [4]])
        #expect(reload(dir) == PersistentStore.LoadResult(values: ["a": [3], "c": [4]], problems: []))
    }

    @Test func linesOfAnOlderGenerationLeftByAnInterruptedCompactionAreIgnored() throws {
        let dir = FakeStateDirectory()
        let store = PersistentStore(directory: dir)
        _ = store.load()
        try store.commit(["a": [1]])
        try store.commit(["a": [2]])
        let log = dir.files["values.log"] ?? []
        // Crash after the new snapshot's rename, before the log was cut.
        try store.compact()
        try store.commit(["a": [3]])
        let newLine = dir.files["values.log"] ?? []
        dir.state.withLock { $0.files["values.log"] = log + newLine }
        #expect(reload(dir) == PersistentStore.LoadResult(values: ["a": [3]], problems: []))
        dir.state.withLock { $0.files["values.log"] = log }
        #expect(reload(dir).values == ["a": [2]])
    }

    @Test func theLogIsCompactedPastTheThreshold() throws {
        let dir = FakeStateDirectory()
        let store = PersistentStore(directory: dir, compactionThreshold: 200)
        _ = store.load()
        for n in 0..<20 { try store.commit(["k\(n % 3)": [UInt8(n)]]) }
        #expect(dir.state.withLock { $0.replaces } >= 4)
        #expect((dir.files["values.log"]?.count ?? 0) < 300)
        #expect(reload(dir) == PersistentStore.LoadResult(values: ["k0": [18], "k1": [19], "k2": [17]], problems: []))
    }

    @Test func aCorruptSnapshotIsSetAsideNotFatal() throws {
        let dir = FakeStateDirectory()
        dir.state.withLock { $0.files["values.json"] = Array("{\"version\": 1, \"values\": {\"a\": {\"hex\": \"4".utf8) }
        let store = PersistentStore(directory: dir)
        let r = store.load(now: 1_795_000_000)
        #expect(r.values == [:])
        #expect(r.problems.count == 1)
        #expect(r.problems[0].hasPrefix("/fake/values.json is not a valid state file (not valid JSON); moved it to /fake/values.json.corrupt-2026"))
        #expect(dir.files.keys.contains { $0.hasPrefix("values.json.corrupt-") })
        try store.commit(["a": [1]])
        #expect(reload(dir).values == ["a": [1]])
    }

    @Test func wrongShapesAreRejectedWithReasonsAndBadEntriesSkipped() {
        func reason(_ text: String) -> String? {
            if case .failure(let e) = StateFileFormat.parseSnapshot(Array(text.utf8)) { return e.message }
            return nil
        }
        #expect(reason("") == "the file is empty")
        #expect(reason("[1]") == "the top level is not an object")
        #expect(reason("{\"values\": {}}") == "\"version\" is missing")
        #expect(reason("{\"version\": 2, \"values\": {}}") == "unsupported version 2, expected 1")
        #expect(reason("{\"version\": 1}") == "\"values\" is missing or not an object")
        #expect(reason("{\"version\": 1, \"generation\": -1, \"values\": {}}") == "\"generation\" is not a non-negative integer")
        guard case .success(let s) = StateFileFormat.parseSnapshot(Array(#"{"version": 1, "values": {"ok": {"hex": "01"}, "bad": {"hex": "0"}, "shape": 3}}"#.utf8))
        else { Issue.record("not parsed"); return }
        #expect(s.values == ["ok": [1]])
        #expect(s.problems.count == 2)
    }

    // MARK: Real file system

    @Test func realDirectoryIsCreatedWithMode0700AndFilesWith0600() throws {
        let tmp = TempDirectory()
        let stateDir = tmp.path + "/var/lib/gattd"
        let store = PersistentStore(directory: stateDir)
        _ = store.load()
        try store.commit(["a": [1, 2]])
        try store.commit(["quote\"back\\slash\nnl": [0xFF]])
        var st = stat()
        #expect(stat(stateDir, &st) == 0)
        #expect(st.st_mode & 0o777 == 0o700)
        #expect(stat(tmp.path + "/var", &st) == 0)
        #expect(st.st_mode & 0o777 == 0o755)
        #expect(stat(stateDir + "/values.log", &st) == 0)
        #expect(st.st_mode & 0o777 == 0o600)
        let expected: [String: [UInt8]] = ["a": [1, 2], "quote\"back\\slash\nnl": [0xFF]]
        #expect(PersistentStore(directory: stateDir).load() == PersistentStore.LoadResult(values: expected, problems: []))
        try store.compact()
        #expect(stat(stateDir + "/values.json", &st) == 0)
        #expect(st.st_mode & 0o777 == 0o600)
        #expect(PersistentStore(directory: stateDir).load().values == expected)
    }

    @Test func realLeftoverTempFileIsRemoved() throws {
        let tmp = TempDirectory()
        let store = PersistentStore(directory: tmp.path)
        _ = store.load()
        try store.commit(["label": [0x41]])
        try store.compact()
        tmp.write("values.json.tmp-4242", "{\n  \"version\": 1,\n  \"values\": {\n    \"label\": {\"hex\": \"42")
        let loaded = PersistentStore(directory: tmp.path).load()
        #expect(loaded.values == ["label": [0x41]])
        #expect(loaded.problems == ["removed \(tmp.path)/values.json.tmp-4242, left over from an interrupted save"])
        #expect(tmp.names() == ["values.json", "values.log"])
    }

    /// A real failure: the state directory's path runs through a regular file (ENOTDIR),
    /// then becomes usable; the store needs no restart.
    @Test func realFailureIsReportedAndPersistenceResumes() throws {
        let tmp = TempDirectory()
        tmp.write("blocker", "not a directory")
        let store = PersistentStore(directory: tmp.path + "/blocker/state")
        #expect(store.load().values == [:])
        #expect(throws: PersistentStore.Error.self) { try store.commit(["a": [1]]) }
        #expect(store.values == [:])
        unlink(tmp.path + "/blocker")
        try store.commit(["a": [2]])
        #expect(PersistentStore(directory: tmp.path + "/blocker/state").load().values == ["a": [2]])
    }
}
