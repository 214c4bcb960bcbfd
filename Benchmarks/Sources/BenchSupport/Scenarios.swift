import GattControlProtocol
import GattCore

/// The configs the benchmarks use, as JSON text.
public enum BenchConfigs {
    /// The database of `scripts/benchmark_gatt.py`: `services` services, each with a
    /// read+notify characteristic (CCCD + User Description) and a read/write one, and a
    /// 1-byte readable "small" in the first; plus "stream", the 20-byte notify
    /// characteristic of `scripts/benchmark_notify.py`, in a last service. 100 services:
    /// 715 attributes with GAP and GATT (+3 for "stream").
    public static func services(_ services: Int) -> [UInt8] {
        var s = #"{"name":"bench","advertising":{"local_name":"bench","interval_ms":[20,30]},"services":["#
        for index in 0..<services {
            let i = hex4(index)
            if index > 0 { s += "," }
            s += #"{"uuid":"6e4b\#(i)-b5a3-f393-e0a9-e50e24dcca9e","characteristics":["#
            s += #"{"uuid":"6e4c\#(i)-b5a3-f393-e0a9-e50e24dcca9e","properties":["read","notify"],"value":{"hex":"00"},"user_description":"sensor \#(index)"},"#
            s += #"{"uuid":"\#(hex4(0x2A6E + index % 2).uppercased())","properties":["read","write"],"value":{"hex":"0102"}}"#
            if index == 0 { s += #",{"id":"small","uuid":"2A19","properties":["read"],"value":{"hex":"64"}}"# }
            s += "]}"
        }
        s += #",{"uuid":"6e400001-b5a3-f393-e0a9-e50e24dcca9e","characteristics":[{"id":"stream","uuid":"6e400003-b5a3-f393-e0a9-e50e24dcca9e","properties":["notify"],"max_length":244}]}"#
        s += "]}"
        return Array(s.utf8)
    }

    static func hex4(_ n: Int) -> String {
        let h = String(n, radix: 16)
        return String(repeating: "0", count: 4 - h.count) + h
    }
}

/// One central connected to the 100-service database through `CoreStack` (the H4 host, or the
/// kernel's rules).
public struct Scenario {
    public var stack: CoreStack
    public let database: GATTDatabase
    /// Index of "stream" and the handles of its CCCD, and of "small"'s value.
    public let stream: CharacteristicIndex
    public let smallHandle: UInt16

    /// `mtu`: exchanged first when above 23. `subscribe`: the central enables notifications of "stream".
    public init(services: Int = 100, transport: CoreStack.Transport = .h4, mtu: Int = 23, aclBuffer: UInt16 = 27, subscribe: Bool = true) {
        stack = CoreStack(config: BenchConfigs.services(services), transport: transport, aclBuffer: aclBuffer)
        database = stack.core.att.database
        guard let stream = database.characteristicIndex(named: "stream"),
              let small = database.characteristicIndex(named: "small")
        else { fatalError("benchmark setup: no \"stream\" or \"small\"") }
        self.stream = stream
        smallHandle = database[small].valueHandle.rawValue
        if mtu > 23 {
            stack.receive(att: [0x02, UInt8(mtu & 0xFF), UInt8(mtu >> 8)])  // Exchange MTU Request
        }
        if subscribe {
            guard let cccd = database[stream].cccdHandle?.rawValue else { fatalError("benchmark setup: \"stream\" has no CCCD") }
            stack.receive(att: [0x12, UInt8(cccd & 0xFF), UInt8(cccd >> 8), 0x01, 0x00])  // Write Request: notifications on
        }
        stack.resetCounters()
    }

    /// One notification of `value` to the central, down to its H4 packets and their
    /// completion (or its PDU on the kernel's socket); returns the bytes written.
    public mutating func notify(_ value: [UInt8]) -> Int {
        let before = stack.sentBytes
        guard case .queued = stack.notify(characteristic: stream, value: value) else { fatalError("benchmark: notify was not queued") }
        return stack.sentBytes - before
    }

    /// One Read Request of "small" (1 byte), from ACL in to the Read Response's H4 packet.
    public mutating func read() -> Int {
        let before = stack.sentBytes
        stack.receive(att: [0x0A, UInt8(smallHandle & 0xFF), UInt8(smallHandle >> 8)])
        return stack.sentBytes - before
    }

    /// Read By Type Request over the whole database (0x0001–0xFFFF) for `type` (16-bit).
    public mutating func readByType(_ type: UInt16, from start: UInt16 = 0x0001) -> Int {
        let before = stack.sentBytes
        stack.receive(att: [0x08, UInt8(start & 0xFF), UInt8(start >> 8), 0xFF, 0xFF, UInt8(type & 0xFF), UInt8(type >> 8)])
        return stack.sentBytes - before
    }
}

/// The control request line of `scripts/benchmark_notify.py`'s pusher (20 bytes).
public enum BenchControl {
    public static let notifyLine: [UInt8] = Array(#"{"op":"notify","characteristic":"stream","value":{"hex":"2a000000000102030405060708090a0b0c0d0e0f"},"id":12345}"#.utf8)
}
