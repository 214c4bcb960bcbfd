import GattCore

/// What a credit-based channel tells the layer above (`HostEvent.channel`).
public enum CreditBasedChannelEvent: Sendable, Equatable {
    /// A central opened a channel to `server` (`L2CAPChannelServer.id`). `peerMTU`: the
    /// largest SDU it takes; `mtu`: the largest we take.
    case opened(CreditBasedChannelID, server: String, psm: UInt16, peerMTU: Int, mtu: Int)
    /// A whole SDU from the central; its credits go back once `consumed(on:)` says so.
    case received(CreditBasedChannelID, [UInt8])
    /// The channel may take one more SDU (`send(sdu:on:)`): the last one left, the central gave credits.
    case ready(CreditBasedChannelID)
    /// The central disconnected the channel, broke its rules, or the link dropped.
    case closed(CreditBasedChannelID, reason: String)
}
