import Benchmark
import BenchSupport
import GattControlProtocol
import GattCore

// gattd's sans-I/O paths under package-benchmark (docs/benchmarks.md, "Micro-benchmarks").
// Instructions need hardware counters (not available in every VM: `perf stat -e
// instructions true` tells); scripts/benchmark-core counts them with callgrind instead.
let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(
        metrics: [.wallClock, .cpuTotal, .mallocCountTotal, .instructions],
        // 1,000 operations per sample (metrics are reported per operation): a sample of one
        // would measure a fresh scenario's first, cold operation.
        scalingFactor: .kilo,
        maxDuration: .seconds(2),
        maxIterations: 1_000)
    let value20: [UInt8] = Array(0..<20)
    let value244: [UInt8] = (0..<244).map { UInt8($0 & 0xFF) }

    Benchmark("notify 20 B → H4 bytes (ATT server + host, ACL 27)") { benchmark in
        var s = Scenario()
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations { blackHole(s.notify(value20)) }
    }
    Benchmark("notify 244 B → H4 bytes (MTU 247, ACL 27: 10 fragments)") { benchmark in
        var s = Scenario(mtu: 247)
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations { blackHole(s.notify(value244)) }
    }
    Benchmark("Read Request → Read Response (1 B, H4 in → H4 out)") { benchmark in
        var s = Scenario(subscribe: false)
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations { blackHole(s.read()) }
    }
    Benchmark("notify 20 B → the kernel's ATT socket (ATT server + kernel rules)") { benchmark in
        var s = Scenario(transport: .kernel)
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations { blackHole(s.notify(value20)) }
    }
    Benchmark("Read Request → Read Response (1 B, the kernel's ATT socket)") { benchmark in
        var s = Scenario(transport: .kernel, subscribe: false)
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations { blackHole(s.read()) }
    }
    Benchmark("Read By Type (characteristics) over 718 attributes") { benchmark in
        var s = Scenario(subscribe: false)
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations { blackHole(s.readByType(0x2803)) }
    }
    Benchmark("Read By Type, absent type (whole 718-attribute scan)") { benchmark in
        var s = Scenario(subscribe: false)
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations { blackHole(s.readByType(0x2AFF)) }
    }
    Benchmark("config load, 100 services (parse + database)", configuration: .init(scalingFactor: .one, maxIterations: 200)) { benchmark in
        let text = BenchConfigs.services(100)
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            blackHole(try? ConfigLoader.load(data: text).gatt.makeDatabase())
        }
    }
    Benchmark("control request parse, notify (fast path)") { benchmark in
        for _ in benchmark.scaledIterations { blackHole(ControlRequest.decodeNotify(BenchControl.notifyLine)) }
    }
    Benchmark("control request parse, notify (general decoder)") { benchmark in
        for _ in benchmark.scaledIterations { blackHole(try? ControlRequest.decode(BenchControl.notifyLine)) }
    }
}
