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
            return try ConfigLoader.load(path: repositoryRoot + "/" + file)
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

/// libFuzzer's driver (FuzzerDriver.cpp): parses the libFuzzer flags and fuzzes `callback`.
@_silgen_name("LLVMFuzzerRunDriver")
func LLVMFuzzerRunDriver(
    _ argc: UnsafeMutablePointer<Int32>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
    _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> Int32
) -> Int32

/// The body of each target's entry point. SwiftPM links an executable with
/// `--defsym main=<Module>_main` (so that tests can import executables), which
/// would hide libFuzzer's own `main`; each target therefore defines `<Module>_main`
/// and hands over to libFuzzer's driver from there.
public func runLibFuzzer(
    _ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?,
    _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> Int32
) -> Int32 {
    var argc = argc
    var argv = argv
    return LLVMFuzzerRunDriver(&argc, &argv, callback)
}
