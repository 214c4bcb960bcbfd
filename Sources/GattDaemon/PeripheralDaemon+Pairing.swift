import GattCore

// Pairing and bonds for the control socket (`pairing_respond`, `gattctl bonds`, `gattctl
// unbond`): the services' answers (`PairingService`, `BondService`).
extension PeripheralDaemon {
    public func respondToPairing(central: BluetoothAddress?, accept: Bool?, passkey: UInt32?, confirm: Bool?) -> PairingAnswerFailure? {
        pairing.respond(central: central, accept: accept, passkey: passkey, confirm: confirm)
    }

    /// The bonds, oldest first.
    public var bondList: [StoredBond] { bonds.list }

    /// Forgets the bond of `address` and disconnects its central (`BondService.unbond`).
    public func unbond(_ address: BluetoothAddress) -> Bool { bonds.unbond(address) }
}
