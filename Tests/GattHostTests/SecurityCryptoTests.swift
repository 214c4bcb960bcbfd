import Testing
@testable import GattCore
@testable import GattHost
import GattTestFixtures

/// The toolbox against the Core Specification's sample data (Vol 3 Part H
/// §2.2.2–§2.2.4 and Appendix D), every value printed MSB first by the spec
/// and turned into air order with `spec(_:)`.
@Suite struct SecurityCryptoTests {
    @Test func eIsAES128() {
        // FIPS-197 Appendix C.1.
        let key = spec("00010203 04050607 08090a0b 0c0d0e0f")
        let plaintext = spec("00112233 44556677 8899aabb ccddeeff")
        #expect(SMPCrypto.e(key: key, plaintext: plaintext) == spec("69c4e0d8 6a7b0430 d8cdb780 70b4c55a"))
        #expect(SMPCrypto.e(key: [1, 2], plaintext: plaintext) == [UInt8](repeating: 0, count: 16))
    }

    @Test func aesCMACRFC4493() {
        let k = h("2b7e1516 28aed2a6 abf71588 09cf4f3c")
        #expect(AESCMAC.mac(key: k, message: []) == h("bb1d6929 e9593728 7fa37d12 9b756746"))
        #expect(AESCMAC.mac(key: k, message: h("6bc1bee2 2e409f96 e93d7e11 7393172a")) == h("070a16b4 6b4d4144 f79bdd9d d04a287c"))
    }

    @Test func ahSample() {
        // §2.2.2 / Appendix D.7: IRK, prand 0x708194 → hash 0x0dfbaa.
        let irk = spec("ec0234a3 57c8ad05 341010a6 0a397d9b")
        #expect(SMPCrypto.ah(irk: irk, prand: spec("708194")) == spec("0dfbaa"))
        #expect(SMPCrypto.ah(irk: irk, prand: spec("708195")) != spec("0dfbaa"))
    }

    @Test func c1Sample() {
        // §2.2.3: TK 0, r, preq = 0x07071000000101, pres = 0x05000800000302,
        // initiator random A1A2A3A4A5A6, responder public B1B2B3B4B5B6.
        let result = SMPCrypto.c1(
            k: [UInt8](repeating: 0, count: 16), r: spec("5783D521 56AD6F0E 6388274E C6702EE0"),
            preq: spec("07071000000101"), pres: spec("05000800000302"),
            iat: 1, ia: BluetoothAddress("A1:A2:A3:A4:A5:A6")!, rat: 0, ra: BluetoothAddress("B1:B2:B3:B4:B5:B6")!)
        #expect(result == spec("1e1e3fef 878988ea d2a74dc5 bef13b86"))
    }

    @Test func s1Sample() {
        // §2.2.4: r1 = 0x000F0E0D0C0B0A091122334455667788, r2 = 0x010203040506070899AABBCCDDEEFF00.
        let stk = SMPCrypto.s1(
            k: [UInt8](repeating: 0, count: 16), r1: spec("000F0E0D 0C0B0A09 11223344 55667788"),
            r2: spec("01020304 05060708 99AABBCC DDEEFF00"))
        #expect(stk == spec("9a1fe1f0 e8b0f49b 5b4216ae 796da062"))
    }

    @Test func f4Sample() {
        // Appendix D.2.
        let u = spec("20b003d2 f297be2c 5e2c83a7 e9f9a5b9 eff49111 acf4fddb cc030148 0e359de6")
        let v = spec("55188b3d 32f6bb9a 900afcfb eed4e72a 59cb9ac2 f19d7cfb 6b4fdd49 f47fc5fd")
        let x = spec("d5cb8454 d177733e ffffb2ec 712baeab")
        #expect(SMPCrypto.f4(u: u, v: v, x: x, z: 0) == spec("f2c916f1 07a9bd1c f1eda1be a974872d"))
        #expect(SMPCrypto.f4(u: u, v: v, x: x, z: 0x80) != spec("f2c916f1 07a9bd1c f1eda1be a974872d"))
    }

    @Test func f5Sample() {
        // Appendix D.3.
        let (macKey, ltk) = SMPCrypto.f5(
            w: SpecKeys.dhKey, n1: spec("d5cb8454 d177733e ffffb2ec 712baeab"), n2: spec("a6e8e7cc 25a75f6e 216583f7 ff3dc4cf"),
            a1: spec("00561237 37bfce"), a2: spec("00a71370 2dcfc1"))
        #expect(macKey == spec("2965f176 a1084a02 fd3f6a20 ce636e20"))
        #expect(ltk == spec("69867911 69d7cd23 980522b5 94750a38"))
    }

