import GattControlProtocol
import GattCore
import Testing

@testable import GattProfiles

/// The expansion of `{"profile": ...}` entries: the services as the standards define them, the
/// options' errors with their JSON paths, and the core untouched without the catalog.
@Suite struct ProfileCatalogTests {
    static let pi = SystemFacts(model: "Raspberry Pi 4 Model B Rev 1.4", firmwareRevision: "6.6.51+rpt-rpi-v8", softwareRevision: "Debian GNU/Linux 12 (bookworm)")

    func load(_ services: String, system: SystemFacts = SystemFacts()) throws(ConfigErrors) -> GattConfiguration {
        try ConfigLoader.load(data: Array(#"{"name": "t", "services": [\#(services)]}"#.utf8), expander: ProfileCatalog(system: system)).gatt
    }

    func errors(_ services: String) -> [String] {
        do {
            _ = try load(services)
            return []
        } catch {
            return error.errors.map(\.description)
        }
    }

    @Test func consoleIsTheNordicUARTServiceAuthenticatedByDefault() throws {
        let c = try load(#"{"profile": "uart_console"}"#)
        let s = try #require(c.services.first)
        #expect(s.id == "console" && s.profile == "uart_console")
        #expect(s.uuid == BluetoothUUID("6E400001-B5A3-F393-E0A9-E50E24DCCA9E"))
        let rx = s.characteristics[0], tx = s.characteristics[1]
        #expect(rx.id == "console_rx" && rx.uuid == BluetoothUUID("6E400002-B5A3-F393-E0A9-E50E24DCCA9E"))
        #expect(rx.properties == [.write, .writeWithoutResponse])
        #expect(rx.permissions == [.writeAuthenticationRequired])
        #expect(tx.id == "console_tx" && tx.uuid == BluetoothUUID("6E400003-B5A3-F393-E0A9-E50E24DCCA9E"))
        #expect(tx.properties.contains(.notifyEncryptionRequired))
    }

    @Test func consoleWithoutSecurityIsSpelledOutAndWarned() throws {
        let entry = #"{"profile": "uart_console", "id": "console", "security": "none", "command": ["/bin/cat"]}"#
        let s = try #require(try load(entry).services.first)
        #expect(s.characteristics[0].permissions == [.writeable])
        #expect(!s.characteristics[1].properties.contains(.notifyEncryptionRequired))
        let root = try JSONParser.parse(Array(#"{"name": "t", "services": [\#(entry)]}"#.utf8))
        let instances = ProfileCatalog().instances(inConfig: root)
        #expect(instances.count == 1)
        guard case .uartConsole(let o) = instances[0].options else { Issue.record("not a console"); return }
        #expect(o.command == ["/bin/cat"] && o.security == .none && o.rxID == "console_rx" && o.txID == "console_tx")
        #expect(instances[0].warnings == [#"services[0].security: "none": the console (/bin/cat…) is open to any central in range, without pairing"#])
    }

    @Test func consoleOptionErrorsNameTheirPaths() {
        #expect(
            errors(#"{"profile": "uart_console", "command": [], "security": "open", "max_sessions": 0, "shell": 1}"#) == [
                #"services[0].command: must name a program: ["/bin/login"]"#,
                #"services[0].security: "open" is not a security level; expected one of: "authenticated", "encrypted", "none""#,
                #"services[0].max_sessions: 0 is out of range; allowed: 1...64"#,
                #"services[0].shell: unknown key; allowed keys here: profile, id, security, command, term, max_sessions, max_pending_input"#,
            ])
        #expect(errors(#"{"profile": "uart_console", "command": ["bash"]}"#) == [#"services[0].command[0]: must be an absolute path ("bash" is not)"#])
    }

    @Test func unknownProfilesAreNamedWithAHint() {
        #expect(errors(#"{"profile": "batery"}"#) == [#"services[0].profile: unknown profile "batery"; did you mean "battery"?"#])
        #expect(errors(#"{"profile": 7}"#) == ["services[0].profile: expected a string, got a number (7)"])
    }

    @Test func batteryLevelReadsAndNotifiesOneByte() throws {
        let s = try #require(try load(#"{"profile": "battery", "level": 80}"#).services.first)
        #expect(s.uuid == BluetoothUUID(0x180F) && s.id == "battery")
        let level = s.characteristics[0]
        #expect(level.id == "battery_level" && level.uuid == BluetoothUUID(0x2A19))
        #expect(level.properties == [.read, .notify] && level.value == [80] && level.maxLength == 1)
        #expect(errors(#"{"profile": "battery", "level": 101, "capacity_file": "BAT0/capacity"}"#).count == 2)
    }

    @Test func deviceInformationFromTheConfigThenTheOS() throws {
        let s = try #require(
            try load(#"{"profile": "device_information", "model": "Gateway", "pnp_id": {"vendor_id": 7531, "product_id": 2}}"#, system: Self.pi).services.first)
        let values = s.characteristics.map { ($0.uuid, String(decoding: $0.value, as: UTF8.self)) }
        #expect(values.map(\.0) == [0x2A24, 0x2A26, 0x2A28, 0x2A50].map { BluetoothUUID(uuid16: $0) })
        #expect(values[0].1 == "Gateway")  // the config wins over the OS's model
        #expect(values[1].1 == "6.6.51+rpt-rpi-v8" && values[2].1 == "Debian GNU/Linux 12 (bookworm)")
        #expect(s.characteristics[3].value == [0x01, 0x6B, 0x1D, 0x02, 0x00, 0x00, 0x00])
        // No serial number unless spelled out; "system": false uses only the config.
        let bare = try #require(try load(#"{"profile": "device_information", "system": false, "serial": "S1"}"#, system: Self.pi).services.first)
        #expect(bare.characteristics.map(\.uuid) == [BluetoothUUID(0x2A25)])
    }

    @Test func theCoreAloneKnowsNoProfile() {
        #expect(throws: ConfigErrors.self) { try ConfigLoader.load(data: Array(#"{"name": "t", "services": [{"profile": "battery"}]}"#.utf8)) }
    }

    @Test func idsOfExpandedServicesShareTheNamespace() {
        #expect(
            errors(#"{"profile": "battery"}, {"profile": "battery"}"#).contains(#"services[1].id: id "battery" is already used by services[0]"#))
    }

    @Test func runtimeServicesExpandToo() throws {
        let db = try load("").makeDatabase()
        let v = try JSONParser.parse(Array(#"{"profile": "battery", "id": "spare"}"#.utf8))
        let d = try RuntimeService.parse(v, in: db, expander: ProfileCatalog()).get()
        #expect(d.profile == "battery" && d.id == "spare")
        guard case .failure(let e) = RuntimeService.parse(try JSONParser.parse(Array(#"{"profile": "x"}"#.utf8)), in: db, expander: ProfileCatalog())
        else { Issue.record("accepted"); return }
        #expect(e.errors.map(\.description) == [#"service.profile: unknown profile "x"; profiles: uart_console, improv_wifi, battery, device_information"#])
    }
}

extension ProfileCatalogTests {
    @Test func improvIsTheSpecsService() throws {
        let entry = #"{"profile": "improv_wifi", "id": "improv", "authorization": "none", "wifi": {"command": ["/path/to/script"]}, "redirect_url": "http://{ip}/"}"#
        let s = try #require(try load(entry).services.first)
        #expect(s.profile == "improv_wifi" && s.uuid == BluetoothUUID("00467768-6228-2272-4663-277478268000"))
        #expect(s.characteristics.map(\.id) == ["improv_state", "improv_error", "improv_rpc_command", "improv_rpc_result", "improv_capabilities"])
        #expect(s.characteristics.map(\.uuid) == (1...5).map { BluetoothUUID("00467768-6228-2272-4663-27747826800\($0)") })
        #expect(s.characteristics[0].value == [0x02])  // no authorization: starts Authorized
        #expect(s.characteristics[4].value == [0x02])  // device info only: no identify, no scan command
        #expect(s.characteristics[2].properties == [.write, .writeWithoutResponse])
        let byDefault = try #require(try load(#"{"profile": "improv_wifi", "identify_command": ["/usr/bin/true"]}"#).services.first)
        #expect(byDefault.characteristics[0].value == [0x01] && byDefault.characteristics[4].value == [0x07])
    }

    @Test func improvOptionErrors() {
        #expect(
            errors(#"{"profile": "improv_wifi", "authorization": "button", "wifi": "wpa_supplicant", "timeout_s": 0}"#) == [
                #"services[0].authorization: expected "none", "control" or a number of seconds, got a string"#,
                #"services[0].wifi: expected "networkmanager" or {"command": [...]}, got "wpa_supplicant""#,
                "services[0].timeout_s: 0 s is out of range; allowed: 1...3600 s",
            ])
        #expect(errors(#"{"profile": "improv_wifi", "wifi": {"scan_command": ["/bin/scan"]}}"#) == ["services[0].wifi.command: required key is missing"])
    }
}
