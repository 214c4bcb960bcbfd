import GattCore

// What each link's parameters, PHYs and data length are, as the controller reports them
// (LE Connection Update Complete §7.7.65.3, LE Data Length Change §7.7.65.7, LE PHY Update
// Complete §7.7.65.12): kept per connection and reported as `TransportEvent.linkChanged`
// when they change.
extension Host {
    mutating func linkChanged(_ event: HCILEMetaEvent) -> [HostOutput] {
        let handle: UInt16
        let update: LinkParameters
        switch event {
        case .connectionUpdateComplete(let status, let h, let interval, let latency, let timeout):
            let answered = connectionUpdateEnded(h, status: status)
            guard status == .success else { return answered ?? linkProcedureFailed("connection update", handle: h, status: status) }
            handle = h
            update = LinkParameters(connectionInterval: interval, peripheralLatency: latency, supervisionTimeout: timeout)
            // The new parameters first, then the answer to the request that asked for them.
            return linkUpdated(handle, update) + (answered ?? [])
        case .phyUpdateComplete(let status, let h, let tx, let rx):
            guard status == .success else { return linkProcedureFailed("PHY update", handle: h, status: status) }
            handle = h
            update = LinkParameters(txPHY: LEPHY(rawValue: tx), rxPHY: LEPHY(rawValue: rx))
        case .dataLengthChange(let h, let txOctets, _, let rxOctets, _):
            handle = h
            update = LinkParameters(maxTxOctets: txOctets, maxRxOctets: rxOctets)
        default:
            return []
        }
        return linkUpdated(handle, update)
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
