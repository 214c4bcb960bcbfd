import GattCore
import Testing

@testable import GattProfiles

/// Improv Wi-Fi (improv-wifi.com/ble) apart from the I/O: frames, reassembly, the state
/// machine, the backends' parsers and the advertising rule.
@Suite struct ImprovTests {
    typealias S = ImprovSession

    /// The spec's example: SSID MyWirelessAP, password mysecurepassword: `01 1E 0C {…} 10 {…} CS`.
    @Test func theSpecsWiFiSettingsExample() throws {
        let data = [0x0C] + Array("MyWirelessAP".utf8) + [0x10] + Array("mysecurepassword".utf8)
        let bytes = ImprovFrame(command: 0x01, data: data).bytes
        #expect(Array(bytes.prefix(3)) == [0x01, 0x1E, 0x0C])
        #expect(bytes.last == UInt8(truncatingIfNeeded: bytes.dropLast().reduce(0) { $0 + Int($1) }))
        let settings = try #require(ImprovFrame.wifiSettings(data))
        #expect(settings.ssid == "MyWirelessAP" && settings.password == "mysecurepassword")
        #expect(ImprovFrame.wifiSettings([0x05, 0x41]) == nil)
        #expect(ImprovFrame.wifiSettings([0x00, 0x00]) == nil)  // no SSID
    }

    @Test func resultsAreLengthPrefixedStrings() {
        #expect(ImprovFrame.result(0x01, strings: ["http://x/"]).bytes == [0x01, 0x0A, 0x09] + Array("http://x/".utf8) + [0x01 &+ 0x0A &+ 0x09 &+ Array("http://x/".utf8).reduce(0, &+)])
        #expect(ImprovFrame.result(0x04, strings: []).bytes == [0x04, 0x00, 0x04])
    }

    @Test func framesArriveWholeOrInPieces() {
        var a = ImprovFrameAssembler()
        let frame = ImprovFrame(command: 0x03, data: []).bytes
        #expect(a.push(Array(frame.prefix(1))) == [])
        #expect(a.push(Array(frame.dropFirst())) == [.frame(ImprovFrame(command: 0x03, data: []))])
        var bad = frame
        bad[2] ^= 0xFF
        #expect(a.push(bad + frame) == [.invalid, .frame(ImprovFrame(command: 0x03, data: []))])
        #expect(a.buffer.isEmpty)
    }

    static let caps = S.Capabilities(identify: false, scan: true)
    static let wifi = ImprovFrameAssembler.Output.frame(ImprovFrame(command: 0x01, data: [0x01, 0x41, 0x01, 0x42]))

    @Test func authorizationThenProvisioning() {
        var s = S(capabilities: Self.caps, authorizationTimeout: .seconds(60))
        #expect(s.state == .authorizationRequired && s.serviceData == [0x01, 0x06, 0, 0, 0, 0])
        #expect(s.received(Self.wifi, now: .zero) == [.error(.notAuthorized)])
        #expect(s.authorize(now: .seconds(1)) == [.state(.authorized), .wake(at: .seconds(61))])
        #expect(s.received(Self.wifi, now: .seconds(2)) == [.error(.none), .state(.provisioning), .connect(ssid: "A", password: "B")])
        #expect(s.authorizationExpired(now: .seconds(61)) == [])  // provisioning: no expiry
        #expect(s.connectFinished(connected: true, redirectURL: "u", now: .seconds(3)) == [.state(.provisioned), .result(.result(0x01, strings: ["u"]))])
        #expect(s.serviceData.first == 0x04)
    }

    @Test func aFailedConnectionStartsTheAuthorizationOver() {
        var s = S(capabilities: Self.caps, authorizationTimeout: .seconds(60))
        _ = s.authorize(now: .zero)
        _ = s.received(Self.wifi, now: .seconds(10))
        #expect(s.connectFinished(connected: false, redirectURL: nil, now: .seconds(20)) == [.error(.unableToConnect), .state(.authorized), .wake(at: .seconds(80))])
        #expect(s.authorizationExpired(now: .seconds(79)) == [])
        #expect(s.authorizationExpired(now: .seconds(80)) == [.state(.authorizationRequired)])
    }

