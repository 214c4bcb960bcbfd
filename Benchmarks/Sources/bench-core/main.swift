import BenchSupport
import GattControlProtocol
import GattCore

#if canImport(Glibc)
import Glibc
#endif

/// One benchmark scenario in a plain single-threaded loop, for counting instructions with
/// callgrind (no hardware counters here); scripts/benchmark-core runs each scenario twice
/// (N and 2N iterations) and reports (Ir(2N) − Ir(N)) / N: instructions per operation,
/// setup excluded.
///
///   bench-core SCENARIO ITERATIONS
///   scenarios: notify20 notify244 notify20-mtu247 read read-by-type read-by-type-absent
///              notify20-kernel notify244-kernel read-kernel (the kernel transport's rules
///              below the core instead of the H4 host)
///              config-load control-parse-fast control-parse-general
let arguments = CommandLine.arguments
guard arguments.count == 3, let iterations = Int(arguments[2]) else {
    print("usage: bench-core SCENARIO ITERATIONS")
    exit(2)
}
var sink = 0
let value20: [UInt8] = Array(0..<20)
let value244: [UInt8] = (0..<244).map { UInt8($0 & 0xFF) }

switch arguments[1] {
case "notify20":
    var s = Scenario()
    for _ in 0..<iterations { sink &+= s.notify(value20) }
case "notify20-mtu247":
    var s = Scenario(mtu: 247)
    for _ in 0..<iterations { sink &+= s.notify(value20) }
case "notify244":
    var s = Scenario(mtu: 247)
    for _ in 0..<iterations { sink &+= s.notify(value244) }
case "notify244-acl251":
    var s = Scenario(mtu: 247, aclBuffer: 251)
    for _ in 0..<iterations { sink &+= s.notify(value244) }
case "notify20-kernel":
    var s = Scenario(transport: .kernel)
    for _ in 0..<iterations { sink &+= s.notify(value20) }
case "notify244-kernel":
    var s = Scenario(transport: .kernel, mtu: 247)
    for _ in 0..<iterations { sink &+= s.notify(value244) }
case "read-kernel":
    var s = Scenario(transport: .kernel, subscribe: false)
    for _ in 0..<iterations { sink &+= s.read() }
case "read":
    var s = Scenario(subscribe: false)
    for _ in 0..<iterations { sink &+= s.read() }
case "read-by-type":
    var s = Scenario(subscribe: false)
    for _ in 0..<iterations { sink &+= s.readByType(0x2803) }
case "read-by-type-absent":
    var s = Scenario(subscribe: false)
    for _ in 0..<iterations { sink &+= s.readByType(0x2A00 + 0xFF) }
case "config-load":
    let text = BenchConfigs.services(100)
    for _ in 0..<iterations {
        guard let c = try? ConfigLoader.load(data: text) else { fatalError("config does not load") }
        sink &+= c.gatt.makeDatabase().attributes.count
    }
case "control-parse-fast":
    for _ in 0..<iterations {
        guard let r = ControlRequest.decodeNotify(BenchControl.notifyLine) else { fatalError("fast path refused the line") }
        if case .notify(_, let v, _, _) = r.command { sink &+= v.bytes.count }
    }
case "control-parse-general":
    for _ in 0..<iterations {
        guard let r = try? ControlRequest.decode(BenchControl.notifyLine) else { fatalError("the line does not decode") }
        if case .notify(_, let v, _, _) = r.command { sink &+= v.bytes.count }
    }
default:
    print("unknown scenario \(arguments[1])")
    exit(2)
}
print("\(arguments[1]) \(iterations) \(sink)")
