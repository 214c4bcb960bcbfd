// swift-tools-version:6.1
import PackageDescription

let package = Package(
    name: "gattd",
    platforms: [.macOS(.v14)],
    products: [
        .executable(name: "gattd", targets: ["gattd"]),
        .executable(name: "gattctl", targets: ["gattctl"]),
        .library(name: "GattCore", targets: ["GattCore"]),
        .library(name: "GattHost", targets: ["GattHost"]),
        .library(name: "GattControlProtocol", targets: ["GattControlProtocol"]),
        .library(name: "GattProfiles", targets: ["GattProfiles"]),
        .library(name: "GattBlueZ", targets: ["GattBlueZ"]),
        .library(name: "GattDBus", targets: ["GattDBus"]),
        .library(name: "GattTransport", targets: ["GattTransport"]),
        // For tests, the fuzz targets and the benchmarks (their packages depend on this one by path).
        .library(name: "GattTestSupport", targets: ["GattTestSupport"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-system", from: "1.8.1"),
        .package(url: "https://github.com/apple/swift-collections", from: "1.6.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-crypto", from: "4.5.2"),
    ],
    targets: [
        // C module over libbluetooth-dev: the kernel's HCI and L2CAP socket types and constants.
        .target(
            name: "CBlueZ",
            path: "Sources/CBlueZ",
            linkerSettings: [.linkedLibrary("bluetooth")]
        ),
        // Sans-I/O protocol core, above the seam: UUIDs, ATT, GATT database, config, the
        // peripheral core, and the vocabulary the seam speaks (addresses, advertising sets, bonds).
        .target(
            name: "GattCore",
            dependencies: [
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CryptoExtras", package: "swift-crypto"),
                .product(name: "DequeModule", package: "swift-collections"),
            ]
        ),
        // Sans-I/O H4 host, below the seam: HCI codecs, L2CAP, the Security Manager (SMP),
        // the HCI advertising drivers, `Host`.
        .target(
            name: "GattHost",
            dependencies: [
                "GattCore",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "DequeModule", package: "swift-collections"),
            ]
        ),
        // The control socket's requests, replies and events as types, with their one JSON codec
        // (shared by gattd and gattctl).
        .target(name: "GattControlProtocol", dependencies: ["GattCore"]),
        // I/O shell: H4 transports (TCP, Unix, UART, HCI user channel) and the kernel transport.
        .target(
            name: "GattTransport",
            dependencies: [
                "GattCore", "GattHost", "CBlueZ",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "SystemPackage", package: "swift-system"),
            ]
        ),
        // The daemon: event loop, control socket, persistence, systemd integration.
        .target(
            name: "GattDaemon",
            dependencies: [
                "GattCore", "GattTransport", "GattControlProtocol",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "SystemPackage", package: "swift-system"),
            ]
        ),
        // C module: a pseudoterminal and a program spawned on it (the console profile's sessions).
        .target(name: "CPseudoTerminal", path: "Sources/CPseudoTerminal"),
        // The profiles (docs/profiles.md): `{"profile": ...}` entries expanded into services, and
        // the agents that run them, driving the daemon only through the control socket's protocol.
        .target(
            name: "GattProfiles",
            dependencies: [
                "GattCore", "GattControlProtocol", "CPseudoTerminal",
                .product(name: "DequeModule", package: "swift-collections"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // C module over libsystemd-dev: sd-bus, the D-Bus library the BlueZ back end speaks through.
        .target(name: "CSystemdBus", path: "Sources/CSystemdBus", linkerSettings: [.linkedLibrary("systemd")]),
        // D-Bus values, messages and one bus connection on a thread of its own, over sd-bus
        // (no wire protocol of ours: sd-bus marshals, authenticates and passes fds).
        .target(name: "GattDBus", dependencies: ["CSystemdBus"]),
        // The BlueZ back end (docs/bluez.md): gattd beside bluetoothd, over its D-Bus API.
        .target(
            name: "GattBlueZ",
            dependencies: [
                "GattCore", "GattDBus", "GattTransport",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The daemon's command line: `gattd` (options, --check-config, --probe, the run).
        .target(
            name: "GattdCommand",
            dependencies: [
                "GattCore", "GattDaemon", "GattTransport", "GattProfiles", "GattBlueZ",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ]
        ),
        // The control CLI: `gattctl` and its subcommands, a client of the control socket.
        .target(
            name: "GattctlCommand",
            dependencies: [
                "GattCore", "GattControlProtocol",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        // The installed executable: gattd, or gattctl when called by that name (a link to it).
        .executableTarget(name: "gattd", dependencies: ["GattdCommand", "GattctlCommand"]),
        // gattctl alone, for development (.build/debug/gattctl); not installed.
        .executableTarget(name: "gattctl", dependencies: ["GattctlCommand"]),
        // What tests, fuzz targets and benchmarks share: the scripted controller.
        .target(name: "GattTestSupport", dependencies: ["GattCore", "GattHost"]),
        // Fixtures the core's and the host's tests share (the ATT database, configs, hex).
        .target(name: "GattTestFixtures", dependencies: ["GattCore"], path: "Tests/GattTestFixtures"),
        .testTarget(
            name: "GattCoreTests",
            dependencies: ["GattCore", "GattTestFixtures"]
        ),
        .testTarget(
            name: "GattHostTests",
            dependencies: ["GattHost", "GattCore", "GattTestSupport", "GattTestFixtures"]
        ),
        .testTarget(name: "GattControlProtocolTests", dependencies: ["GattControlProtocol", "GattCore"]),
        .testTarget(name: "GattTransportTests", dependencies: ["GattTransport", "GattHost", "GattTestFixtures"]),
        .testTarget(name: "GattDaemonTests", dependencies: ["GattDaemon", "GattCore", "GattHost", "GattTestSupport"]),
        .testTarget(name: "GattProfilesTests", dependencies: ["GattProfiles", "GattCore", "GattControlProtocol"]),
        .testTarget(
            name: "GattBlueZTests",
            dependencies: [
                "GattBlueZ", "GattDBus", "GattCore", "GattTransport",
                .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
