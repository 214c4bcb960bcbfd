import GattCore

/// The `phy` op's PHY names: `"1m"`, `"2m"`, `"coded"` (no coding preference), `"coded_s2"`,
/// `"coded_s8"`. `{"op":"phy","central":ADDR,"tx":NAME,"rx":NAME}`, or `"phy":NAME` for both.
enum ControlPHY {
    static let names = ["1m", "2m", "coded", "coded_s2", "coded_s8"]

    static func name(_ phy: LEPHY, _ coding: LECodedPHYCoding) -> String {
        guard phy == .leCoded else { return phy.configName }
        switch coding {
        case .noPreference: return "coded"
        case .s2: return "coded_s2"
        case .s8: return "coded_s8"
        }
    }

    static func parse(_ name: String) -> (LEPHY, LECodedPHYCoding) {
        switch name {
        case "2m": (.le2M, .noPreference)
        case "coded": (.leCoded, .noPreference)
        case "coded_s2": (.leCoded, .s2)
        case "coded_s8": (.leCoded, .s8)
        default: (.le1M, .noPreference)
        }
    }

    static func decode(_ o: ControlObjectReader) throws(ControlError) -> ControlCommand {
        let central = try o.string("central")
        let tx: String, rx: String
        if o.has("phy") {
            if o.has("tx") || o.has("rx") { throw ControlError(.invalidValue, "\"phy\" names both directions: leave out \"tx\" and \"rx\"") }
            tx = try o.oneOf("phy", names)
            rx = tx
        } else {
            guard o.has("tx") || o.has("rx") else { throw ControlError(.missingField, "missing \"phy\" (or \"tx\" and \"rx\"): one of \(names.map { "\"\($0)\"" }.joined(separator: ", "))") }
            tx = try o.oneOf("tx", names)
            rx = try o.oneOf("rx", names)
        }
        let (txPHY, txCoding) = parse(tx)
        let (rxPHY, rxCoding) = parse(rx)
        guard txCoding == rxCoding || txCoding == .noPreference || rxCoding == .noPreference else {
            throw ControlError(.invalidValue, "one LE Coded coding for both directions: \"\(tx)\" and \"\(rx)\" differ")
        }
        return .phy(central: central, tx: txPHY, rx: rxPHY, coding: txCoding == .noPreference ? rxCoding : txCoding)
    }
}