    @Test func f6Sample() {
        // Appendix D.4.
        let check = SMPCrypto.f6(
            w: spec("2965f176 a1084a02 fd3f6a20 ce636e20"), n1: spec("d5cb8454 d177733e ffffb2ec 712baeab"),
            n2: spec("a6e8e7cc 25a75f6e 216583f7 ff3dc4cf"), r: spec("12a3343b b453bb54 08da42d2 0c2d0fc8"),
            ioCap: spec("010102"), a1: spec("00561237 37bfce"), a2: spec("00a71370 2dcfc1"))
        #expect(check == spec("e3c47398 9cd0e8c5 d26c0b09 da958f61"))
    }

    @Test func g2Sample() {
        // Appendix D.5: g2 = 0x2f9ed5ba; the user sees it modulo 10^6.
        let value = SMPCrypto.g2(
            u: spec("20b003d2 f297be2c 5e2c83a7 e9f9a5b9 eff49111 acf4fddb cc030148 0e359de6"),
            v: spec("55188b3d 32f6bb9a 900afcfb eed4e72a 59cb9ac2 f19d7cfb 6b4fdd49 f47fc5fd"),
            x: spec("d5cb8454 d177733e ffffb2ec 712baeab"), y: spec("a6e8e7cc 25a75f6e 216583f7 ff3dc4cf"))
        #expect(value == 0x2F9E_D5BA)
    }

    @Test func h6AndH7Samples() {
        // Appendix D.8 (h6, keyID "lebr") and D.9 (h7, SALT "tmp1").
        let w = spec("ec0234a3 57c8ad05 341010a6 0a397d9b")
        #expect(SMPCrypto.h6(w: w, keyID: 0x6C65_6272) == spec("2d9ae102 e76dc91c e8d3a9e2 80b16399"))
        #expect(SMPCrypto.h7(salt: spec("00000000 00000000 00000000 746D7031"), w: w) == spec("fb173597 c6a3c0ec d2998c2a 75a57011"))
    }

    @Test func ecdhSampleKeys() throws {
        // Appendix D.1 / §2.3.5.6.1: both sides derive the same DHKey.
        let a = try #require(SMPKeyPair(privateKeyMSBFirst: SpecKeys.privateA))
        let b = try #require(SMPKeyPair(privateKeyMSBFirst: SpecKeys.privateB))
        #expect(a.publicKey.x == SpecKeys.publicAx && a.publicKey.y == SpecKeys.publicAy)
        #expect(b.publicKey.x == SpecKeys.publicBx && b.publicKey.y == SpecKeys.publicBy)
        let pkb = try #require(SMPPublicKey(air: SpecKeys.publicBx + SpecKeys.publicBy))
        let pka = try #require(SMPPublicKey(air: SpecKeys.publicAx + SpecKeys.publicAy))
        #expect(a.dhKey(with: pkb) == SpecKeys.dhKey)
        #expect(b.dhKey(with: pka) == SpecKeys.dhKey)
    }

    @Test func debugKeyIsTheSpecSampleKeyA() {
        // §2.3.5.6.1: the debug private key is the sample's private key A.
        #expect(SMPKeyPair.debug.publicKey.air == SpecKeys.publicAx + SpecKeys.publicAy)
        #expect(SMPPublicKey(air: SpecKeys.publicAx + SpecKeys.publicAy)?.isDebugKey == true)
        #expect(SMPPublicKey(air: SpecKeys.publicBx + SpecKeys.publicBy)?.isDebugKey == false)
    }

    @Test func invalidPublicKeysAreRejected() {
        var offCurve = SpecKeys.publicBx + SpecKeys.publicBy
        offCurve[40] ^= 0x01
        #expect(SMPPublicKey(air: offCurve) == nil)
        #expect(SMPPublicKey(air: [UInt8](repeating: 0, count: 64)) == nil)
        #expect(SMPPublicKey(air: Array((SpecKeys.publicBx + SpecKeys.publicBy).prefix(63))) == nil)
        // X = p (out of the field) with the sample Y.
        let p = spec("ffffffff 00000001 00000000 00000000 00000000 ffffffff ffffffff ffffffff")
        #expect(SMPPublicKey(air: p + SpecKeys.publicBy) == nil)
        #expect(SMPKeyPair(privateKeyMSBFirst: [UInt8](repeating: 0, count: 32)) == nil)
    }
}
