import GattCore

/// An HCI command the host sends to the controller (Core Spec Vol 4 Part E §7).
///
/// `encoded()` gives the command packet (opcode LE, parameter length, parameters)
/// without the H4 indicator; `H4Packet(command:)` adds it. Multi-byte parameters are
/// little-endian. Every case carries plain values; nothing here can fail to encode
/// (over-long legacy advertising data is cut to 31 bytes — `AdvertisingPayloadBuilder`
/// never produces more — and an extended data fragment to 251 bytes:
/// `HCICommand.extendedAdvertisingData` splits longer data).
public enum HCICommand: Sendable, Hashable, CustomStringConvertible {
    /// Reset (§7.3.2).
    case reset
    /// Set Event Mask (§7.3.1).
    case setEventMask(HCIEventMask)
    /// Read Local Version Information (§7.4.1).
    case readLocalVersionInformation
    /// Read Local Supported Commands (§7.4.2).
    case readLocalSupportedCommands
    /// Read Local Supported Features (§7.4.3).
    case readLocalSupportedFeatures
    /// Read Buffer Size (§7.4.5).
    case readBufferSize
    /// Read BD_ADDR (§7.4.6).
    case readBDADDR
    /// Disconnect (§7.1.6). `reason` is usually Remote User Terminated Connection (0x13).
    case disconnect(handle: UInt16, reason: HCIStatus)
    /// LE Set Event Mask (§7.8.1).
    case leSetEventMask(LEEventMask)
    /// LE Read Buffer Size [v1] (§7.8.2).
    case leReadBufferSize
    /// LE Read Buffer Size [v2] (§7.8.2), ISO-capable controllers.
    case leReadBufferSizeV2
    /// LE Read Local Supported Features (§7.8.3).
    case leReadLocalSupportedFeatures
    /// LE Set Random Address (§7.8.4).
    case leSetRandomAddress(BluetoothAddress)
    /// LE Set Advertising Parameters (§7.8.5).
    case leSetAdvertisingParameters(AdvertisingParameters)
    /// LE Read Advertising Physical Channel Tx Power (§7.8.6).
    case leReadAdvertisingPhysicalChannelTxPower
    /// LE Set Advertising Data (§7.8.7): up to 31 significant bytes, zero-padded to 31.
    case leSetAdvertisingData([UInt8])
    /// LE Set Scan Response Data (§7.8.8): up to 31 significant bytes, zero-padded to 31.
    case leSetScanResponseData([UInt8])
    /// LE Set Advertising Enable (§7.8.9).
    case leSetAdvertisingEnable(Bool)
    /// LE Connection Update (§7.8.18). Units: interval 1.25 ms, timeout 10 ms, CE length 0.625 ms.
    case leConnectionUpdate(handle: UInt16, parameters: LEConnectionParameters, minCELength: UInt16, maxCELength: UInt16)
    /// LE Long Term Key Request Reply (§7.8.25): the key, 16 octets little-endian.
    case leLongTermKeyRequestReply(handle: UInt16, longTermKey: [UInt8])
    /// LE Long Term Key Request Negative Reply (§7.8.26).
    case leLongTermKeyRequestNegativeReply(handle: UInt16)
    /// LE Remote Connection Parameter Request Reply (§7.8.31).
    case leRemoteConnectionParameterRequestReply(
        handle: UInt16, parameters: LEConnectionParameters, minCELength: UInt16, maxCELength: UInt16)
    /// LE Remote Connection Parameter Request Negative Reply (§7.8.32).
    case leRemoteConnectionParameterRequestNegativeReply(handle: UInt16, reason: HCIStatus)
    /// LE Set Data Length (§7.8.33): octets 27...251, time 328...17040 µs.
    case leSetDataLength(handle: UInt16, txOctets: UInt16, txTime: UInt16)
    /// LE Read Suggested Default Data Length (§7.8.34).
    case leReadSuggestedDefaultDataLength
    /// LE Write Suggested Default Data Length (§7.8.35).
    case leWriteSuggestedDefaultDataLength(txOctets: UInt16, txTime: UInt16)
    /// LE Read Maximum Data Length (§7.8.46).
    case leReadMaximumDataLength
    /// LE Set Default PHY (§7.8.48). PHY bit masks: bit 0 LE 1M, bit 1 LE 2M, bit 2 LE Coded.
    case leSetDefaultPHY(allPHYs: UInt8, txPHYs: UInt8, rxPHYs: UInt8)
    /// LE Set PHY (§7.8.49).
    case leSetPHY(handle: UInt16, allPHYs: UInt8, txPHYs: UInt8, rxPHYs: UInt8, phyOptions: UInt16)
    /// LE Set Advertising Set Random Address (§7.8.52).
    case leSetAdvertisingSetRandomAddress(handle: UInt8, address: BluetoothAddress)
    /// LE Set Extended Advertising Parameters [v1] (§7.8.53).
    case leSetExtendedAdvertisingParameters(ExtendedAdvertisingParameters)
    /// LE Set Extended Advertising Data (§7.8.54): one fragment of at most 251 bytes.
    case leSetExtendedAdvertisingData(
        handle: UInt8, operation: AdvertisingDataOperation, fragmentPreference: AdvertisingFragmentPreference, data: [UInt8])
    /// LE Set Extended Scan Response Data (§7.8.55): one fragment of at most 251 bytes.
    case leSetExtendedScanResponseData(
        handle: UInt8, operation: AdvertisingDataOperation, fragmentPreference: AdvertisingFragmentPreference, data: [UInt8])
    /// LE Set Extended Advertising Enable (§7.8.56). Disabling with no sets disables every set.
    case leSetExtendedAdvertisingEnable(enable: Bool, sets: [AdvertisingSetEnable])
    /// LE Read Maximum Advertising Data Length (§7.8.57).
    case leReadMaximumAdvertisingDataLength
    /// LE Read Number of Supported Advertising Sets (§7.8.58).
    case leReadNumberOfSupportedAdvertisingSets
    /// LE Remove Advertising Set (§7.8.59).
    case leRemoveAdvertisingSet(handle: UInt8)
    /// LE Clear Advertising Sets (§7.8.60).
    case leClearAdvertisingSets
    /// Any other command, as opcode and raw parameters (at most 255 bytes are sent).
    case raw(HCIOpcode, [UInt8])

