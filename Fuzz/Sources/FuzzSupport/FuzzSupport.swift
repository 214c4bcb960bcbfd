#if canImport(Glibc)
import Glibc
#endif
import GattCore

/// FUZZ_TRACE=1 prints what a target does, for reading a reproducer.
public let tracing = getenv("FUZZ_TRACE") != nil

public func trace(_ line: @autoclosure () -> String) {
    guard tracing else { return }
    let bytes = Array((line() + "\n").utf8)
    _ = bytes.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
}

/// Stops the run with a message libFuzzer reports as a crash (and saves the input).
public func oracleViolation(_ message: String) -> Never {
    fatalError("oracle violation: \(message)")
}

/// Reads a fuzz input front to back; past the end every read gives zeros / empty.
public struct FuzzInput {
    public let bytes: [UInt8]
    public private(set) var index = 0

    public init(_ data: UnsafePointer<UInt8>?, _ size: Int) {
        bytes = size > 0 && data != nil ? Array(UnsafeBufferPointer(start: data, count: size)) : []
    }

    public var isAtEnd: Bool { index >= bytes.count }

    public mutating func byte() -> UInt8 {
        guard index < bytes.count else { return 0 }
        defer { index += 1 }
        return bytes[index]
    }

    public mutating func uint16() -> UInt16 { UInt16(byte()) | UInt16(byte()) << 8 }

    /// Up to `count` bytes (fewer at the end of the input).
    public mutating func take(_ count: Int) -> [UInt8] {
        let n = min(count, bytes.count - index)
        defer { index += n }
        return Array(bytes[index..<index + n])
    }

    /// A length byte, then that many bytes.
    public mutating func chunk() -> [UInt8] { take(Int(byte())) }

    /// Everything not read yet.
    public mutating func rest() -> [UInt8] { take(bytes.count - index) }
}

/// The configs the fuzz targets serve: every file under config/ and config/test/
/// (found from this source file's path, so the binaries run from any directory).
public enum FuzzConfigs {
    public static let files = [
        "config/heart-rate.json", "config/full-example.json", "config/ibeacon.json",
        "config/test/gatt-full.json", "config/test/long-name.json", "config/test/max-one-connection.json",
        "config/advertising-sets.json",
    ]

    public static let repositoryRoot: String = {
        var parts = String(#filePath).split(separator: "/", omittingEmptySubsequences: false)
        parts.removeLast(4)  // Fuzz/Sources/FuzzSupport/FuzzSupport.swift
        return parts.joined(separator: "/")
    }()

    /// Loaded once; a config that does not load stops the target (a fuzz target
    /// silently serving nothing would pass every run).
    public static let all: [GattConfiguration] = files.map { file in
        do {
            return try ConfigLoader.load(path: repositoryRoot + "/" + file).gatt
        } catch {
            fatalError("fuzz setup: \(file) does not load: \(error)")
        }
    }

    public static func pick(_ selector: UInt8) -> GattConfiguration { all[Int(selector) % all.count] }
}

public func hex(_ bytes: [UInt8]) -> String {
    bytes.map { b in
        let s = String(b, radix: 16)
        return s.count == 1 ? "0" + s : s
    }.joined()
}

#if GATTD_LIBFUZZER
/// libFuzzer's driver (FuzzerDriver.cpp): parses the libFuzzer flags and fuzzes `callback`.
@_silgen_name("LLVMFuzzerRunDriver")
func LLVMFuzzerRunDriver(
    _ argc: UnsafeMutablePointer<Int32>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
    _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> Int32
) -> Int32
#endif

/// The body of each target's `@main`. Built by scripts/fuzz (`-sanitize=fuzzer
/// -DGATTD_LIBFUZZER`): hands over to libFuzzer's driver, which parses the libFuzzer flags
/// (SwiftPM links an executable with `--defsym main=<Module>_main`, which hides libFuzzer's
/// own `main`). Built plainly (`swift build --package-path Fuzz`): runs `callback` once on
/// each file named on the command line (a reproducer or a corpus file), flags ignored.
public func runLibFuzzer(_ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> Int32) -> Never {
    #if GATTD_LIBFUZZER
    var argc = CommandLine.argc
    var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
    exit(LLVMFuzzerRunDriver(&argc, &argv, callback))
    #else
    let files = CommandLine.arguments.dropFirst().filter { !$0.hasPrefix("-") }
    for path in files {
        guard let bytes = readFile(path) else {
            printError("\(CommandLine.arguments[0]): cannot read \(path)")
            exit(1)
        }
        _ = bytes.withUnsafeBufferPointer { callback($0.baseAddress, $0.count) }
    }
    printError("\(CommandLine.arguments[0]): built without libFuzzer; ran \(files.count) input file(s) once (scripts/fuzz fuzzes)")
    exit(0)
    #endif
}

#if !GATTD_LIBFUZZER
private func printError(_ line: String) {
    let bytes = Array((line + "\n").utf8)
    _ = bytes.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
}

private func readFile(_ path: String) -> [UInt8]? {
    guard let f = fopen(path, "rb") else { return nil }
    defer { fclose(f) }
    var bytes: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 65536)
    while true {
        let n = fread(&buffer, 1, buffer.count, f)
        bytes += buffer[0..<n]
        if n < buffer.count { return ferror(f) == 0 ? bytes : nil }
    }
}
#endif
