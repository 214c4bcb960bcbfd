/// What a link must have before an app's L2CAP channel is accepted on it
/// (Core Vol 3 Part A §4.22, the LE Credit Based Connection Response's security results).
public enum L2CAPChannelSecurity: String, Sendable, Equatable, CaseIterable {
    /// Any link.
    case none
    /// An encrypted link (refused otherwise: Insufficient Encryption, or Insufficient
    /// Authentication when the central has no keys yet).
    case encryption
    /// An encrypted link with authenticated (MITM-protected) keys.
    case authentication
}

/// An L2CAP channel apps publish (`publishL2CAPChannel`): the centrals open LE credit-based
/// channels to `psm`, and each channel goes to a program listening for `id`.
public struct L2CAPChannelServer: Sendable, Equatable {
    /// The config's / control op's name for it (what programs listen for).
    public var id: String
    /// Simplified Protocol/Service Multiplexer, LE: fixed 0x0001–0x007F (SIG-assigned) or
    /// dynamic 0x0080–0x00FF (Core Vol 3 Part A §4.22).
    public var psm: UInt16
    public var security: L2CAPChannelSecurity
    /// The largest SDU gattd takes from the central (our MTU in the connection response).
    public var mtu: Int

    /// The SDU MTU range of LE credit-based channels (Core Vol 3 Part A §4.22: at least 23).
    public static let mtuRange = 23...65535
    /// Dynamic LE PSMs: what gattd picks from when the config names none.
    public static let dynamicPSMs: ClosedRange<UInt16> = 0x0080...0x00FF
    public static let defaultMTU = 2048

    public init(id: String, psm: UInt16, security: L2CAPChannelSecurity = .none, mtu: Int = Self.defaultMTU) {
        self.id = id
        self.psm = psm
        self.security = security
        self.mtu = mtu
    }
}
