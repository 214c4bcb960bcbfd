import GattCore
import Testing

@testable import GattTransport

#if canImport(Glibc)
import Glibc
#endif

/// Enhanced ATT on the kernel transport: whether the kernel offers it (`enable_ecred`, the
/// PSM 0x0027 bind), when the listening socket opens and closes, and what each accepted
/// channel's bearer is. The sockets themselves run in scripts/kernel-vm-test.
@Suite("Kernel Enhanced ATT")
struct KernelEnhancedATTTests {
    /// A file holding `text`, removed after `body`.
    static func withParameterFile<T>(_ text: String, _ body: (String) -> T) -> T {
        var template = Array("/tmp/gattd-enable-ecred-XXXXXX".utf8CString)
        let fd = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        precondition(fd >= 0)
        let path = template.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        let bytes = Array(text.utf8)
        _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        close(fd)
        defer { unlink(path) }
        return body(path)
    }

    // MARK: - enable_ecred

    @Test func parameterYIsEnabled() {
        #expect(Self.withParameterFile("Y\n") { KernelECREDParameter.read(path: $0) } == .enabled)
    }

    @Test func parameterNIsDisabled() {
        #expect(Self.withParameterFile("N\n") { KernelECREDParameter.read(path: $0) } == .disabled)
    }

    /// A kernel before 5.7 has no such parameter: unavailable, saying which file and why.
    @Test func missingParameterIsUnavailable() {
        let result = KernelECREDParameter.read(path: "/nonexistent/enable_ecred")
        guard case .unavailable(let why) = result else {
            Issue.record("got \(result)")
            return
        }
        #expect(why.contains("/nonexistent/enable_ecred"))
        #expect(why.contains("Linux before 5.7"))
    }

    @Test func unexpectedValueIsUnavailable() {
        let result = Self.withParameterFile("maybe\n") { KernelECREDParameter.read(path: $0) }
        guard case .unavailable(let why) = result else {
            Issue.record("got \(result)")
            return
        }
        #expect(why.contains("\"maybe\""))
    }

    // MARK: - Support

    /// enable_ecred off: unsupported, the PSM is not even tried, and the reason says how to turn it on.
    @Test func disabledParameterIsUnsupportedWithoutBinding() {
        var tried = false
        let support = KernelEnhancedATTSupport.decide(.disabled) {
            tried = true
            return nil
        }
        #expect(!tried)
        guard case .unsupported(let why) = support else {
            Issue.record("got \(support)")
            return
        }
        #expect(why.contains("echo Y > /sys/module/bluetooth/parameters/enable_ecred"))
    }

    @Test func enabledAndBindableIsSupported() {
        #expect(KernelEnhancedATTSupport.decide(.enabled) { nil } == .supported)
    }

    /// PSM 0x0027 is below 0x0080: without CAP_NET_BIND_SERVICE the kernel answers EACCES.
    @Test func bindWithoutCapabilityIsUnsupportedNamingIt() {
        let support = KernelEnhancedATTSupport.decide(.enabled) { KernelTransportError(.permissionDenied, "EACCES") }
        guard case .unsupported(let why) = support else {
            Issue.record("got \(support)")
            return
        }
        #expect(why.contains("CAP_NET_BIND_SERVICE"))
    }

    @Test func otherBindFailureIsUnsupportedWithTheError() {
        let support = KernelEnhancedATTSupport.decide(.enabled) { KernelTransportError(.systemCall(errno: EINVAL), "setsockopt: Invalid argument") }
        #expect(support == .unsupported("cannot bind PSM 0x0027 (EATT) in Enhanced Credit Based mode: setsockopt: Invalid argument"))
    }

    /// The check runs once: the parameter file is read at the first question only.
    @Test func checkDecidesOnceAndReportsOnce() {
        var reports: [KernelEnhancedATTSupport] = []
        let (first, second) = Self.withParameterFile("N\n") { path -> (KernelEnhancedATTSupport, KernelEnhancedATTSupport) in
            let check = KernelEnhancedATTCheck(parameterPath: path)
            let first = check.support { reports.append($0) }
            unlink(path)
            return (first, check.support { reports.append($0) })
        }
        #expect(first == second)
        #expect(reports == [first])
        guard case .unsupported(let why) = first else {
            Issue.record("got \(first)")
            return
        }
        #expect(why.contains("= N"))
    }

    // MARK: - Listening socket

