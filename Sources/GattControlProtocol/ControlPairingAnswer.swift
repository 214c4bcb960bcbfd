import GattCore

/// The answer of `pairing_respond`: any of `accept`, `passkey`, `confirm` (at least one).
public struct ControlPairingAnswer: Sendable, Equatable {
    public var accept: Bool?
    /// 0–999999.
    public var passkey: UInt32?
    public var confirm: Bool?
    public init(accept: Bool? = nil, passkey: UInt32? = nil, confirm: Bool? = nil) {
        self.accept = accept
        self.passkey = passkey
        self.confirm = confirm
    }

    var fields: [(String, JSONText)] {
        var m: [(String, JSONText)] = []
        if let accept { m.append(("accept", .bool(accept))) }
        if let passkey { m.append(("passkey", .int(Int(passkey)))) }
        if let confirm { m.append(("confirm", .bool(confirm))) }
        return m
    }

    static func decode(_ o: ControlObjectReader) throws(ControlError) -> ControlPairingAnswer {
        var a = ControlPairingAnswer()
        if o.has("accept") { a.accept = try o.bool("accept") }
        if o.has("confirm") { a.confirm = try o.bool("confirm") }
        if o.has("passkey") {
            let n = try o.unsigned("passkey")
            guard n <= 999_999 else { throw ControlError(.invalidValue, "\(o.path("passkey")) must be 0 to 999999, got \(n)") }
            a.passkey = UInt32(n)
        }
        guard a != ControlPairingAnswer() else {
            throw ControlError(.missingField, "missing \"accept\", \"passkey\" or \"confirm\"")
        }
        return a
    }
}
