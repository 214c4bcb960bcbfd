import GattControlProtocol
import GattCore

// `pairing_respond`, `bonds`, `unbond`: the control socket's side of pairing and bonds.
extension ControlDispatcher {
    static func pairing(_ command: ControlCommand, on p: any PeripheralControl) throws(ControlError) -> ControlReply {
        switch command {
        case .pairingRespond(let central, let answer):
            let address = try central.map { c throws(ControlError) in try Self.address(c, code: .unknownCentral) }
            switch p.respondToPairing(central: address, accept: answer.accept, passkey: answer.passkey, confirm: answer.confirm) {
            case nil: return .success
            case .unknownCentral: throw ControlError(.unknownCentral, "no central \(address?.description ?? "") is connected")
            case .refused(let why): throw ControlError(.noPairingPrompt, why)
            case .ambiguous(let n):
                throw ControlError(n == 0 ? .noPairingPrompt : .missingField, n == 0 ? "no pairing prompt is waiting" : "\(n) pairing prompts are waiting; name the \"central\"")
            }
        case .bonds:
            return .bonds(p.bondList.map { s in
                ControlBond(
                    central: s.bond.address, addressType: s.bond.addressType, authenticated: s.bond.authenticated,
                    secureConnections: s.bond.secureConnections, keySize: s.bond.keySize, irk: s.bond.peerIRK != nil,
                    created: Int(s.created), lastSeen: s.lastSeen.map { Int($0) })
            })
        case .unbond(let central):
            let a = try Self.address(central, code: .invalidValue)
            guard p.unbond(a) else { throw ControlError(.unknownBond, "no bond with \(a)") }
            return .success
        default:
            return .success
        }
    }

    private static func address(_ text: String, code: ControlErrorCode) throws(ControlError) -> BluetoothAddress {
        guard let a = BluetoothAddress(text) else {
            throw ControlError(code, "\"\(text)\" is not a Bluetooth address (AA:BB:CC:DD:EE:FF)")
        }
        return a
    }
}
