import GattCore

extension PreferredConnectionParameters {
    /// The L2CAP Connection Parameter Update Request carrying these parameters.
    public func updateRequest(identifier: UInt8) -> LESignallingPDU {
        LESignallingPDU(identifier: identifier, command: .connectionParameterUpdateRequest(connectionParameters))
    }
}
