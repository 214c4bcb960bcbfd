/// An HCI status / error code (Core Spec Vol 1 Part F §1.3). Carried in Command
/// Complete / Command Status events, as the reason of Disconnect and Disconnection
/// Complete, etc. Every 8-bit value is representable; the known ones have names.
public struct HCIStatus: RawRepresentable, Hashable, Sendable, Error, CustomStringConvertible {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }
    public init(_ rawValue: UInt8) { self.rawValue = rawValue }

    public static let success = Self(0x00)
    public static let unknownCommand = Self(0x01)
    public static let unknownConnectionIdentifier = Self(0x02)
    public static let hardwareFailure = Self(0x03)
    public static let authenticationFailure = Self(0x05)
    public static let pinOrKeyMissing = Self(0x06)
    public static let memoryCapacityExceeded = Self(0x07)
    public static let connectionTimeout = Self(0x08)
    public static let connectionLimitExceeded = Self(0x09)
    public static let connectionAlreadyExists = Self(0x0B)
    public static let commandDisallowed = Self(0x0C)
    public static let connectionRejectedLimitedResources = Self(0x0D)
    public static let unsupportedFeatureOrParameterValue = Self(0x11)
    public static let invalidCommandParameters = Self(0x12)
    public static let remoteUserTerminatedConnection = Self(0x13)
    public static let remoteDeviceTerminatedLowResources = Self(0x14)
    public static let remoteDeviceTerminatedPowerOff = Self(0x15)
    public static let connectionTerminatedByLocalHost = Self(0x16)
    public static let pairingNotAllowed = Self(0x18)
    public static let unsupportedRemoteFeature = Self(0x1A)
    public static let invalidLLParameters = Self(0x1E)
    public static let unspecifiedError = Self(0x1F)
    public static let unsupportedLLParameterValue = Self(0x20)
    public static let llResponseTimeout = Self(0x22)
    public static let llProcedureCollision = Self(0x23)
    public static let instantPassed = Self(0x28)
    public static let differentTransactionCollision = Self(0x2A)
    public static let insufficientSecurity = Self(0x2F)
    public static let parameterOutOfMandatoryRange = Self(0x30)
    public static let controllerBusy = Self(0x3A)
    public static let unacceptableConnectionParameters = Self(0x3B)
    public static let advertisingTimeout = Self(0x3C)
    public static let connectionTerminatedMICFailure = Self(0x3D)
    public static let connectionFailedToBeEstablished = Self(0x3E)
    public static let unknownAdvertisingIdentifier = Self(0x42)
    public static let limitReached = Self(0x43)
    public static let operationCancelledByHost = Self(0x44)
    public static let packetTooLong = Self(0x45)

    public var isSuccess: Bool { rawValue == 0 }

    /// The specification's name ("Command Disallowed"), or nil for a reserved code.
    public var name: String? {
        let i = Int(rawValue)
        return i < Self.names.count ? Self.names[i] : nil
    }

    /// "Command Disallowed (0x0C)".
    public var description: String {
        "\(name ?? "Reserved error code") (\(codecHex(rawValue, digits: 2)))"
    }

    /// Names of codes 0x00...0x47 (Vol 1 Part F §1.3); nil marks a reserved code.
    private static let names: [String?] = [
        "Success",  // 0x00
        "Unknown HCI Command",
        "Unknown Connection Identifier",
        "Hardware Failure",
        "Page Timeout",
        "Authentication Failure",
        "PIN or Key Missing",
        "Memory Capacity Exceeded",
        "Connection Timeout",
        "Connection Limit Exceeded",
        "Synchronous Connection Limit To A Device Exceeded",  // 0x0A
        "Connection Already Exists",
        "Command Disallowed",
        "Connection Rejected due to Limited Resources",
        "Connection Rejected Due To Security Reasons",
        "Connection Rejected due to Unacceptable BD_ADDR",
        "Connection Accept Timeout Exceeded",  // 0x10
        "Unsupported Feature or Parameter Value",
        "Invalid HCI Command Parameters",
        "Remote User Terminated Connection",
        "Remote Device Terminated Connection due to Low Resources",
        "Remote Device Terminated Connection due to Power Off",
        "Connection Terminated By Local Host",
        "Repeated Attempts",
        "Pairing Not Allowed",
        "Unknown LMP PDU",
        "Unsupported Remote Feature",  // 0x1A
        "SCO Offset Rejected",
        "SCO Interval Rejected",
        "SCO Air Mode Rejected",
        "Invalid LMP Parameters / Invalid LL Parameters",
        "Unspecified Error",
        "Unsupported LMP Parameter Value / Unsupported LL Parameter Value",  // 0x20
        "Role Change Not Allowed",
        "LMP Response Timeout / LL Response Timeout",
        "LMP Error Transaction Collision / LL Procedure Collision",
        "LMP PDU Not Allowed",
        "Encryption Mode Not Acceptable",
        "Link Key cannot be Changed",
        "Requested QoS Not Supported",
        "Instant Passed",
        "Pairing With Unit Key Not Supported",
        "Different Transaction Collision",  // 0x2A
        nil,
        "QoS Unacceptable Parameter",
        "QoS Rejected",
        "Channel Classification Not Supported",
        "Insufficient Security",
        "Parameter Out Of Mandatory Range",  // 0x30
        nil,
        "Role Switch Pending",
        nil,
        "Reserved Slot Violation",
        "Role Switch Failed",
        "Extended Inquiry Response Too Large",
        "Secure Simple Pairing Not Supported By Host",
        "Host Busy - Pairing",
        "Connection Rejected due to No Suitable Channel Found",
        "Controller Busy",  // 0x3A
        "Unacceptable Connection Parameters",
        "Advertising Timeout",
        "Connection Terminated due to MIC Failure",
        "Connection Failed to be Established / Synchronization Timeout",
        nil,
        "Coarse Clock Adjustment Rejected but Will Try to Adjust Using Clock Dragging",  // 0x40
        "Type0 Submap Not Defined",
        "Unknown Advertising Identifier",
        "Limit Reached",
        "Operation Cancelled by Host",
        "Packet Too Long",
        "Too Late",
        "Too Early",  // 0x47
    ]
}
