import GattCore
import Testing

@testable import GattHost
@testable import GattTransport

/// `H4Host`, the H4 transports' sans-I/O half: what the daemon set below the seam survives a
/// controller reset (a new link gets a fresh `Host` with it), and a closed link leaves a host
/// with nothing to do.
@Suite struct H4HostTests {
    static let bond = Bond(
        address: BluetoothAddress("C0:00:00:00:00:01")!, addressType: .random, longTermKey: [UInt8](repeating: 0x5A, count: 16),
        keySize: 16, authenticated: false, secureConnections: true)
    static let irk = [UInt8](repeating: 0x11, count: 16)
    static let server = L2CAPChannelServer(id: "echo", psm: 0x0081)

    static func configured() throws -> H4Host {
        var h = H4Host(configuration: GattConfiguration(name: "h4"))
        h.setBonds([Self.bond])
        h.setLocalIRK(Self.irk)
        h.setL2CAPChannelServers([Self.server])
        h.setEnhancedATT(true)
        return h
    }

    @Test func whatWasSetBelowTheSeamSurvivesAControllerReset() throws {
        var h = try Self.configured()
        for link in 1...2 {
            let out = h.start(now: .seconds(link))
            // Bring-up begins with HCI_Reset, on a fresh host.
            #expect(out.first == .send(H4Packet(command: .reset)))
            #expect(h.host.phase == .bringingUp(buffersKnown: false))
            #expect(h.host.bonds == [Self.bond])
            #expect(h.host.configuration.localIRK == Self.irk)
            #expect(h.host.channels.servers == [Self.server])
            #expect(h.host.channels.enhancedATT)
        }
    }

    @Test func aReloadKeepsTheIRKAndAClosedLinkLeavesAHostWithNothingToDo() throws {
        var h = try Self.configured()
        _ = h.start(now: .zero)
        #expect(h.host.nextDeadline != nil)  // HCI_Reset waits for its answer
        _ = h.configure(GattConfiguration(name: "renamed"), now: .zero)
        #expect(h.host.configuration.deviceName == "renamed")
        #expect(h.host.configuration.localIRK == Self.irk)
        h.idle()
        #expect(h.host.nextDeadline == nil)
        #expect(h.host.bonds == [Self.bond])
        _ = h.start(now: .seconds(1))
        #expect(h.host.configuration.deviceName == "renamed")
    }
}
