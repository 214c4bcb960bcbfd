import Testing

@testable import GattCore

/// What a controller is and can do, in words (Core Spec Vol 6 Part B §4.6; Assigned Numbers).
@Suite struct ControllerInfoTests {
    @Test func featureNamesFollowTheBits() {
        let f = LEFeatures(rawValue: 1 << 0 | 1 << 5 | 1 << 8 | 1 << 11 | 1 << 12 | 1 << 33 | 1 << 34 | 1 << 63)
        #expect(f.featureNames == [
            "LE Encryption", "Data Length Extension", "LE 2M PHY", "LE Coded PHY", "Extended Advertising", "LE Power Control Request", "bit 63",
        ])
        #expect(LEFeatures(rawValue: 1 << 34).featureNames == ["LE Power Control Request"])
        #expect(LEFeatures().featureNames.isEmpty)
        #expect(LEFeatures.names.map(\.bit) == Array(0...47))
    }

    @Test func versionNumbersAndCompanies() {
        #expect(HCILocalVersionInformation.coreVersion(6) == "4.0")
        #expect(HCILocalVersionInformation.coreVersion(11) == "5.2")
        #expect(HCILocalVersionInformation.coreVersion(14) == "6.0")
        #expect(HCILocalVersionInformation.coreVersion(99) == "unknown (99)")
        let v = HCILocalVersionInformation(hciVersion: 9, hciSubversion: 0x1A2B, lmpVersion: 9, companyIdentifier: 0x0059, lmpSubversion: 0x3)
        #expect(v.manufacturer == "Nordic Semiconductor")
        #expect(v.summary == "Bluetooth 5.0 (HCI 9 rev 0x1a2b, LMP 9 rev 0x0003), Nordic Semiconductor")
        #expect(HCILocalVersionInformation(hciVersion: 9, hciSubversion: 0, lmpVersion: 9, companyIdentifier: 0x0ABC, lmpSubversion: 0).manufacturer == "company 0x0ABC")
    }

    @Test func theHostsLimitsFollowItsAdvertisingCommands() {
        var c = ControllerInfo()
        #expect(c.limits == .legacy && c.limits.setsTakeTurns && c.limits.numberOfSets == nil)
        c.advertisingCommands = .extended(sets: 4, maximumDataLength: 1650)
        #expect(c.limits == AdvertisingLimits(numberOfSets: 4, maximumDataLength: 1650, extendedPDUs: true))
        #expect(!c.limits.setsTakeTurns)
        c.address = BluetoothAddress("C0:FF:EE:00:00:01")!
        c.leFeatures = [.encryption, .extendedAdvertising]
        c.aclDataPacketLength = 251
        c.totalACLDataPackets = 4
        #expect(c.summary == "C0:FF:EE:00:00:01: unknown version; LE features: LE Encryption, Extended Advertising; LE ACL 251 bytes x 4; "
            + "extended advertising (4 sets, 1650 bytes of data per set)")
    }
}
