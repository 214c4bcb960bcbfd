import GattControlProtocol
import GattCore
import Logging

/// App L2CAP channels (Core Bluetooth's `publishL2CAPChannel`) in one place: the config's
/// channels and those `publish_l2cap_channel` added, the dynamic PSMs gattd picked for them,
/// and how many programs listen for each (the transport accepts channels to those only).
///
/// Owns `<state-dir>/l2cap.json`: `{"psms":{"id":129,…},"published":[{channel},…]}`. The
/// picked PSMs are kept so a channel keeps its PSM across restarts (a phone app may have
/// cached it); published channels come back after a restart when state restoration is on.
struct L2CAPChannelCoordinator {
    static let fileName = "l2cap.json"

    let directory: SystemStateDirectory?
    /// Published channels are put back at start (state restoration on).
    let restoresPublished: Bool
    let logger: Logger
    /// Dynamic PSMs picked so far, by channel id (written when a new one is picked).
    private(set) var kept: [String: UInt16] = [:]
    private(set) var configured: [L2CAPChannelConfiguration] = []
    private(set) var published: [L2CAPChannelConfiguration] = []
    /// Programs listening, by channel id (from the control server).
    var listeners: [String: Int] = [:]

    init(stateDirectory: String?, restoresPublished: Bool, logger: Logger) {
        directory = stateDirectory.map { SystemStateDirectory($0) }
        self.restoresPublished = restoresPublished
        self.logger = logger
        load()
    }

    var channels: [L2CAPChannelConfiguration] { configured + published }

    func channel(_ id: String) -> L2CAPChannelConfiguration? { channels.first { $0.id == id } }

    /// The servers the transport accepts channels to: those a program listens for.
    var servers: [L2CAPChannelServer] { channels.filter { listeners[$0.id, default: 0] > 0 }.map(\.server) }
    /// What the transport was last told to accept.
    private var accepted: [L2CAPChannelServer] = []

    /// The servers to tell the transport, when they changed since it was last told (nil: they did not).
    mutating func serversToAccept() -> [L2CAPChannelServer]? {
        let servers = servers
        guard servers != accepted else { return nil }
        accepted = servers
        return servers
    }

    var list: [ControlL2CAPChannel] {
        configured.map { Self.control($0, listeners: listeners[$0.id, default: 0], runtime: false) }
            + published.map { Self.control($0, listeners: listeners[$0.id, default: 0], runtime: true) }
    }

    static func control(_ c: L2CAPChannelConfiguration, listeners: Int? = nil, runtime: Bool = false) -> ControlL2CAPChannel {
        ControlL2CAPChannel(id: c.id, psm: c.psm, security: c.security, mtu: c.mtu, listeners: listeners, runtime: runtime)
    }

    /// Takes a (re)loaded config's channels: gives those without a `psm` the PSM picked
    /// before (else a new one, kept); a published channel whose id or PSM the config now uses
    /// is dropped with a warning. A config channel without a `psm` never takes a published
    /// channel's PSM (one published under another id keeps it).
    mutating func adopt(_ configuration: inout GattConfiguration) {
        let declared = Set(configuration.l2capChannels.map(\.id))
        // (Published channels loaded from the file have no PSM yet: theirs is the kept one.)
        let publishedPSMs = published.filter { !declared.contains($0.id) }.compactMap { $0.requestedPSM ?? kept[$0.id] }
        configuration.assignL2CAPPSMs(kept: kept, taken: Set(publishedPSMs))
        configured = configuration.l2capChannels
        let ids = Set(configured.map(\.id))
        let psms = Set(configured.map(\.psm))
        published.removeAll { c in
            guard ids.contains(c.id) || psms.contains(c.psm) else { return false }
            logger.warning("the published L2CAP channel \"\(c.id)\" (PSM \(c.psm)) is dropped: the config now declares \(ids.contains(c.id) ? "a channel with that id" : "a channel on that PSM")")
            return true
        }
        published = L2CAPPSMAssignment.assign(published, kept: kept, taken: psms)
        remember()
    }

