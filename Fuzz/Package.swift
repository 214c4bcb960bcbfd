// swift-tools-version:6.1
// libFuzzer targets for gattd (docs/fuzzing.md). A package of its own so that the
// root Package.swift stays free of unsafe flags; build and run with scripts/fuzz:
//
//   swift build -c release --package-path Fuzz -Xswiftc -sanitize=fuzzer -Xswiftc -parse-as-library -Xswiftc -DGATTD_LIBFUZZER
//
// Each executable's @main hands its callback to libFuzzer's driver (FuzzSupport's
// runLibFuzzer). A plain `swift build --package-path Fuzz` builds too (no libFuzzer):
// its binaries run each input file named on the command line once (reproducers).
import PackageDescription

let package = Package(
    name: "gattd-fuzz",
    platforms: [.macOS(.v14)],
    products: [
        .executable(name: "fuzz-att", targets: ["FuzzATT"]),
        .executable(name: "fuzz-config", targets: ["FuzzConfig"]),
        .executable(name: "fuzz-host", targets: ["FuzzHost"]),
        .executable(name: "fuzz-smp", targets: ["FuzzSMP"]),
        .executable(name: "fuzz-l2cap", targets: ["FuzzL2CAP"]),
        .executable(name: "fuzz-control", targets: ["FuzzControl"]),
        .executable(name: "fuzz-bluez", targets: ["FuzzBlueZ"]),
        .executable(name: "fuzz-kernel", targets: ["FuzzKernel"]),
    ],
    dependencies: [
        .package(name: "gattd", path: ".."),
    ],
    targets: [
        // Input reading, the configs under config/, the oracle's trap.
        .target(name: "FuzzSupport", dependencies: [.product(name: "GattCore", package: "gattd")]),
        // ATTServer: exactly one well-formed reply per request, none per command, never above the MTU.
        .executableTarget(name: "FuzzATT", dependencies: ["FuzzSupport", .product(name: "GattCore", package: "gattd")]),
        // ConfigLoader with the profiles' catalog: loads or fails with a bounded report; what loads builds a database.
        .executableTarget(
            name: "FuzzConfig",
            dependencies: ["FuzzSupport", .product(name: "GattCore", package: "gattd"), .product(name: "GattProfiles", package: "gattd")]),
        // Host: H4 streams after a scripted bring-up (GattTestSupport's controller); well-formed HCI out, ACL flow control kept.
        .executableTarget(
            name: "FuzzHost",
            dependencies: [
                "FuzzSupport", .product(name: "GattCore", package: "gattd"), .product(name: "GattHost", package: "gattd"),
                .product(name: "GattTestSupport", package: "gattd"),
            ]),
        // PairingResponder: SMP PDUs in every state; nothing completes, no LTK, commands round-trip.
        .executableTarget(
            name: "FuzzSMP",
            dependencies: ["FuzzSupport", .product(name: "GattCore", package: "gattd"), .product(name: "GattHost", package: "gattd")]),
        // LE signalling codecs and credit-based channels: round trips, SDUs within the MTU, credits kept.
        .executableTarget(
            name: "FuzzL2CAP",
            dependencies: ["FuzzSupport", .product(name: "GattCore", package: "gattd"), .product(name: "GattHost", package: "gattd")]),
        // The control socket's request and reply/event parsers: what decodes round-trips.
        .executableTarget(
            name: "FuzzControl",
            dependencies: ["FuzzSupport", .product(name: "GattCore", package: "gattd"), .product(name: "GattControlProtocol", package: "gattd")]),
        // What bluetoothd sends the BlueZ back end: application calls, Device1 changes, agent calls.
        .executableTarget(
            name: "FuzzBlueZ",
            dependencies: [
                "FuzzSupport", .product(name: "GattCore", package: "gattd"), .product(name: "GattBlueZ", package: "gattd"),
                .product(name: "GattDBus", package: "gattd"),
            ]),
        // The kernel transport's rules in the daemon's stack: sockets, PDUs, HCI and mgmt events, timers.
        // (@testable: the rules' inputs are the transport's own; scripts/fuzz builds with -enable-testing.)
        .executableTarget(
            name: "FuzzKernel",
            dependencies: [
                "FuzzSupport", .product(name: "GattCore", package: "gattd"), .product(name: "GattHost", package: "gattd"),
                .product(name: "GattTransport", package: "gattd"),
            ]),
    ],
    swiftLanguageModes: [.v6]
)
