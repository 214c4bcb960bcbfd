/// IO Capability (Core Spec Vol 3 Part H §3.5.1, Table 3.4).
public enum SMPIOCapability: UInt8, Sendable, Hashable, CaseIterable {
    case displayOnly = 0x00
    case displayYesNo = 0x01
    case keyboardOnly = 0x02
    case noInputNoOutput = 0x03
    case keyboardDisplay = 0x04
}
