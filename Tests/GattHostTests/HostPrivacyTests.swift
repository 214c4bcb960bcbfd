import Testing
@testable import GattCore
@testable import GattHost
import GattTestFixtures

/// Our privacy on the H4 path (Core Spec Vol 6 Part B §1.3.2.2): resolvable private
/// addresses made with our IRK, renewed every `rpa_timeout_s` with advertising paused
/// around LE Set Random Address (Vol 4 Part E §7.8.4); the identity we distribute.
@Suite struct HostPrivacyTests {
    static let irk: [UInt8] = Array(0x10...0x1F)

    static func rpaConfiguration(timeout: Duration = .seconds(60)) -> HostConfiguration {
        var c = HostConfiguration.test()
        c.advertising.ownAddressType = .rpa
        c.advertising.rpaTimeout = timeout
        c.localIRK = irk
        return c
    }

    /// The addresses of the LE Set Random Address commands sent.
    static func randomAddresses(_ h: HostHarness) -> [BluetoothAddress] {
        h.sent.compactMap { p in
            guard let (op, params) = FakeController.parse(p), op == .leSetRandomAddress, params.count == 6 else { return nil }
            return BluetoothAddress(littleEndian: params[0..<6])
        }
    }

    @Test func privateAddressesResolveWithTheirIRKOnly() {
        var rng = SystemRandomNumberGenerator()
        for _ in 0..<50 {
            let a = ResolvablePrivateAddress.make(irk: Self.irk, using: &rng)
            #expect(a.bytes[0] & 0xC0 == 0x40, "the two most significant bits are 0b01")
            #expect(ResolvablePrivateAddress.resolves(a, irk: Self.irk))
            #expect(!ResolvablePrivateAddress.resolves(a, irk: Array(0x20...0x2F)))
            let bond = Bond(address: .zero, addressType: .random, longTermKey: nil, keySize: 16, authenticated: false, secureConnections: true, peerIRK: Self.irk)
            #expect(bond.resolves(a), "the same rule a central applies with our IRK")
        }
    }

    @Test func bringUpAdvertisesWithAPrivateAddressAndRenewsItWhileAdvertising() {
        var c = FakeController()
        c.leFeatures = []
        var h = HostHarness(configuration: Self.rpaConfiguration(), controller: c)
        h.start()
        #expect(h.host.isAdvertising)
        let first = Self.randomAddresses(h)
        #expect(first.count == 1)
        #expect(h.host.advertisedAddress == first.first)
        #expect(first.allSatisfy { ResolvablePrivateAddress.resolves($0, irk: Self.irk) })
        #expect(h.payloads.parameters.ownAddressType == .random)
        #expect(h.host.nextDeadline == .seconds(60))
        h.clearLogs()

        h.advance(to: .seconds(59))
        #expect(h.sent.isEmpty, "not due yet")
        h.advance(to: .seconds(60))
        #expect(h.sentOpcodes == [.leSetAdvertisingEnable, .leSetRandomAddress, .leSetAdvertisingEnable], "paused around the new address")
        let second = Self.randomAddresses(h)
        #expect(second.count == 1 && second != first)
        #expect(ResolvablePrivateAddress.resolves(second[0], irk: Self.irk))
        #expect(h.host.isAdvertising)
        #expect(!h.events.contains { if case .advertisingChanged = $0 { true } else { false } }, "nothing to report: it advertises on")
        #expect(h.violations.isEmpty)
    }

    @Test func renewalWhileConnectedNeedsNoPause() {
        var c = FakeController()
        c.leFeatures = []
        var config = Self.rpaConfiguration()
        config.advertising.maxConnections = 1
        var h = HostHarness(configuration: config, controller: c)
        h.start()
        h.connect(0x40)
        h.clearLogs()
        h.advance(to: .seconds(60))
        #expect(h.sentOpcodes == [.leSetRandomAddress])
    }

    @Test func theIdentityDistributedIsTheStaticAddressNeverThePrivateOne() {
        var h = HostHarness(configuration: Self.rpaConfiguration())
        h.start()
        let identity = h.host.host.localIdentity(irk: Self.irk)
        #expect(identity.address == h.host.randomAddress && identity.addressType == .random)
        #expect(identity.address.bytes[0] & 0xC0 == 0xC0, "a static random address")
        var p = HostHarness(configuration: .test())
        p.start()
        #expect(p.host.host.localIdentity(irk: Self.irk).addressType == .public)
    }
}
