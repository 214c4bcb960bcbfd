import GattCore

/// Controller bring-up (Core Spec Vol 4 Part E §3, §7.3–§7.4, §7.8): where it stands
/// (`HostPhase`), what the controller said about itself (`ControllerInfo`, its supported
/// commands) and the commands each answer calls for, from HCI_Reset to ready. `Host` runs the
/// commands and does what depends on the rest of it (advertising, our own address).
struct ControllerBringUp: Sendable {
    /// What bring-up learned of the controller.
    var controller = ControllerInfo()
    /// Bring-up under way, complete, or given up.
    var phase = HostPhase.bringingUp(buffersKnown: false)
    /// The commands the controller reported (nil until read).
    private(set) var supportedCommands: HCISupportedCommands?

    /// What an answer means to the rest of the host.
    enum Step: Equatable {
        /// Nothing more than the commands queued.
        case none
        /// Legacy or extended advertising was chosen (`controller.advertisingCommands`).
        case advertisingChosen
        /// The ACL buffers are known (the scheduler was told): our own address comes next.
        case buffersKnown
        /// The controller cannot be used.
        case fatal(String)
    }

    /// The commands of extended advertising the host uses (Vol 4 Part E §7.8.52–§7.8.59).
    static let extendedAdvertisingCommands: [HCIOpcode] = [
        .leSetAdvertisingSetRandomAddress, .leSetExtendedAdvertisingParameters, .leSetExtendedAdvertisingData,
        .leSetExtendedScanResponseData, .leSetExtendedAdvertisingEnable, .leReadMaximumAdvertisingDataLength,
        .leReadNumberOfSupportedAdvertisingSets, .leRemoveAdvertisingSet,
    ]

    /// Whether the controller reported support for `command` (false before bring-up read it).
    func supports(_ command: HCICommand) -> Bool { supportedCommands?.isSupported(command.opcode) ?? false }

    /// From the start: the controller is reset and read again.
    mutating func start() -> [HCICommand] {
        phase = .bringingUp(buffersKnown: false)
        controller.advertisingCommands = .legacy
        return [.reset, .readLocalVersionInformation, .readBDADDR, .readLocalSupportedCommands]
    }

    /// A command of bring-up answered with success: what the controller said is kept, the
    /// commands that follow queued.
    mutating func succeeded(
        _ command: HCICommand, _ complete: HCICommandComplete?, commands: inout HCICommandQueue, acl: inout ACLScheduler
    ) throws -> Step {
        switch command {
        case .readLocalVersionInformation:
            controller.version = try complete?.decode(HCILocalVersionInformation.self)
        case .readBDADDR:
            if let a = try complete?.decode(HCIReadBDADDR.self) { controller.address = a.address }
        case .readLocalSupportedCommands:
            supportedCommands = try complete?.decode(HCISupportedCommands.self)
            commands.append(.readLocalSupportedFeatures)
            commands.append(.leReadLocalSupportedFeatures)
        case .leReadLocalSupportedFeatures:
            if let f = try complete?.decode(HCILELocalSupportedFeatures.self) { controller.leFeatures = f.features }
            chooseAdvertising(commands: &commands)
            return .advertisingChosen
        case .leReadNumberOfSupportedAdvertisingSets:
            if let n = try complete?.decode(HCINumberOfSupportedAdvertisingSets.self),
                case .extended(_, let length) = controller.advertisingCommands
            {
                controller.advertisingCommands = .extended(sets: Int(n.numberOfSupportedAdvertisingSets), maximumDataLength: length)
            }
        case .leReadMaximumAdvertisingDataLength:
            if let m = try complete?.decode(HCIMaximumAdvertisingDataLength.self), case .extended(let sets, _) = controller.advertisingCommands {
                controller.advertisingCommands = .extended(sets: sets, maximumDataLength: Int(m.maximumAdvertisingDataLength))
            }
        case .leReadBufferSizeV2:
            if let b = try complete?.decode(HCILEBufferSizeV2.self) {
                return setBuffers(length: Int(b.leACLDataPacketLength), count: Int(b.totalNumLEACLDataPackets), commands: &commands, acl: &acl)
            }
        case .leReadBufferSize:
            if let b = try complete?.decode(HCILEBufferSize.self) {
                return setBuffers(length: Int(b.leACLDataPacketLength), count: Int(b.totalNumLEACLDataPackets), commands: &commands, acl: &acl)
            }
        case .readBufferSize:
            if let b = try complete?.decode(HCIBufferSize.self) {
                guard b.aclDataPacketLength > 0, b.totalNumACLDataPackets > 0 else {
                    return .fatal("the controller reports no ACL data buffers (Read Buffer Size: \(b.totalNumACLDataPackets) × \(b.aclDataPacketLength) bytes)")
                }
                useBuffers(length: Int(b.aclDataPacketLength), count: Int(b.totalNumACLDataPackets), commands: &commands, acl: &acl)
                return .buffersKnown
            }
        default:
            break
        }
        return .none
    }

