import ArgumentParser
import GattControlProtocol
import GattCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `gattctl l2cap …`: app L2CAP channels (Core Bluetooth's publishL2CAPChannel).
struct L2CAP: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "l2cap",
        abstract: "Serve, bridge, list and publish app L2CAP channels.",
        subcommands: [L2CAPServe.self, L2CAPCat.self, L2CAPList.self, L2CAPPublish.self, L2CAPUnpublish.self]
    )
}

struct L2CAPList: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "list", abstract: "List the app L2CAP channels.")
    @OptionGroup var global: GlobalOptions

    func run() throws {
        try runReportingFailures { () throws(GattctlFailure) in
            guard case .l2capChannels(let list) = try global.connect().expectOK(.listL2CAPChannels) else {
                throw .reply("gattd's reply has no channels")
            }
            for c in list {
                var parts = [c.id, "psm=\(c.psm)", "security=\(c.security.rawValue)", "mtu=\(c.mtu)"]
                if let n = c.listeners { parts.append("listeners=\(n)") }
                parts.append(c.runtime ? "published" : "config")
                emit(parts.joined(separator: "  "))
            }
        }
    }
}

struct L2CAPPublish: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "publish", abstract: "Publish a channel while gattd runs (gattd picks the PSM unless --psm).")
    @OptionGroup var global: GlobalOptions
    @Argument(help: "The channel's id.") var id: String
    @Option(help: "The PSM (1-255; default: a dynamic one gattd picks and keeps).") var psm: Int?
    @Option(help: "none, encryption or authentication.") var security = "none"
    @Option(help: "The largest SDU gattd takes (23-65535).") var mtu = 2048

    func run() throws {
        try runReportingFailures { () throws(GattctlFailure) in
            var members: [(String, JSONText)] = [("id", .string(id))]
            if let psm { members.append(("psm", .int(psm))) }
            members += [("security", .string(security)), ("mtu", .int(mtu))]
            let json: JSONValue
            do { json = try JSONParser.parse(Array(JSONText.object(members).text.utf8)) } catch { throw .usage("\(error)") }
            guard case .l2capChannel(let c) = try global.connect().expectOK(.publishL2CAPChannel(channel: json)) else {
                throw .reply("gattd's reply has no channel")
            }
            emit("\(c.id)  psm=\(c.psm)")
        }
    }
}

struct L2CAPUnpublish: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "unpublish", abstract: "Unpublish a channel published while gattd runs.")
    @OptionGroup var global: GlobalOptions
    @Argument(help: "The channel's id.") var id: String

    func run() throws {
        try runReportingFailures { () throws(GattctlFailure) in
            try global.connect().expectOK(.unpublishL2CAPChannel(id: id))
        }
    }
}

/// An `l2cap_channel` event's fields.
typealias ControlL2CAPChannelEvent = (central: String, psm: UInt16, mtu: Int, peerMTU: Int)