    @Test func listensWhenWantedSupportedAndReady() {
        #expect(KernelEnhancedATTPlan(wanted: true, support: .supported, adapterReady: true, listening: false) == .listen)
        #expect(KernelEnhancedATTPlan(wanted: true, support: .supported, adapterReady: true, listening: true) == .nothing)
    }

    /// setEnhancedATT(false) (a reload with "eatt": false) closes the listener.
    @Test func stopsListeningWhenNotWanted() {
        #expect(KernelEnhancedATTPlan(wanted: false, support: .supported, adapterReady: true, listening: true) == .stopListening)
        #expect(KernelEnhancedATTPlan(wanted: false, support: .supported, adapterReady: true, listening: false) == .nothing)
    }

    @Test func neverListensUnsupportedOrBeforeOpen() {
        #expect(KernelEnhancedATTPlan(wanted: true, support: .unsupported("N"), adapterReady: true, listening: false) == .nothing)
        #expect(KernelEnhancedATTPlan(wanted: true, support: .supported, adapterReady: false, listening: false) == .nothing)
    }

    // MARK: - Bearers

    /// The bearer's channel is the kernel's local CID; its ATT_MTU the smaller L2CAP MTU.
    @Test func bearerIsTheLocalCIDWithTheSmallerMTU() {
        let plan = KernelEnhancedBearerPlan(connection: ConnectionID(0x0040), localCID: 0x0041, taken: [], ourMTU: 517, peerMTU: 247)
        #expect(plan.id == BearerID(ConnectionID(0x0040), channel: 0x0041))
        #expect(plan.mtu == 247)
        #expect(KernelEnhancedBearerPlan(connection: ConnectionID(1), localCID: 0x0041, taken: [], ourMTU: 517, peerMTU: 2048).mtu == 517)
    }

    /// The central reconfigured the channel (the kernel answered it): the bearer's ATT_MTU
    /// follows when it grows, up to ours; never shrinks (Vol 3 Part A §4.27).
    @Test func aReconfiguredChannelGrowsTheBearersATTMTU() {
        #expect(KernelEnhancedBearerPlan.reconfigured(current: 64, ourMTU: 517, peerMTU: 300) == 300)
        #expect(KernelEnhancedBearerPlan.reconfigured(current: 64, ourMTU: 517, peerMTU: 2048) == 517)
        #expect(KernelEnhancedBearerPlan.reconfigured(current: 300, ourMTU: 517, peerMTU: 300) == nil)
        #expect(KernelEnhancedBearerPlan.reconfigured(current: 300, ourMTU: 517, peerMTU: 100) == nil)
        #expect(KernelEnhancedBearerPlan.reconfigured(current: 64, ourMTU: 517, peerMTU: nil) == nil)
    }

    /// Without a CID (or one the connection has, or the fixed channel's) the first free one from 0x0040.
    @Test func bearerWithoutUsableCIDGetsAFreeOne() {
        let c = ConnectionID(7)
        #expect(KernelEnhancedBearerPlan(connection: c, localCID: nil, taken: [0x0040, 0x0041], ourMTU: 517, peerMTU: 64).id.channel == 0x0042)
        #expect(KernelEnhancedBearerPlan(connection: c, localCID: 0x0004, taken: [], ourMTU: 517, peerMTU: 64).id.channel == 0x0040)
        #expect(KernelEnhancedBearerPlan(connection: c, localCID: 0x0041, taken: [0x0041], ourMTU: 517, peerMTU: 64).id.channel == 0x0040)
        #expect(KernelEnhancedBearerPlan(connection: c, localCID: nil, taken: [], ourMTU: 517, peerMTU: 64).id.isEnhanced)
    }

    /// MTUs the kernel did not tell: ours is 517, the central's then the same.
    @Test func unknownMTUsFallBackToOurs() {
        #expect(KernelEnhancedBearerPlan(connection: ConnectionID(1), localCID: 0x40, taken: [], ourMTU: nil, peerMTU: nil).mtu == 517)
        #expect(KernelEnhancedBearerPlan(connection: ConnectionID(1), localCID: 0x40, taken: [], ourMTU: nil, peerMTU: 100).mtu == 100)
    }

    /// The listening socket's settings: PSM 0x0027, encrypted links only (BT_SECURITY medium), MTU 517.
    @Test func listenerSettings() {
        #expect(KernelEnhancedATT.server.psm == 0x0027)
        #expect(KernelEnhancedATT.server.security.kernelLevel == 2)
        #expect(KernelEnhancedATT.server.mtu == 517)
        #expect(psmHex(0x27) == "0027")
    }
}