    /// A command of bring-up failed: true when another takes its place (LE Read Buffer Size
    /// [v2] is not supported everywhere: [v1] then).
    func failed(_ command: HCICommand, commands: inout HCICommandQueue) -> Bool {
        guard command == .leReadBufferSizeV2 else { return false }
        commands.prepend(.leReadBufferSize)
        return true
    }

    /// Legacy or extended advertising, once per reset (Vol 4 Part E §3.1.1): extended when
    /// the controller has the LE Extended Advertising feature (bit 12) and lists the commands,
    /// legacy otherwise. Then the buffers, the event masks and, when extended, its limits.
    private mutating func chooseAdvertising(commands: inout HCICommandQueue) {
        let extended = controller.leFeatures.contains(.extendedAdvertising)
            && Self.extendedAdvertisingCommands.allSatisfy { supportedCommands?.isSupported($0) == true }
        controller.advertisingCommands = extended ? .extended(sets: 1, maximumDataLength: AdvertisingPayloadBuilder.maximumDataLength) : .legacy
        commands.append(supports(.leReadBufferSizeV2) ? .leReadBufferSizeV2 : .leReadBufferSize)
        commands.append(.setEventMask(.lePeripheral))
        commands.append(.leSetEventMask(extended ? .lePeripheralExtendedAdvertising : .lePeripheral))
        if extended {
            commands.append(.leReadNumberOfSupportedAdvertisingSets)
            commands.append(.leReadMaximumAdvertisingDataLength)
        }
    }

    private mutating func setBuffers(length: Int, count: Int, commands: inout HCICommandQueue, acl: inout ACLScheduler) -> Step {
        if length == 0 || count == 0 {
            // No dedicated LE buffers: LE shares the ACL buffers (Vol 4 Part E §7.8.2).
            commands.prepend(.readBufferSize)
            return .none
        }
        useBuffers(length: length, count: count, commands: &commands, acl: &acl)
        return .buffersKnown
    }

    /// The buffers are known: the data length and PHYs we suggest for every link follow.
    private mutating func useBuffers(length: Int, count: Int, commands: inout HCICommandQueue, acl: inout ACLScheduler) {
        controller.aclDataPacketLength = length
        controller.totalACLDataPackets = count
        acl.configure(packetLength: length, buffers: count)
        if case .bringingUp = phase { phase = .bringingUp(buffersKnown: true) }
        let dle = HCICommand.leWriteSuggestedDefaultDataLength(txOctets: 251, txTime: 2120)
        if controller.leFeatures.contains(.dataPacketLengthExtension), supports(dle) { commands.append(dle) }
        let phy = HCICommand.leSetDefaultPHY(allPHYs: 0, txPHYs: 0b11, rxPHYs: 0b11)
        if controller.leFeatures.contains(.le2MPHY), supports(phy) { commands.append(phy) }
    }
}
