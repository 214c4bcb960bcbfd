import GattCore
import Testing

@testable import GattTransport

/// The kernel transport's mgmt key codecs (BlueZ doc/mgmt-api.txt; the command vectors are
/// tools/mgmt-tester.c's), the Bond ↔ mgmt mapping and the merge of a pairing's key events.
@Suite("Kernel bonds: mgmt keys, mapping, merge")
struct KernelBondTests {
    /// 00:01:02:03:04:05 little-endian on the wire = 05:04:03:02:01:00.
    static let testerPeer = KernelBDAddress(BluetoothAddress("05:04:03:02:01:00")!, type: .lePublic)
    static let central = KernelBDAddress(BluetoothAddress("00:AA:01:01:00:01")!, type: .lePublic)
    static let centralLE: [UInt8] = [0x01, 0x00, 0x01, 0x01, 0xAA, 0x00]
    static let key = Array(UInt8(0x01)...UInt8(0x10))

    /// An mgmt event packet: code, index 0, length, parameters.
    static func event(_ code: UInt16, _ parameters: [UInt8]) -> [UInt8] {
        [UInt8(code & 0xFF), UInt8(code >> 8), 0, 0, UInt8(parameters.count), 0] + parameters
    }

    // MARK: - Commands (mgmt-tester.c vectors)

    @Test func loadLongTermKeysMatchesMgmtTester() {
        // load_ltks_valid_param_1 and _2: no keys; one all-zero unauthenticated key, master 0.
        #expect(KernelKeyCommands.loadLongTermKeys([]) == [0x00, 0x00])
        let key = KernelLongTermKey(
            peer: Self.testerPeer, type: .unauthenticatedLegacy, central: false, encryptionSize: 0, ediv: 0, rand: 0,
            value: [UInt8](repeating: 0, count: 16))
        let expected: [UInt8] = [0x01, 0x00, 0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00]
            + [UInt8](repeating: 0, count: 8 + 16)
        #expect(KernelKeyCommands.loadLongTermKeys([key]) == expected)
        #expect(key.encoded.count == KernelLongTermKey.size)
    }

