import GattCore

extension SMPAssociationModel {
    /// Selects the model from both sides' Pairing Request/Response features
    /// (§2.3.5.1): with neither MITM flag set it is Just Works; otherwise the IO
    /// capabilities decide (Table 2.8). OOB is never selected (our flag is 0;
    /// the caller refuses a Secure Connections central that sets its OOB flag).
    public static func select(initiator: SMPPairingFeatures, responder: SMPPairingFeatures, secureConnections: Bool) -> Self {
        let mitm = initiator.authenticationRequirements.union(responder.authenticationRequirements).contains(.mitm)
        guard mitm else { return .justWorks }
        return fromIOCapabilities(initiator: initiator.ioCapability, responder: responder.ioCapability, secureConnections: secureConnections)
    }
}
