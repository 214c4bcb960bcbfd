/// An Improv RPC frame (improv-wifi.com/ble, "RPC Command" and "RPC Result"): command id,
/// data length, data, and a checksum, the low byte of the sum of every byte before it.
struct ImprovFrame: Equatable {
    var command: UInt8
    var data: [UInt8]

    static func checksum(_ bytes: some Sequence<UInt8>) -> UInt8 { bytes.reduce(0, &+) }

    /// The frame's bytes (`data` at most 255 bytes).
    var bytes: [UInt8] {
        let head = [command, UInt8(data.count)] + data
        return head + [Self.checksum(head)]
    }

    /// An RPC Result: the command it answers and a list of strings, each length-prefixed
    /// (a string longer than 255 bytes is cut; the list is cut where the frame would pass 255).
    static func result(_ command: UInt8, strings: [String]) -> ImprovFrame {
        var data: [UInt8] = []
        for s in strings {
            let bytes = Array(s.utf8.prefix(255))
            guard data.count + 1 + bytes.count <= 255 else { break }
            data += [UInt8(bytes.count)] + bytes
        }
        return ImprovFrame(command: command, data: data)
    }

    /// Send Wi-Fi Settings' data: SSID and password, each length-prefixed; nil when malformed.
    static func wifiSettings(_ data: [UInt8]) -> (ssid: String, password: String)? {
        guard let ssidLength = data.first.map(Int.init), data.count >= 1 + ssidLength + 1 else { return nil }
        let ssid = Array(data[1..<1 + ssidLength])
        let passwordLength = Int(data[1 + ssidLength])
        guard data.count == 2 + ssidLength + passwordLength else { return nil }
        let password = Array(data[(2 + ssidLength)...])
        guard !ssid.isEmpty, let s = String(validating: ssid, as: UTF8.self), let p = String(validating: password, as: UTF8.self) else { return nil }
        return (s, p)
    }
}