    /// `publish_l2cap_channel`: the channel with its PSM, saved before it is answered.
    mutating func publish(_ json: JSONValue) -> Result<L2CAPChannelConfiguration, ControlError> {
        let parsed: L2CAPChannelConfiguration
        switch L2CAPChannelConfiguration.parse(json) {
        case .failure(let errors): return .failure(ControlError(.invalidValue, errors.lines().joined(separator: "; ")))
        case .success(let c): parsed = c
        }
        if channel(parsed.id) != nil {
            return .failure(ControlError(.invalidValue, "channel.id: \"\(parsed.id)\" is already an L2CAP channel"))
        }
        if let psm = parsed.requestedPSM, let owner = channels.first(where: { $0.psm == psm }) {
            return .failure(ControlError(.invalidValue, "channel.psm: PSM \(psm) is already used by the channel \"\(owner.id)\""))
        }
        guard channels.count < 64 else { return .failure(ControlError(.invalidValue, "gattd serves at most 64 L2CAP channels")) }
        let assigned = L2CAPPSMAssignment.assign([parsed], kept: kept, taken: Set(channels.map(\.psm)))[0]
        var next = self
        next.published.append(assigned)
        next.remember()
        do {
            try next.save()
        } catch {
            return .failure(ControlError(.persistFailed, "\(error); the channel is not published"))
        }
        self = next
        return .success(assigned)
    }

    /// `unpublish_l2cap_channel` (channels already open stay open).
    mutating func unpublish(_ id: String) -> ControlError? {
        if configured.contains(where: { $0.id == id }) {
            return ControlError(.unknownChannel, "\"\(id)\" comes from the config; remove it there and reload")
        }
        guard published.contains(where: { $0.id == id }) else {
            return ControlError(.unknownChannel, "no published L2CAP channel \"\(id)\"")
        }
        var next = self
        next.published.removeAll { $0.id == id }
        do {
            try next.save()
        } catch {
            return ControlError(.persistFailed, "\(error); the channel stays published")
        }
        self = next
        return nil
    }

    /// Notes the dynamic PSMs in use (so they are picked again) and writes the file when that
    /// changed something.
    private mutating func remember() {
        var changed = false
        for c in channels where c.requestedPSM == nil && kept[c.id] != c.psm {
            kept[c.id] = c.psm
            changed = true
        }
        if changed {
            do { try save() } catch { logger.warning("\(error); dynamic L2CAP PSMs may differ after a restart") }
        }
    }

    // MARK: - The file

    private mutating func load() {
        guard let directory else { return }
        do {
            guard let bytes = try directory.read(Self.fileName) else { return }
            guard let root = try? JSONParser.parse(bytes), case .object(let members) = root.kind else {
                logger.warning("\(directory.path)/\(Self.fileName) is not valid JSON; L2CAP PSMs are picked again")
                return
            }
            for m in members {
                switch (m.key, m.value.kind) {
                case ("psms", .object(let psms)):
                    for p in psms {
                        if case .number(let n) = p.value.kind, let v = UInt16(n), L2CAPChannelServer.dynamicPSMs.contains(v) { kept[p.key] = v }
                    }
                case ("published", .array(let list)) where restoresPublished:
                    for v in list { if case .success(let c) = L2CAPChannelConfiguration.parse(v) { published.append(c) } }
                default: break
                }
            }
        } catch {
            logger.warning("\(error); L2CAP PSMs are picked again")
        }
    }

    private func save() throws(StateFileError) {
        guard let directory else { return }
        let psms = JSONText.object(kept.sorted { $0.key < $1.key }.map { ($0.key, .int(Int($0.value))) })
        let list = JSONText.array(published.map { c in
            var m: [(String, JSONText)] = [("id", .string(c.id))]
            if let p = c.requestedPSM { m.append(("psm", .int(Int(p)))) }
            m += [("security", .string(c.security.rawValue)), ("mtu", .int(c.mtu))]
            return .object(m)
        })
        try directory.replace(Self.fileName, with: Array((JSONText.object([("psms", psms), ("published", list)]).text + "\n").utf8))
    }
}
