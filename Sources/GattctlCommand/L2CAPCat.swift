import ArgumentParser
import GattControlProtocol
import GattCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

struct L2CAPCat: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cat",
        abstract: "Bridge the next channel a central opens to stdin and stdout.",
        discussion: """
            Waits for a central to open the channel ID, then copies stdin to it (in SDUs of at \
            most the central's MTU) and what it receives to stdout, until the central closes \
            it. At the end of stdin the channel is closed once what was written has left \
            gattd's socket (the central's credits let it go), or when the central closes it.
            """
    )

    @OptionGroup var global: GlobalOptions
    @Argument(help: "The channel's id.") var id: String

    func run() throws {
        try runReportingFailures { () throws(GattctlFailure) in
            signal(SIGPIPE, SIG_IGN)
            let client = try global.connect()
            let channel = try L2CAPListening.listen(client, id)
            StandardStream.error("gattctl: waiting for a central to open \"\(id)\" (PSM \(channel.psm))\n")
            var opened: (ControlL2CAPChannelEvent, Int32)?
            while opened == nil { opened = try L2CAPListening.next(client, timeout: nil) }
            let (event, socket) = opened!
            _ = try? client.request(.l2capUnlisten(channel: id))
            StandardStream.error("gattctl: \(event.central) opened \"\(id)\" (MTU \(event.peerMTU))\n")
            L2CAPListening.makeBlocking(socket)
            try L2CAPListening.bridge(socket, sduLimit: event.peerMTU, receiveLimit: event.mtu)
        }
    }
}
