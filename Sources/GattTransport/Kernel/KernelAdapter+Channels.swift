import GattCore

// Listening for channels, and the channels the kernel accepted (`KernelBearers+Channels`).
extension KernelAdapter {
    /// Accepted EATT channels or app channels wait this many times, 20 ms apart, for their link.
    static let channelLinkAttempts = 10

    /// Listen for Enhanced ATT (where the kernel can) or stop; bearers already open stay.
    public mutating func setEnhancedATT(_ enabled: Bool) {
        enhancedATT = enabled
        if lifecycle.isReady { outbox.append(.listen(servers: channelServers, enhancedATT: enhancedATT)) }
    }

    /// Listen on exactly these servers' PSMs while the adapter is up (now, and at every open);
    /// the kernel refuses other PSMs (LE_PSM not supported). Accepted channels stay open.
    public mutating func setL2CAPChannelServers(_ servers: [L2CAPChannelServer]) {
        channelServers = servers
        if lifecycle.isReady { outbox.append(.listen(servers: channelServers, enhancedATT: enhancedATT)) }
    }

    /// A channel the kernel accepted on a listening socket (EATT's, or an app server's).
    mutating func channelAccepted(_ socket: KernelSocketID, _ channel: KernelWaitingChannel, now: Duration) -> [KernelAction] {
        var channel = channel
        channel.attemptsLeft = Self.channelLinkAttempts
        return bearers.findLink(socket, channel, adapterReady: lifecycle.isReady, now: now, timers: &timers)
    }

    /// Looks again for a waiting channel's link.
    mutating func findChannelLink(_ socket: KernelSocketID, now: Duration) -> [KernelAction] {
        guard var channel = bearers.waitingChannels.removeValue(forKey: socket) else { return [] }
        channel.attemptsLeft -= 1
        return bearers.findLink(socket, channel, adapterReady: lifecycle.isReady, now: now, timers: &timers)
    }
}
