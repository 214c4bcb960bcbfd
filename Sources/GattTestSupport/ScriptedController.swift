import GattCore
import GattHost

/// A scripted controller: answers each HCI command with the Command Complete (or Command
/// Status) a real controller would send, from configurable capabilities (Core Spec Vol 4
/// Part E §7). Connections and data are driven by whoever uses it: the host tests, the
/// `host` fuzz target and the benchmarks.
public struct ScriptedController: Sendable {
    public var address = BluetoothAddress("C0:FF:EE:00:00:01")!
    public var version = HCILocalVersionInformation(
        hciVersion: 0x0C, hciSubversion: 0x1234, lmpVersion: 0x0C, companyIdentifier: 0x05F1, lmpSubversion: 0x5678)
    /// Commands reported by Read Local Supported Commands.
    public var supportedCommands: [HCIOpcode] = ScriptedController.allCommands
    public var leFeatures: LEFeatures = [.encryption, .dataPacketLengthExtension, .le2MPHY]
    /// LE Read Buffer Size [v1]/[v2] answer; (0, 0) means "use Read Buffer Size".
    public var leBuffers: (length: UInt16, count: UInt8) = (27, 2)
    /// Read Buffer Size answer.
    public var aclBuffers: (length: UInt16, count: UInt16) = (27, 4)
    /// Status to answer an opcode with (Success when absent).
    public var status: [HCIOpcode: HCIStatus] = [:]
    /// Num_HCI_Command_Packets in every answer.
    public var numHCICommandPackets: UInt8 = 1
    /// LE Read Number of Supported Advertising Sets and LE Read Maximum Advertising Data Length answers.
    public var advertisingSets: UInt8 = 16
    public var maximumAdvertisingDataLength: UInt16 = 1650
    /// Read Local Supported Commands sets every bit, whatever `supportedCommands` lists.
    public var supportsEveryCommand = false

    public init() {}

    public static let allCommands: [HCIOpcode] = [
        .disconnect, .setEventMask, .reset, .readLocalVersionInformation, .readLocalSupportedFeatures,
        .readBufferSize, .readBDADDR, .leSetEventMask, .leReadBufferSize, .leReadLocalSupportedFeatures,
        .leSetRandomAddress, .leSetAdvertisingParameters, .leSetAdvertisingData, .leSetScanResponseData,
        .leSetAdvertisingEnable, .leConnectionUpdate, .leLongTermKeyRequestReply, .leLongTermKeyRequestNegativeReply,
        .leRemoteConnectionParameterRequestReply, .leSetDataLength, .leWriteSuggestedDefaultDataLength,
        .leSetDefaultPHY, .leSetPHY, .leReadBufferSizeV2,
    ]
    /// The extended advertising commands (Vol 4 Part E §7.8.52–§7.8.60).
    public static let extendedAdvertisingCommands: [HCIOpcode] = [
        .leSetAdvertisingSetRandomAddress, .leSetExtendedAdvertisingParameters, .leSetExtendedAdvertisingData,
        .leSetExtendedScanResponseData, .leSetExtendedAdvertisingEnable, .leReadMaximumAdvertisingDataLength,
        .leReadNumberOfSupportedAdvertisingSets, .leRemoveAdvertisingSet, .leClearAdvertisingSets,
    ]

    /// A Bluetooth 5 controller: LE Extended Advertising (LE feature bit 12) and its commands.
    public static var extended: ScriptedController {
        var c = ScriptedController()
        c.leFeatures.insert(.extendedAdvertising)
        c.supportedCommands += extendedAdvertisingCommands
        return c
    }

    /// Commands answered with Command Status (Vol 4 Part E §7.1.6, §7.8.49, §7.8.18).
    public static let commandStatusOpcodes: Set<HCIOpcode> = [.disconnect, .leSetPHY, .leConnectionUpdate]

    public var supportedCommandsMask: [UInt8] {
        if supportsEveryCommand { return [UInt8](repeating: 0xFF, count: 64) }
        var octets = [UInt8](repeating: 0, count: 64)
        for op in supportedCommands {
            if let (octet, bit) = op.supportedCommandsBit { octets[octet] |= 1 << UInt8(bit) }
        }
        return octets
    }

    /// The opcode and parameters of a command packet the host sent.
    public static func parse(_ packet: H4Packet) -> (opcode: HCIOpcode, parameters: [UInt8])? {
        guard packet.type == .command, packet.body.count >= 3 else { return nil }
        return (HCIOpcode(rawValue: UInt16(packet.body[0]) | UInt16(packet.body[1]) << 8), Array(packet.body[3...]))
    }

    /// The event answering `packet`.
    public func answer(_ packet: H4Packet) -> HCIEvent {
        guard let (opcode, parameters) = Self.parse(packet) else { return .unknown(code: 0xFF, parameters: []) }
        let s = status[opcode] ?? .success
        if Self.commandStatusOpcodes.contains(opcode) {
            return .commandStatus(status: s, numHCICommandPackets: numHCICommandPackets, opcode: opcode)
        }
        return .commandComplete(
            HCICommandComplete(
                numHCICommandPackets: numHCICommandPackets, opcode: opcode,
                returnParameters: s == .success ? [0x00] + returnParameters(opcode, parameters) : [s.rawValue]))
    }

    public func returnParameters(_ opcode: HCIOpcode, _ parameters: [UInt8]) -> [UInt8] {
        switch opcode {
        case .readLocalVersionInformation:
            return [version.hciVersion] + le16(version.hciSubversion) + [version.lmpVersion]
                + le16(version.companyIdentifier) + le16(version.lmpSubversion)
        case .readBDADDR: return address.littleEndianBytes
        case .readLocalSupportedCommands: return supportedCommandsMask
        case .readLocalSupportedFeatures: return le64(1 << 38)
        case .leReadLocalSupportedFeatures: return le64(leFeatures.rawValue)
        case .leReadBufferSize: return le16(leBuffers.length) + [leBuffers.count]
        case .leReadBufferSizeV2: return le16(leBuffers.length) + [leBuffers.count] + le16(251) + [4]
        case .readBufferSize: return le16(aclBuffers.length) + [64] + le16(aclBuffers.count) + le16(0)
        case .leReadNumberOfSupportedAdvertisingSets: return [advertisingSets]
        case .leReadMaximumAdvertisingDataLength: return le16(maximumAdvertisingDataLength)
        case .leSetExtendedAdvertisingParameters: return [0x00]  // Selected_TX_Power 0 dBm
        case .leSetDataLength, .leLongTermKeyRequestReply, .leLongTermKeyRequestNegativeReply, .leRemoteConnectionParameterRequestReply,
            .leRemoteConnectionParameterRequestNegativeReply:
            return Array(parameters.prefix(2))
        default: return []
        }
    }

    /// The event answering a command packet's body (opcode, length, parameters), as bytes.
    public func answer(command body: [UInt8]) -> [UInt8] { answer(H4Packet(type: .command, body: body)).encoded() }

    private func le16(_ v: UInt16) -> [UInt8] { [UInt8(v & 0xFF), UInt8(v >> 8)] }
    private func le64(_ v: UInt64) -> [UInt8] { (0..<8).map { UInt8(truncatingIfNeeded: v >> (8 * UInt64($0))) } }
}
