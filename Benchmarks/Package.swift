// swift-tools-version:6.1
// Benchmarks of gattd's sans-I/O paths (docs/benchmarks.md, "Micro-benchmarks"). A package
// of its own, depending on the main one by path, so that the main build does not pay for
// package-benchmark:
//
//   swift package --package-path Benchmarks benchmark             # package-benchmark: wall time, allocations
//   swift build -c release --package-path Benchmarks --product bench-core
//   scripts/benchmark-core                                        # instructions per operation (callgrind)
import PackageDescription

let package = Package(
    name: "gattd-benchmarks",
    platforms: [.macOS(.v14)],
    products: [
        .executable(name: "bench-core", targets: ["bench-core"]),
    ],
    dependencies: [
        .package(name: "gattd", path: ".."),
        .package(url: "https://github.com/ordo-one/benchmark", from: "1.38.1", traits: ["MallocInterposer"]),
    ],
    targets: [
        // The scenarios: a brought-up host with a subscribed central, the 100-service config,
        // the control request lines.
        .target(
            name: "BenchSupport",
            dependencies: [
                .product(name: "GattCore", package: "gattd"),
                .product(name: "GattControlProtocol", package: "gattd"),
                .product(name: "GattHost", package: "gattd"),
                .product(name: "GattTestSupport", package: "gattd"),
                .product(name: "GattTransport", package: "gattd"),
            ]),
        // One scenario in a plain single-threaded loop: what callgrind counts.
        .executableTarget(
            name: "bench-core",
            dependencies: ["BenchSupport", .product(name: "GattCore", package: "gattd")]),
        // The same scenarios under package-benchmark.
        .executableTarget(
            name: "GattBenchmarks",
            dependencies: [
                "BenchSupport",
                .product(name: "GattCore", package: "gattd"),
                .product(name: "GattControlProtocol", package: "gattd"),
                .product(name: "Benchmark", package: "benchmark"),
            ],
            path: "Benchmarks/GattBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]),
    ],
    swiftLanguageModes: [.v6]
)