    public var opcode: HCIOpcode {
        switch self {
        case .reset: .reset
        case .setEventMask: .setEventMask
        case .readLocalVersionInformation: .readLocalVersionInformation
        case .readLocalSupportedCommands: .readLocalSupportedCommands
        case .readLocalSupportedFeatures: .readLocalSupportedFeatures
        case .readBufferSize: .readBufferSize
        case .readBDADDR: .readBDADDR
        case .disconnect: .disconnect
        case .leSetEventMask: .leSetEventMask
        case .leReadBufferSize: .leReadBufferSize
        case .leReadBufferSizeV2: .leReadBufferSizeV2
        case .leReadLocalSupportedFeatures: .leReadLocalSupportedFeatures
        case .leSetRandomAddress: .leSetRandomAddress
        case .leSetAdvertisingParameters: .leSetAdvertisingParameters
        case .leReadAdvertisingPhysicalChannelTxPower: .leReadAdvertisingPhysicalChannelTxPower
        case .leSetAdvertisingData: .leSetAdvertisingData
        case .leSetScanResponseData: .leSetScanResponseData
        case .leSetAdvertisingEnable: .leSetAdvertisingEnable
        case .leConnectionUpdate: .leConnectionUpdate
        case .leLongTermKeyRequestReply: .leLongTermKeyRequestReply
        case .leLongTermKeyRequestNegativeReply: .leLongTermKeyRequestNegativeReply
        case .leRemoteConnectionParameterRequestReply: .leRemoteConnectionParameterRequestReply
        case .leRemoteConnectionParameterRequestNegativeReply: .leRemoteConnectionParameterRequestNegativeReply
        case .leSetDataLength: .leSetDataLength
        case .leReadSuggestedDefaultDataLength: .leReadSuggestedDefaultDataLength
        case .leWriteSuggestedDefaultDataLength: .leWriteSuggestedDefaultDataLength
        case .leReadMaximumDataLength: .leReadMaximumDataLength
        case .leSetDefaultPHY: .leSetDefaultPHY
        case .leSetPHY: .leSetPHY
        case .leSetAdvertisingSetRandomAddress: .leSetAdvertisingSetRandomAddress
        case .leSetExtendedAdvertisingParameters: .leSetExtendedAdvertisingParameters
        case .leSetExtendedAdvertisingData: .leSetExtendedAdvertisingData
        case .leSetExtendedScanResponseData: .leSetExtendedScanResponseData
        case .leSetExtendedAdvertisingEnable: .leSetExtendedAdvertisingEnable
        case .leReadMaximumAdvertisingDataLength: .leReadMaximumAdvertisingDataLength
        case .leReadNumberOfSupportedAdvertisingSets: .leReadNumberOfSupportedAdvertisingSets
        case .leRemoveAdvertisingSet: .leRemoveAdvertisingSet
        case .leClearAdvertisingSets: .leClearAdvertisingSets
        case .raw(let op, _): op
        }
    }

    /// The command name for logs and errors ("LE Set Advertising Parameters").
    public var name: String { opcode.description }

    public var description: String { name }

