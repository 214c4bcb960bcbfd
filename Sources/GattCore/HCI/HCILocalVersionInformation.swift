/// The controller's versions and manufacturer: the return parameters of Read Local Version
/// Information (Core Spec Vol 4 Part E §7.4.1; decoded by the H4 host, read by the kernel transport).
public struct HCILocalVersionInformation: Sendable, Hashable {
    public var hciVersion: UInt8
    public var hciSubversion: UInt16
    public var lmpVersion: UInt8
    public var companyIdentifier: UInt16
    public var lmpSubversion: UInt16
    public init(hciVersion: UInt8, hciSubversion: UInt16, lmpVersion: UInt8, companyIdentifier: UInt16, lmpSubversion: UInt16) {
        self.hciVersion = hciVersion
        self.hciSubversion = hciSubversion
        self.lmpVersion = lmpVersion
        self.companyIdentifier = companyIdentifier
        self.lmpSubversion = lmpSubversion
    }
}
