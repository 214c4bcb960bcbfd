import GattCore

/// The H4 transports' sans-I/O half, as the daemon's stack runs it (`PeripheralStack<H4Host>`):
/// the `Host`, and what it keeps across controller resets (the config's host settings, our IRK,
/// the bonds, the channel servers, Enhanced ATT). Its shell (GattTransport's
/// `H4PeripheralTransport`) only moves packets: it feeds what it reads in (`HostShell.runHost`)
/// and writes what comes out.
public struct H4Host {
    /// The host of the current link to the controller (a fresh, idle one between links).
    public var host: Host
    private var configuration: HostConfiguration
    private var bonds: [Bond] = []
    private var channelServers: [L2CAPChannelServer] = []
    private var enhancedATT = false

    public init(configuration: GattConfiguration) {
        self.init(host: HostConfiguration(configuration))
    }

    /// A host with these settings (a test's or fuzz target's, built by hand).
    public init(host configuration: HostConfiguration) {
        self.configuration = configuration
        self.host = Host(configuration: configuration)
    }

    /// A link to the controller is up: a fresh host with the kept settings resets and brings
    /// it up (`.ready` follows).
    public mutating func start(now: Duration) -> [HostOutput] {
        idle()
        return host.start(now: now)
    }

    /// A packet the shell read from the controller.
    public mutating func receive(_ packet: H4Packet, now: Duration) -> [HostOutput] { host.receive(packet, now: now) }

    /// The link is gone: a fresh host that has nothing to do (no deadline) until `start`.
    public mutating func idle() {
        host = Host(configuration: configuration)
        host.setBonds(bonds)
        host.setL2CAPChannelServers(channelServers)
        host.setEnhancedATT(enhancedATT)
    }

    public mutating func setBonds(_ bonds: [Bond]) {
        self.bonds = bonds
        host.setBonds(bonds)
    }

    /// Our IRK: identity distribution and private addresses, from the next link on.
    public mutating func setLocalIRK(_ irk: [UInt8]) { configuration.localIRK = irk }

    public mutating func setEnhancedATT(_ enabled: Bool) {
        enhancedATT = enabled
        host.setEnhancedATT(enabled)
    }

    public mutating func setL2CAPChannelServers(_ servers: [L2CAPChannelServer]) {
        channelServers = servers
        host.setL2CAPChannelServers(servers)
    }

    /// Reload: new links use the new security settings; links already up keep theirs.
    public mutating func configure(_ new: GattConfiguration, now: Duration) -> [HostOutput] {
        let irk = configuration.localIRK
        configuration = HostConfiguration(new)
        configuration.localIRK = irk
        return host.updateConfiguration(configuration, now: now)
    }
}

/// The daemon's stack runs the H4 host itself (`PeripheralStack<H4Host>`): the seam's calls go
/// to the `Host` in place, the settings below it are kept here too (for the next link's host).
extension H4Host: BelowSeam {
    public static func route(_ output: HostOutput) -> BelowSeamRoute { Host.route(output) }

    public mutating func send(_ pdu: [UInt8], on bearer: BearerID) { host.send(pdu, on: bearer) }
    public mutating func closeEnhancedBearer(_ id: BearerID, now: Duration) -> [HostOutput] { host.closeEnhancedBearer(id, now: now) }
    public mutating func flush(now: Duration) -> [HostOutput] { host.flush(now: now) }
    public mutating func setAdvertising(_ sets: [AdvertisingSet], now: Duration) -> [HostOutput] { host.setAdvertising(sets, now: now) }
    public mutating func disconnect(_ id: ConnectionID, reason: HCIStatus, now: Duration) -> [HostOutput] {
        host.disconnect(id, reason: reason, now: now)
    }
    public mutating func requestSecurity(_ id: ConnectionID, level: SecurityLevel, reason: ATTError, now: Duration) -> [HostOutput] {
        host.requestSecurity(id, level: level, reason: reason, now: now)
    }
    public mutating func respondToPairing(_ id: ConnectionID, _ answer: PairingUserAnswer, now: Duration) -> [HostOutput] {
        host.respondToPairing(id, answer, now: now)
    }
    public mutating func requestLink(_ id: ConnectionID, _ request: LinkRequest, now: Duration) -> [HostOutput] {
        host.requestLink(id, request, now: now)
    }
    public mutating func cancelLinkRequest(_ id: ConnectionID, _ kind: LinkRequestKind, now: Duration) -> [HostOutput] {
        host.cancelLinkRequest(id, kind, now: now)
    }
    public mutating func answerGATT(_ id: GATTAccessID, _ result: Result<[UInt8], ATTError>, now: Duration) -> [HostOutput] { [] }
    public mutating func updateGATT(_ handle: AttributeHandle, _ value: [UInt8], now: Duration) -> [HostOutput] { [] }
    public mutating func tick(now: Duration) -> [HostOutput] { host.tick(now: now) }
    /// Read in place: a getter called on the stored host copies the whole `Host` first.
    public var nextDeadline: Duration? { mutating get { Self.nextDeadline(of: &host) } }
    private static func nextDeadline(of host: inout Host) -> Duration? { host.nextDeadline }
}