    /// The command parameters (without opcode and length).
    public var parameters: [UInt8] {
        var w = CodecByteWriter()
        switch self {
        case .reset, .readLocalVersionInformation, .readLocalSupportedCommands, .readLocalSupportedFeatures,
            .readBufferSize, .readBDADDR, .leReadBufferSize, .leReadBufferSizeV2, .leReadLocalSupportedFeatures,
            .leReadAdvertisingPhysicalChannelTxPower, .leReadSuggestedDefaultDataLength, .leReadMaximumDataLength,
            .leReadMaximumAdvertisingDataLength, .leReadNumberOfSupportedAdvertisingSets, .leClearAdvertisingSets:
            break
        case .setEventMask(let mask): w.u64(mask.rawValue)
        case .leSetEventMask(let mask): w.u64(mask.rawValue)
        case .disconnect(let handle, let reason):
            w.u16(handle & 0x0FFF)
            w.u8(reason.rawValue)
        case .leSetRandomAddress(let address): w.address(address)
        case .leSetAdvertisingParameters(let p): w.append(p.encoded)
        case .leSetAdvertisingData(let data), .leSetScanResponseData(let data):
            let significant = data.prefix(31)
            w.u8(UInt8(significant.count))
            w.append(significant)
            w.append([UInt8](repeating: 0, count: 31 - significant.count))
        case .leSetAdvertisingEnable(let on): w.u8(on ? 1 : 0)
        case .leConnectionUpdate(let handle, let p, let minCE, let maxCE),
            .leRemoteConnectionParameterRequestReply(let handle, let p, let minCE, let maxCE):
            w.u16(handle & 0x0FFF)
            w.u16(p.intervalMin)
            w.u16(p.intervalMax)
            w.u16(p.latency)
            w.u16(p.supervisionTimeout)
            w.u16(minCE)
            w.u16(maxCE)
        case .leLongTermKeyRequestReply(let handle, let key):
            w.u16(handle & 0x0FFF)
            // Exactly 16 octets: a shorter key is zero-padded (keys shortened to the key size are).
            w.append(Array(key.prefix(16)) + [UInt8](repeating: 0, count: max(0, 16 - key.count)))
        case .leLongTermKeyRequestNegativeReply(let handle): w.u16(handle & 0x0FFF)
        case .leRemoteConnectionParameterRequestNegativeReply(let handle, let reason):
            w.u16(handle & 0x0FFF)
            w.u8(reason.rawValue)
        case .leSetDataLength(let handle, let octets, let time):
            w.u16(handle & 0x0FFF)
            w.u16(octets)
            w.u16(time)
        case .leWriteSuggestedDefaultDataLength(let octets, let time):
            w.u16(octets)
            w.u16(time)
        case .leSetDefaultPHY(let all, let tx, let rx):
            w.u8(all)
            w.u8(tx)
            w.u8(rx)
        case .leSetPHY(let handle, let all, let tx, let rx, let options):
            w.u16(handle & 0x0FFF)
            w.u8(all)
            w.u8(tx)
            w.u8(rx)
            w.u16(options)
        case .leSetAdvertisingSetRandomAddress(let handle, let address):
            w.u8(handle)
            w.address(address)
        case .leSetExtendedAdvertisingParameters(let p): w.append(p.encoded)
        case .leSetExtendedAdvertisingData(let handle, let operation, let preference, let data),
            .leSetExtendedScanResponseData(let handle, let operation, let preference, let data):
            Self.writeExtendedData(&w, handle: handle, operation: operation, preference: preference, data: data)
        case .leSetExtendedAdvertisingEnable(let enable, let sets): Self.writeExtendedEnable(&w, enable: enable, sets: sets)
        case .leRemoveAdvertisingSet(let handle): w.u8(handle)
        case .raw(_, let params): w.append(params.prefix(255))
        }
        return w.bytes
    }

    /// The HCI command packet: opcode (LE), parameter total length, parameters
    /// (Vol 4 Part E §5.4.1). No H4 indicator.
    public func encoded() -> [UInt8] {
        let params = parameters
        var w = CodecByteWriter(capacity: 3 + params.count)
        w.u16(opcode.rawValue)
        w.u8(UInt8(params.count))
        w.append(params)
        return w.bytes
    }
}

/// Set Event Mask bits (Core Spec Vol 4 Part E §7.3.1).
public struct HCIEventMask: OptionSet, Sendable, Hashable {
    public let rawValue: UInt64
    public init(rawValue: UInt64) { self.rawValue = rawValue }

    public static let disconnectionComplete = Self(rawValue: 1 << 4)
    public static let encryptionChange = Self(rawValue: 1 << 7)
    public static let hardwareError = Self(rawValue: 1 << 15)
    public static let dataBufferOverflow = Self(rawValue: 1 << 25)
    public static let encryptionKeyRefreshComplete = Self(rawValue: 1 << 47)
    public static let leMeta = Self(rawValue: 1 << 61)

    /// The controller's default after Reset (0x00001FFFFFFFFFFF).
    public static let controllerDefault = Self(rawValue: 0x0000_1FFF_FFFF_FFFF)
    /// What an LE peripheral host needs.
    public static let lePeripheral: Self = [
        .disconnectionComplete, .encryptionChange, .hardwareError, .dataBufferOverflow,
        .encryptionKeyRefreshComplete, .leMeta,
    ]
}
