import Testing
@testable import GattCore
import GattTestFixtures

/// The `security` config object: defaults, every key, JSON-path errors.
@Suite struct SecurityConfigTests {
    typealias F = ConfigFixture

    @Test func defaultsWithoutTheObject() throws {
        let c = try F.load(#"{"name": "x"}"#)
        #expect(c.security == SecurityManagerConfiguration())
        #expect(c.security.ioCapability == .noInputNoOutput && c.security.bondable && !c.security.secureConnectionsOnly)
        #expect(c.security.minimumKeySize == 16 && !c.security.allowDebugKeys)
        #expect(try ConfigLoader.load(data: Array(#"{"name": "x"}"#.utf8)).settings == DaemonSettings())
    }

    @Test func everyKeyIsRead() throws {
        let file = try ConfigLoader.load(data: Array(#"""
            {"name": "x", "security": {"io_capability": "keyboard_display", "bondable": false, "secure_connections_only": true,
             "min_key_size": 7, "max_bonds": 3, "allow_debug_keys": true, "restore_without_encryption": true}}
            """#.utf8))
        let c = file.gatt
        #expect(c.security == SecurityManagerConfiguration(
            ioCapability: .keyboardDisplay, bondable: false, secureConnectionsOnly: true, minimumKeySize: 7, allowDebugKeys: true))
        // `max_bonds` and `restore_without_encryption` are the daemon's, apart from the GATT configuration.
        #expect((file.settings.maxBonds, file.settings.restoreWithoutEncryption, file.settings.stateRestoration) == (3, true, true))
        for (name, io) in SecurityParser.ioCapabilities {
            #expect(try F.load(#"{"name": "x", "security": {"io_capability": "\#(name)"}}"#).security.ioCapability == io)
        }
    }

    @Test func errorsNameTheirPath() {
        let errors = F.errors(#"""
            {"name": "x", "security": {"io_capability": "keypad", "bondable": 1, "min_key_size": 6, "max_bonds": 0, "pin": "0000"}}
            """#)
        #expect(errors == [
            #"security.io_capability: "keypad" is not an IO capability; expected one of: "no_input_no_output", "display_only", "display_yes_no", "keyboard_only", "keyboard_display""#,
            "security.bondable: expected true or false, got a number (1)",
            "security.min_key_size: 6 octets is out of range; allowed: 7...16 octets",
            "security.max_bonds: 0 is out of range; allowed: 1...65535",
            "security.pin: unknown key; allowed keys here: io_capability, bondable, secure_connections_only, min_key_size, max_bonds, allow_debug_keys, request_security_on_connect, confirm_pairing, restore_without_encryption",
        ])
        #expect(F.errors(#"{"name": "x", "security": []}"#) == ["security: expected an object, got an array"])
    }
}
