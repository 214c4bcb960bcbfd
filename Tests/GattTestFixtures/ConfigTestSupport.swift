import GattCore

/// Helpers shared by the config, layout and hash tests.
package enum ConfigFixture {
    /// The package root, from this file's path (Tests/GattTestFixtures/…).
    package static var packageRoot: String {
        var parts = String(#filePath).split(separator: "/", omittingEmptySubsequences: false)
        parts.removeLast(3)
        return parts.joined(separator: "/")
    }

    package static func path(_ relative: String) -> String { packageRoot + "/" + relative }

    package static func load(_ json: String) throws(ConfigErrors) -> GattConfiguration {
        try ConfigLoader.load(data: Array(json.utf8)).gatt
    }

    /// The error lines ("path: message") for a config that must fail; a
    /// config that loads gives ["<loaded>"] so the comparison fails loudly.
    package static func errors(_ json: String) -> [String] {
        do {
            _ = try load(json)
            return ["<loaded>"]
        } catch {
            return error.errors.map(\.description)
        }
    }

    /// A config with one service holding one characteristic built from `characteristic` (JSON members).
    package static func oneCharacteristic(_ characteristic: String) -> String {
        #"{"name": "T", "services": [{"uuid": "180D", "characteristics": [{"#+characteristic+#"}]}]}"#
    }

    package static func heartRate() throws -> GattConfiguration {
        try ConfigLoader.load(path: path("config/heart-rate.json")).gatt
    }
}
