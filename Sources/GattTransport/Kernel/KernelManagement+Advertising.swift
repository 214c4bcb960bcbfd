import GattCore

#if canImport(Glibc)
import Glibc
#endif

// Advertising through the kernel (BlueZ doc/mgmt-api "Add Advertising", "Add Extended
// Advertising Parameters/Data"): the kernel owns the controller's advertising and picks legacy
// or extended HCI commands for it, so a controller it drives with extended commands never sees
// a legacy one from us (Core Spec Vol 4 Part E §3.1.1 forbids mixing the two).
extension KernelManagement {
    /// The Flags of Add Advertising (0x003E) and Add Extended Advertising Parameters (0x0054).
    public struct AdvertisingFlags: OptionSet, Sendable, Hashable {
        public let rawValue: UInt32
        public init(rawValue: UInt32) { self.rawValue = rawValue }
        /// Undirected connectable advertising, whatever the global connectable setting says.
        public static let connectable = AdvertisingFlags(rawValue: 1 << 0)
        public static let discoverable = AdvertisingFlags(rawValue: 1 << 1)
        public static let limitedDiscoverable = AdvertisingFlags(rawValue: 1 << 2)
        /// The kernel adds the Flags AD structure itself (we add our own: never set).
        public static let managedFlags = AdvertisingFlags(rawValue: 1 << 3)
        /// Extended advertising PDUs, secondary channel on LE 1M / 2M / Coded (Coded: primary
        /// channel on Coded too). None of the three: legacy PDUs.
        public static let secondary1M = AdvertisingFlags(rawValue: 1 << 7)
        public static let secondary2M = AdvertisingFlags(rawValue: 1 << 8)
        public static let secondaryCoded = AdvertisingFlags(rawValue: 1 << 9)
        /// Add Extended Advertising Parameters: MinInterval/MaxInterval are to be used.
        public static let useIntervals = AdvertisingFlags(rawValue: 1 << 14)
        /// Add Extended Advertising Parameters: the data will carry a scan response (scannable PDUs).
        public static let scanResponse = AdvertisingFlags(rawValue: 1 << 16)
    }

    /// Read Advertising Features (0x003D): what the kernel and controller offer.
    public struct AdvertisingFeatures: Sendable, Equatable {
        public var supportedFlags: AdvertisingFlags
        public var maximumAdvertisingDataLength: Int
        public var maximumScanResponseLength: Int
        /// How many instances the kernel can hold (0: the controller cannot advertise).
        public var maximumInstances: Int
        /// The instances registered now (by anyone: bluetoothd, btmgmt, an earlier gattd).
        public var instances: [UInt8]

        public init(supportedFlags: AdvertisingFlags, maximumAdvertisingDataLength: Int, maximumScanResponseLength: Int, maximumInstances: Int, instances: [UInt8]) {
            self.supportedFlags = supportedFlags
            self.maximumAdvertisingDataLength = maximumAdvertisingDataLength
            self.maximumScanResponseLength = maximumScanResponseLength
            self.maximumInstances = maximumInstances
            self.instances = instances
        }

        /// Parses the return parameters: Supported_Flags (4), Max_Adv_Data_Len (1),
        /// Max_Scan_Rsp_Len (1), Max_Instances (1), Num_Instances (1), Instance[].
        public init?(returnParameters p: [UInt8]) {
            guard p.count >= 8, p.count >= 8 + Int(p[7]) else { return nil }
            supportedFlags = AdvertisingFlags(rawValue: KernelManagement.littleEndian32(p, at: 0))
            maximumAdvertisingDataLength = Int(p[4])
            maximumScanResponseLength = Int(p[5])
            maximumInstances = Int(p[6])
            instances = Array(p[8..<(8 + Int(p[7]))])
        }
    }

    /// One advertising instance as the kernel takes it: gattd's advertising payloads for one set.
    public struct AdvertisingInstance: Sendable, Hashable {
        /// 1...254 (0 is the kernel's own).
        public var instance: UInt8
        public var flags: AdvertisingFlags
        /// Advertising interval in 0.625 ms units.
        public var intervalMin: UInt32
        public var intervalMax: UInt32
        public var advertisingData: [UInt8]
        public var scanResponseData: [UInt8]

        public init(instance: UInt8, flags: AdvertisingFlags, intervalMin: UInt32, intervalMax: UInt32, advertisingData: [UInt8], scanResponseData: [UInt8]) {
            self.instance = instance
            self.flags = flags
            self.intervalMin = intervalMin
            self.intervalMax = intervalMax
            self.advertisingData = advertisingData
            self.scanResponseData = scanResponseData
        }

        /// The instance for these payloads: connectable when the PDU type is; the scan response
        /// only when the type is scannable; legacy PDUs (no secondary-channel flag).
        public init(instance: UInt8, payloads: AdvertisingPayloads) {
            let type = payloads.parameters.advertisingType
            var flags: AdvertisingFlags = []
            if type.isConnectable { flags.insert(.connectable) }
            let scanResponse = type.isScannable ? payloads.scanResponseData : []
            if !scanResponse.isEmpty { flags.insert(.scanResponse) }
            self.init(
                instance: instance, flags: flags, intervalMin: UInt32(payloads.parameters.intervalMin),
                intervalMax: UInt32(payloads.parameters.intervalMax), advertisingData: payloads.advertisingData,
                scanResponseData: scanResponse)
        }