    @Test func loadIdentityResolvingKeysMatchesMgmtTester() {
        // load_irks_one_irk.
        let irk = KernelIdentityResolvingKey(peer: Self.testerPeer, value: [1, 2, 3, 4, 5, 6, 7, 8, 1, 2, 3, 4, 5, 6, 7, 8])
        #expect(
            KernelKeyCommands.loadIdentityResolvingKeys([irk])
                == [0x01, 0x00, 0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x01, 1, 2, 3, 4, 5, 6, 7, 8, 1, 2, 3, 4, 5, 6, 7, 8])
        #expect(KernelKeyCommands.loadIdentityResolvingKeys([]) == [0x00, 0x00])  // load_irks_empty_list
    }

    @Test func unpairDeviceMatchesMgmtTester() {
        // unpair_device_param: 01:02:03:04:05:06 (wire order), BR/EDR, Disconnect 0.
        let peer = KernelBDAddress(BluetoothAddress("06:05:04:03:02:01")!, type: .bredr)
        #expect(KernelKeyCommands.unpairDevice(peer, disconnect: false) == [0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x00, 0x00])
        #expect(KernelKeyCommands.unpairDevice(Self.central, disconnect: true) == Self.centralLE + [0x01, 0x01])
        #expect(KernelManagement.packet(.unpairDevice, index: 0, parameters: []).prefix(2) == [0x1B, 0x00])
    }

    @Test func repliesToPrompts() {
        // User Passkey Reply (0x001E): address, type, passkey 123456 = 0x0001E240 little-endian.
        #expect(
            KernelManagement.packet(.userPasskeyReply, index: 0, parameters: KernelKeyCommands.userPasskeyReply(Self.central, passkey: 123_456))
                == [0x1E, 0x00, 0x00, 0x00, 0x0B, 0x00] + Self.centralLE + [0x01, 0x40, 0xE2, 0x01, 0x00])
        #expect(KernelManagement.Opcode.userConfirmationNegativeReply.rawValue == 0x001D)
        #expect(KernelManagement.Opcode.userPasskeyNegativeReply.rawValue == 0x001F)
        #expect(KernelManagement.Opcode.setIOCapability.rawValue == 0x0018)
        #expect(KernelManagement.Opcode.setSecureConnections.rawValue == 0x002D)
    }

    @Test func loadConnectionParameters() {
        let entry = KernelConnectionParameters(
            peer: Self.central, parameters: LEConnectionParameters(intervalMin: 0x18, intervalMax: 0x28, latency: 0, supervisionTimeout: 0x1F4))
        #expect(
            KernelKeyCommands.loadConnectionParameters([entry])
                == [0x01, 0x00] + Self.centralLE + [0x01, 0x18, 0x00, 0x28, 0x00, 0x00, 0x00, 0xF4, 0x01])
    }

    /// One command carries 28 LTKs in a 1028-octet packet (HCI_MAX_FRAME_SIZE), 1820 in 65535.
    @Test func keysPerCommand() {
        #expect(KernelKeyCommands.capacity(recordSize: KernelLongTermKey.size, packetLimit: 1028) == 28)
        #expect(KernelKeyCommands.capacity(recordSize: KernelLongTermKey.size, packetLimit: 65535) == 1820)
    }

    // MARK: - Events

    static let scLTK = event(0x000A, [0x01] + centralLE + [0x01, 0x03, 0x00, 0x10, 0x00, 0x00] + [UInt8](repeating: 0, count: 8) + key)

    @Test func newLongTermKey() {
        let e = KernelManagementEvent(packet: Self.scLTK, index: 0)
        let expected = KernelLongTermKey(peer: Self.central, type: .authenticatedP256, central: false, encryptionSize: 16, ediv: 0, rand: 0, value: Self.key)
        #expect(e == .newLongTermKey(expected, store: true))
        // Legacy, central 1, EDIV 0x1234, Rand 0x0807060504030201, store hint 0.
        let legacy = Self.event(0x000A, [0x00] + Self.centralLE + [0x01, 0x00, 0x01, 0x07, 0x34, 0x12, 1, 2, 3, 4, 5, 6, 7, 8] + Self.key)
        guard case .newLongTermKey(let k, let store)? = KernelManagementEvent(packet: legacy, index: 0) else {
            Issue.record("not parsed")
            return
        }
        #expect(!store && k.central && k.type == .unauthenticatedLegacy && k.encryptionSize == 7)
        #expect(k.ediv == 0x1234 && k.rand == 0x0807_0605_0403_0201)
        // Unknown key type 0x05 or a short event: nothing.
        var unknown = Self.scLTK
        unknown[6 + 8] = 0x05
        #expect(KernelManagementEvent(packet: unknown, index: 0) == nil)
        #expect(KernelManagementEvent(packet: Array(Self.scLTK.dropLast()), index: 0) == nil)
        #expect(KernelManagementEvent(packet: Self.scLTK, index: 1) == nil)
    }

    static let rpa = BluetoothAddress("5A:11:22:33:44:55")!
    static let newIRK = event(0x0018, [0x01] + rpa.littleEndianBytes + centralLE + [0x01] + key.reversed())
    static let remoteCSRK = event(0x0019, [0x01] + centralLE + [0x01, 0x01] + [UInt8](repeating: 0xC1, count: 16))
    static let localCSRK = event(0x0019, [0x01] + centralLE + [0x01, 0x00] + [UInt8](repeating: 0xC0, count: 16))

    @Test func newIdentityResolvingKeyAndCSRK() {
        let irk = KernelIdentityResolvingKey(peer: Self.central, value: Self.key.reversed())
        #expect(KernelManagementEvent(packet: Self.newIRK, index: 0) == .newIdentityResolvingKey(irk, resolvablePrivateAddress: Self.rpa, store: true))
        // Random_Address 00:00:00:00:00:00: the central paired with its identity address.
        let noRPA = Self.event(0x0018, [0x01] + [0, 0, 0, 0, 0, 0] + Self.centralLE + [0x01] + Self.key)
        guard case .newIdentityResolvingKey(_, let rpa, _)? = KernelManagementEvent(packet: noRPA, index: 0) else {
            Issue.record("not parsed")
            return
        }
        #expect(rpa == nil)
        guard case .newSignatureResolvingKey(let csrk, true)? = KernelManagementEvent(packet: Self.remoteCSRK, index: 0) else {
            Issue.record("not parsed")
            return
        }
        #expect(csrk.isRemote && csrk.peer == Self.central && csrk.value == [UInt8](repeating: 0xC1, count: 16))
    }

    @Test func promptsAndOtherEvents() {
        let peer = Self.central
        // User Confirmation Request, Confirm_Hint 0 (numeric comparison), value 123456.
        #expect(
            KernelManagementEvent(packet: Self.event(0x000F, Self.centralLE + [0x01, 0x00, 0x40, 0xE2, 0x01, 0x00]), index: 0)
                == .userConfirmationRequest(peer, justWorks: false, value: 123_456))
        #expect(KernelManagementEvent(packet: Self.event(0x0010, Self.centralLE + [0x01]), index: 0) == .userPasskeyRequest(peer))
        #expect(
            KernelManagementEvent(packet: Self.event(0x0017, Self.centralLE + [0x01, 0x3F, 0x42, 0x0F, 0x00, 0x00]), index: 0)
                == .passkeyNotify(peer, passkey: 999_999, entered: 0))
        #expect(KernelManagementEvent(packet: Self.event(0x0011, Self.centralLE + [0x01, 0x05]), index: 0) == .authenticationFailed(peer, status: 5))
        let parameters = LEConnectionParameters(intervalMin: 0x18, intervalMax: 0x28, latency: 0, supervisionTimeout: 0x1F4)
        #expect(
            KernelManagementEvent(packet: Self.event(0x001C, [0x00] + Self.centralLE + [0x01, 0x18, 0x00, 0x28, 0x00, 0x00, 0x00, 0xF4, 0x01]), index: 0)
                == .newConnectionParameter(KernelConnectionParameters(peer: peer, parameters: parameters), store: false))
        // An address type mgmt does not define, and Command Complete (0x0001): not these events.
        #expect(KernelManagementEvent(packet: Self.event(0x0010, Self.centralLE + [0x07]), index: 0) == nil)
        #expect(KernelManagementEvent(packet: Self.event(0x0001, [0x1C, 0x00, 0x00] + Self.centralLE + [0x01]), index: 0) == nil)
    }

    // MARK: - Mapping

    @Test func bondFromASecureConnectionsKeyAndBack() throws {
        guard case .newLongTermKey(let key, _)? = KernelManagementEvent(packet: Self.scLTK, index: 0) else {
            Issue.record("not parsed")
            return
        }
        let bond = KernelBondMapping.bond(peer: key.peer, key: key, hasPeripheralKey: true, irk: nil, peerCSRK: nil, localCSRK: nil)
        #expect(bond.address == Self.central.address && bond.addressType == .public)
        #expect(bond.longTermKey == Self.key && bond.ediv == 0 && bond.rand == 0 && bond.keySize == 16)
        #expect(bond.authenticated && bond.secureConnections)
        #expect(KernelBondMapping.longTermKey(for: bond) == key, "loads back as the key the kernel reported")
    }

    @Test func legacyKeyShortenedAndTypes() throws {
        let key = KernelLongTermKey(
            peer: KernelBDAddress(BluetoothAddress("C0:00:00:00:00:02")!, type: .leRandom), type: .unauthenticatedLegacy, central: false,
            encryptionSize: 7, ediv: 0xBEEF, rand: 42, value: Self.key)
        let bond = KernelBondMapping.bond(peer: key.peer, key: key, hasPeripheralKey: true, irk: nil, peerCSRK: nil, localCSRK: nil)
        #expect(bond.longTermKey == Array(Self.key.prefix(7)) + [UInt8](repeating: 0, count: 9), "octets past the key size are zero")
        #expect(bond.addressType == .random && bond.ediv == 0xBEEF && bond.rand == 42 && !bond.authenticated && !bond.secureConnections)
        let back = try #require(KernelBondMapping.longTermKey(for: bond))
        #expect(back.type == .unauthenticatedLegacy && back.peer == key.peer && !back.central && back.encryptionSize == 7)
        #expect(back.ediv == 0xBEEF && back.rand == 42)
        // An H4 bond with an identity address type loads with the LE random type.
        var h4 = bond
        h4.addressType = .randomIdentity
        h4.authenticated = true
        #expect(KernelBondMapping.longTermKey(for: h4)?.peer.type == .leRandom)
        #expect(KernelBondMapping.longTermKey(for: h4)?.type == .authenticatedLegacy)
    }

    /// The kernel refuses a whole Load command for one non-identity address: such bonds stay out.
    @Test func keySetLeavesOutNonIdentityAddresses() {
        let sc = Bond(
            address: Self.central.address, addressType: .public, longTermKey: Self.key, keySize: 16, authenticated: false, secureConnections: true,
            peerIRK: Self.key)
        let rpaBond = Bond(address: Self.rpa, addressType: .random, longTermKey: Self.key, keySize: 16, authenticated: false, secureConnections: true)
        let noKey = Bond(
            address: BluetoothAddress("C0:00:00:00:00:03")!, addressType: .random, longTermKey: nil, keySize: 16, authenticated: false,
            secureConnections: false, peerIRK: Self.key)
        let set = KernelBondMapping.keys(for: [sc, rpaBond, noKey])
        #expect(set.skipped == [Self.rpa])
        #expect(set.longTermKeys.map(\.peer.address) == [Self.central.address])
        #expect(set.identityResolvingKeys.map(\.peer.address) == [Self.central.address, noKey.address])
        var reordered = KernelBondMapping.keys(for: [noKey, sc])
        #expect(reordered.holdsSameKeys(as: set))
        reordered.remove(Self.central)
        #expect(!reordered.holdsSameKeys(as: set))
        reordered.add(sc)
        #expect(reordered.holdsSameKeys(as: set))
    }

    // MARK: - Merge

    /// IRK (with the RPA), CSRKs, then the P-256 LTK: one bond with all of them.
    @Test func secureConnectionsPairingMergesIntoOneBond() throws {
        var assembler = KernelBondAssembler()
        for packet in [Self.newIRK, Self.remoteCSRK, Self.localCSRK] {
            let event = try #require(KernelManagementEvent(packet: packet, index: 0))
            #expect(assembler.add(event) == nil)
        }
        let ltk = try #require(KernelManagementEvent(packet: Self.scLTK, index: 0))
        let first = assembler.add(ltk)
        let done = try #require(first)
        #expect(done.bonded)
        #expect(done.resolvablePrivateAddress == Self.rpa)
        #expect(done.bond.address == Self.central.address)
        #expect(done.bond.peerIRK == Self.key.reversed())
        #expect(done.bond.peerCSRK == [UInt8](repeating: 0xC1, count: 16))
        #expect(done.bond.localCSRK == [UInt8](repeating: 0xC0, count: 16))
        #expect(done.bond.longTermKey == Self.key && done.bond.secureConnections && done.bond.authenticated)
        // The next pairing of that central starts from nothing.
        let second = assembler.add(ltk)
        let again = try #require(second)
        #expect(again.bond.peerIRK == nil && again.resolvablePrivateAddress == nil)
    }

    static func legacyLTK(central: Bool, store: Bool = true, ediv: UInt16, value: UInt8) -> KernelManagementEvent {
        .newLongTermKey(
            KernelLongTermKey(
                peer: Self.central, type: .unauthenticatedLegacy, central: central, encryptionSize: 16, ediv: ediv,
                rand: UInt64(ediv), value: [UInt8](repeating: value, count: 16)), store: store)
    }

    /// Legacy: the central's key (Central = 1) first, then ours, which the bond keeps.
    @Test func legacyPairingKeepsThePeripheralsKey() throws {
        var assembler = KernelBondAssembler()
        #expect(assembler.add(Self.legacyLTK(central: true, ediv: 1, value: 0xCC)) == nil)
        let completed = assembler.add(Self.legacyLTK(central: false, ediv: 2, value: 0xDD))
        let done = try #require(completed)
        #expect(done.bond.longTermKey == [UInt8](repeating: 0xDD, count: 16) && done.bond.ediv == 2 && done.bond.rand == 2)
        #expect(!done.bond.secureConnections)
        #expect(assembler.finish(Self.central) == nil, "already complete")
    }

    /// Legacy without our key: finish gives a bond without LTK; store hint 0 is not bonded.
    @Test func legacyPairingWithoutOurKey() throws {
        var assembler = KernelBondAssembler()
        #expect(assembler.add(Self.legacyLTK(central: true, store: false, ediv: 1, value: 0xCC)) == nil)
        let finished = assembler.finish(Self.central)
        let done = try #require(finished)
        #expect(done.bond.longTermKey == nil && done.bond.ediv == 0 && !done.bonded)
        #expect(assembler.finish(Self.central) == nil)
    }

    /// Debug keys: the kernel never reloads them, so they are not bonded.
    @Test func debugKeyIsNotBonded() throws {
        var debug = Self.scLTK
        debug[6 + 8] = 0x04
        var assembler = KernelBondAssembler()
        let event = try #require(KernelManagementEvent(packet: debug, index: 0))
        let completed = assembler.add(event)
        let done = try #require(completed)
        #expect(!done.bonded && done.bond.secureConnections && !done.bond.authenticated)
    }
}