    @Test func withoutAuthorizationItStartsAuthorized() {
        var s = S(capabilities: Self.caps, authorizationTimeout: nil)
        #expect(s.state == .authorized)
        #expect(s.authorize(now: .zero) == [])
        #expect(s.connectFinished(connected: false, redirectURL: nil, now: .zero) == [])  // not provisioning
    }

    @Test func errors() {
        var s = S(capabilities: Self.caps, authorizationTimeout: nil)
        #expect(s.received(.invalid, now: .zero) == [.error(.invalidRPC)])
        #expect(s.received(.frame(ImprovFrame(command: 0x09, data: [])), now: .zero) == [.error(.unknownCommand)])
        #expect(s.received(.frame(ImprovFrame(command: 0x02, data: [])), now: .zero) == [.error(.unknownCommand)])  // no identify
        #expect(s.received(.frame(ImprovFrame(command: 0x03, data: [1])), now: .zero) == [.error(.invalidRPC)])
        #expect(s.received(.frame(ImprovFrame(command: 0x04, data: [])), now: .zero) == [.error(.none), .scan])
        #expect(s.received(.frame(ImprovFrame(command: 0x04, data: [])), now: .zero) == [])  // one scan at a time
        #expect(s.scanFinished([("Home", -48, "WPA2")]) == [.result(.result(0x04, strings: ["Home", "-48", "WPA2"]))])
    }

    @Test func nmcliScanOutput() {
        let out = Array("Home\\:5G:70:WPA2\n:40:WPA2\nCafe:20:\nOld:90:WPA1 WPA2\n".utf8)
        let networks = ImprovWiFiBackend.parseNmcli(out)
        #expect(networks.map(\.ssid) == ["Home:5G", "Cafe", "Old"])
        #expect(networks.map(\.rssi) == [-65, -90, -55])
        #expect(networks.map(\.auth) == ["WPA2", "NO", "WPA/WPA2"])
        #expect(ImprovWiFiBackend.parseScanLines(Array("{\"ssid\":\"A\",\"rssi\":-50,\"auth\":\"WPA3\"}\nnot json\n".utf8)).map(\.ssid) == ["A"])
        #expect(ImprovWiFiBackend.address("192.0.2.7") == "192.0.2.7" && ImprovWiFiBackend.address("ok") == nil)
    }

    @Test func theAdvertisingRule() throws {
        func sets(_ advertising: String) throws -> [AdvertisingSet] {
            try ConfigLoader.load(data: Array(#"{"name": "Gateway", \#(advertising)}"#.utf8)).gatt.allAdvertisingSets()
        }
        let options = ImprovWiFiOptions(serviceID: "improv", stateID: "s", errorID: "e", rpcCommandID: "c", rpcResultID: "r", capabilitiesID: "k")
        let full = #""advertising": {"service_uuids": ["00467768-6228-2272-4663-277478268000"], "service_data": [{"uuid": "4677", "data": {"hex": "010000000000"}}]}"#
        #expect(ImprovAdvertising.problem(options, sets: try sets(full))?.contains("service data 4677") == true)  // the name pushes it out
        var own = options
        own.advertisingSet = "improv"
        let set = #""advertising_sets": [{"id": "improv", "service_uuids": ["00467768-6228-2272-4663-277478268000"], "service_data": [{"uuid": "4677", "data": {"hex": "010000000000"}}]}]"#
        #expect(ImprovAdvertising.problem(own, sets: try sets(set)) == nil)
        #expect(ImprovAdvertising.problem(own, sets: try sets(#""advertising": {}"#))?.hasPrefix("advertising set \"improv\"") == true)
    }
}