        /// Add Advertising (0x003E): Instance, Flags, Duration, Timeout, Adv_Data_Len,
        /// Scan_Rsp_Len, Adv_Data, Scan_Rsp. It has no interval (the kernel's default applies)
        /// and no scan-response flag (a scan response makes non-connectable advertising scannable).
        public var addAdvertisingParameters: [UInt8] {
            var w = ManagementParameterWriter()
            w.u8(instance)
            w.u32(flags.subtracting([.useIntervals, .scanResponse]).rawValue)
            w.u16(0)  // Duration: the kernel's default rotation (2 s) when instances take turns
            w.u16(0)  // Timeout: none
            w.u8(UInt8(truncatingIfNeeded: advertisingData.count))
            w.u8(UInt8(truncatingIfNeeded: scanResponseData.count))
            w.bytes(advertisingData)
            w.bytes(scanResponseData)
            return w.bytes
        }

        /// Add Extended Advertising Parameters (0x0054): Instance, Flags, Duration, Timeout,
        /// MinInterval, MaxInterval, TxPower (the intervals used, the TX power left to the kernel).
        public var addExtendedParameters: [UInt8] {
            var w = ManagementParameterWriter()
            w.u8(instance)
            w.u32(flags.union(.useIntervals).rawValue)
            w.u16(0)
            w.u16(0)
            w.u32(intervalMin)
            w.u32(intervalMax)
            w.u8(0x7F)  // TxPower: no preference (the flag that would use it is not set)
            return w.bytes
        }

        /// Add Extended Advertising Data (0x0055): Instance, Advertising Data Length, Scan
        /// Response Length, Advertising Data, Scan Response.
        public var addExtendedData: [UInt8] {
            var w = ManagementParameterWriter()
            w.u8(instance)
            w.u8(UInt8(truncatingIfNeeded: advertisingData.count))
            w.u8(UInt8(truncatingIfNeeded: scanResponseData.count))
            w.bytes(advertisingData)
            w.bytes(scanResponseData)
            return w.bytes
        }
    }

    /// Read Management Supported Commands (0x0002, index <non-controller>): Num_Of_Commands (2),
    /// Num_Of_Events (2), Command[] (2 each), Event[] (2 each). The commands, or nil when short.
    public static func supportedCommands(returnParameters p: [UInt8]) -> Set<UInt16>? {
        guard p.count >= 4 else { return nil }
        let count = Int(UInt16(p[0]) | UInt16(p[1]) << 8)
        guard p.count >= 4 + 2 * count else { return nil }
        return Set((0..<count).map { i in UInt16(p[4 + 2 * i]) | UInt16(p[5 + 2 * i]) << 8 })
    }

    /// The controller index mgmt uses for commands about no controller.
    static let nonController = 0xFFFF

    /// The kernel's mgmt commands and advertising features, read once per open.
    public static func readAdvertising(index: Int, timeout: Duration = .seconds(5)) throws(KernelTransportError)
        -> (commands: Set<UInt16>, features: AdvertisingFeatures)
    {
        let fd = try controlSocket()
        defer { close(fd) }
        let device = "hci\(index)"
        let reply = try command(fd, .readManagementSupportedCommands, index: nonController, device: "mgmt", timeout: timeout)
        guard let commands = supportedCommands(returnParameters: reply) else {
            throw KernelTransportError(.systemCall(errno: EPROTO), "mgmt Read Management Supported Commands: short reply (\(reply.count) bytes)")
        }
        let raw = try command(fd, .readAdvertisingFeatures, index: index, device: device, timeout: timeout)
        guard let features = AdvertisingFeatures(returnParameters: raw) else {
            throw KernelTransportError(.systemCall(errno: EPROTO), "\(device): mgmt Read Advertising Features: short reply (\(raw.count) bytes)")
        }
        return (commands, features)
    }

    /// Registers (or replaces) an instance: Add Extended Advertising Parameters then Add
    /// Extended Advertising Data when `extended`, else Add Advertising.
    public static func addAdvertising(index: Int, _ instance: AdvertisingInstance, extended: Bool, timeout: Duration = .seconds(5)) throws(KernelTransportError) {
        let fd = try controlSocket()
        defer { close(fd) }
        let device = "hci\(index)"
        if extended {
            _ = try command(fd, .addExtendedAdvertisingParameters, index: index, parameters: instance.addExtendedParameters, device: device, timeout: timeout)
            _ = try command(fd, .addExtendedAdvertisingData, index: index, parameters: instance.addExtendedData, device: device, timeout: timeout)
        } else {
            _ = try command(fd, .addAdvertising, index: index, parameters: instance.addAdvertisingParameters, device: device, timeout: timeout)
        }
    }

    /// Remove Advertising (0x003F) of one instance.
    public static func removeAdvertising(index: Int, instance: UInt8, timeout: Duration = .seconds(5)) throws(KernelTransportError) {
        let fd = try controlSocket()
        defer { close(fd) }
        _ = try command(fd, .removeAdvertising, index: index, parameters: [instance], device: "hci\(index)", timeout: timeout)
    }
}

/// Little-endian mgmt command parameters, field by field.
struct ManagementParameterWriter {
    private(set) var bytes: [UInt8] = []
    mutating func u8(_ v: UInt8) { bytes.append(v) }
    mutating func u16(_ v: UInt16) { for i in 0..<2 { bytes.append(UInt8(truncatingIfNeeded: v >> (8 * UInt16(i)))) } }
    mutating func u32(_ v: UInt32) { for i in 0..<4 { bytes.append(UInt8(truncatingIfNeeded: v >> (8 * UInt32(i)))) } }
    mutating func bytes(_ data: [UInt8]) { bytes.append(contentsOf: data) }
}
