/// Data signing of ATT_SIGNED_WRITE_CMD (Core Spec Vol 3 Part H §2.4.5,
/// Vol 3 Part C §10.4): MAC = the 64 most significant bits of
/// AES-CMAC(CSRK, m ‖ SignCounter). The CSRK, m and SignCounter travel
/// little-endian, so key and message are byte-reversed into the MSB-first order
/// AES-CMAC uses and the MAC is sent LSB-first (BlueZ and Linux do the same).
public enum ATTSigning {
    /// The 12-octet Authentication Signature: SignCounter (LE32) ‖ MAC (LSB first).
    /// - Parameters:
    ///   - csrk: 16 octets, little-endian (as in the SMP Signing Information PDU).
    ///   - message: the PDU without its signature (opcode, handle, value).
    public static func signature(csrk: [UInt8], message: [UInt8], signCounter: UInt32) -> [UInt8] {
        guard csrk.count == 16 else { return [] }
        let counter: [UInt8] = [
            UInt8(truncatingIfNeeded: signCounter), UInt8(truncatingIfNeeded: signCounter >> 8),
            UInt8(truncatingIfNeeded: signCounter >> 16), UInt8(truncatingIfNeeded: signCounter >> 24),
        ]
        let mac = AESCMAC.mac(key: csrk.reversed(), message: (message + counter).reversed())
        return counter + mac.prefix(8).reversed()
    }
}
