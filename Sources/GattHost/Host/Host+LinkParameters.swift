import GattCore

// What each link's parameters, PHYs and data length are, as the controller reports them
// (LE Connection Update Complete §7.7.65.3, LE Data Length Change §7.7.65.7, LE PHY Update
// Complete §7.7.65.12): kept per connection and reported as `TransportEvent.linkChanged`
// when they change.
extension Host {
    mutating func linkChanged(_ event: HCILEMetaEvent) -> [HostOutput] {
        // The new values first, then the answer to the request that asked for them.
        switch event {
        case .connectionUpdateComplete(let status, let h, let interval, let latency, let timeout):
            let answered = connectionUpdateEnded(h, status: status, new: (interval, latency, timeout))
            guard status == .success else { return answered ?? linkProcedureFailed("connection update", handle: h, status: status) }
            let update = LinkParameters(connectionInterval: interval, peripheralLatency: latency, supervisionTimeout: timeout)
            return linkUpdated(h, update) + (answered ?? [])
        case .phyUpdateComplete(let status, let h, let tx, let rx):
            let answered = phyUpdateEnded(h, status: status)
            guard status == .success else { return answered ?? linkProcedureFailed("PHY update", handle: h, status: status) }
            return linkUpdated(h, LinkParameters(txPHY: LEPHY(rawValue: tx), rxPHY: LEPHY(rawValue: rx))) + (answered ?? [])
        case .dataLengthChange(let h, let txOctets, _, let rxOctets, _):
            return linkUpdated(h, LinkParameters(maxTxOctets: txOctets, maxRxOctets: rxOctets))
        default:
            return []
        }
    }

    private mutating func linkUpdated(_ handle: UInt16, _ update: LinkParameters) -> [HostOutput] {
        guard let old = links[handle] else { return [] }
        let link = old.merging(update)
        guard link != old else { return [] }
        links[handle] = link
        return [.event(.transport(.linkChanged(ConnectionID(handle), link)))]
    }

    /// A procedure on the link ended without a change (the central refused, or it timed out).
    private func linkProcedureFailed(_ procedure: String, handle: UInt16, status: HCIStatus) -> [HostOutput] {
        guard connections[handle] != nil else { return [] }
        return [.event(.warning("connection \(handle): \(procedure) failed: \(status)"))]
    }
}
