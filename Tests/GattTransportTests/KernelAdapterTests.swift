import GattCore
import GattTestFixtures
import Testing

@testable import GattTransport

/// `KernelAdapter`, the kernel transport's rules, in the composition the daemon runs: a
/// `PeripheralStack<KernelAdapter>` over the rules, with a shell that records what it is asked
/// to do and feeds in what the kernel would say (`runKernel`), on the stack's one clock and
/// timer. No kernel: sockets are ids, the kernel's answers are inputs.
@Suite struct KernelAdapterTests {
    static let central = KernelBDAddress(BluetoothAddress("11:22:33:44:55:66")!, type: .leRandom)
    static let link = KernelSocketID(rawValue: 1), channel = KernelSocketID(rawValue: 2)
    static let id = ConnectionID(0x40)
    /// Read Request for the Device Name (handle 3).
    static let read: [UInt8] = [0x0A, 0x03, 0x00]

    /// The shell's half: records the actions and runs the rules in a turn of the stack.
    final class Shell: KernelShell {
        var runKernel: ((_ call: (inout KernelAdapter, Duration) -> [KernelOutput]) -> Void)?
        var actions: [KernelAction] = []
        func perform(_ output: KernelOutput) { actions.append(output.action) }

        /// What the kernel says, fed in (at the stack's `now`).
        func feed(_ call: (inout KernelAdapter, Duration) -> [KernelAction]) {
            runKernel! { rules, now in call(&rules, now).map(KernelOutput.init) }
        }

        /// The recorded actions other than events and log lines, described, then forgotten.
        func take() -> [String] {
            defer { actions = [] }
            return actions.compactMap { a in
                switch a {
                case .event, .log: nil
                case .startReading(let s, let bearer, let from, let readsMTU, _): "read \(s) as \(bearer) security from \(from)\(readsMTU ? " with MTU" : "")"
                case .write(let s, let pdu): "write \(s) \(pdu.hexString)"
                case .close(let s): "close \(s)"
                case .readSecurity(let s): "read security \(s)"
                case .management(.advertising(let op, let set), let session): "advertising \(set) \(op) session \(session ?? 0)"
                case .management(let op, _): "mgmt \(op)"
                default: "\(a)"
                }
            }
        }
    }

    /// The stack, its shell, the core's events, and the clock the shell's calls run at.
    final class Harness {
        let shell = Shell()
        let stack: PeripheralStack<KernelAdapter>
        var events: [String] = []
        var now: Duration = .zero

        init() {
            let core = Peripheral(database: ATTFixture.database(), payloads: PeripheralFixture.payloads, maxConnections: 4)
            stack = PeripheralStack(core: core, below: KernelAdapter(adapterName: "hci0", configuration: GattConfiguration(name: "k")))
            // Wired as the daemon wires it.
            stack.attachShell(shell) { [unowned self] in now }
            stack.onEvent = { [unowned self] e in
                switch e {
                case .connected(let c): events.append("connected \(c.id)")
                case .disconnected(let c, let reason, let detail): events.append("disconnected \(c.id) \(reason) \(detail ?? "")")
                case .securityChanged(let c): events.append("security \(c.id) \(c.security)")
                case .att, .advertisingChanged: break
                default: events.append("\(e)")
                }
            }
        }

        /// The adapter opened (session 1) and the core's advertising registered.
        func open() {
            shell.feed { rules, _ in
                #expect(rules.open() == .start(session: 1))
                return []
            }
            var info = ControllerInfo()
            info.address = PeripheralFixture.address
            shell.feed { rules, _ in rules.opened(session: 1, controller: info, support: nil, description: "test") }
        }

        /// A central's ATT socket (`link`) accepted on handle 0x0040.
        func accept(at time: Duration = .zero) {
            now = time
            shell.feed { rules, now in rules.accepted(socket: KernelAdapterTests.link, handle: 0x0040, peer: KernelAdapterTests.central, security: .low, now: now) }
        }

        /// Runs the stack's timer as the daemon's would: at its deadline.
        func tick() {
            guard let deadline = stack.nextDeadline else {
                Issue.record("no deadline")
                return
            }
            now = deadline
            stack.tick(now: deadline)
        }
    }

    @Test func openingReadiesTheCoreWhichAdvertisesThroughAnInstanceAfterTheKeys() {
        let h = Harness()
        h.open()
        #expect(h.events.contains { $0.hasPrefix("controllerReady") })
        let actions = h.shell.take()
        #expect(actions.first == "listen(servers: [], enhancedATT: false)")
        // The security settings and the bonds go in before any advertising command.
        #expect(actions.count == 4)
        #expect(actions[1].hasPrefix("mgmt applySecurity"))
        #expect(actions[2].hasPrefix("mgmt loadKeys"))
        #expect(actions[3].hasPrefix("advertising primary replace") && actions[3].hasSuffix("session 1"))
    }

    @Test func aCentralsPDUIsAnsweredOnItsSocketAtTheFlush() {
        let h = Harness()
        h.open()
        h.accept()
        #expect(h.events.last == "connected \(Self.id)")
        #expect(h.shell.take().contains("read \(Self.link) as \(BearerID.fixed(Self.id)) security from \(Self.link)"))
        h.shell.feed { rules, _ in rules.received(Self.read, from: Self.link, security: .low, sendMTU: nil) }
        let writes = h.shell.take().filter { $0.hasPrefix("write") }
        #expect(writes.count == 1)
        #expect(writes.first?.hasPrefix("write \(Self.link) 0b") == true, "a Read Response on the link's socket")
        // A PDU on a socket the rules no longer know (closed) goes nowhere.
        h.shell.feed { rules, now in rules.socketClosed(Self.link, why: nil, now: now) }
        h.shell.feed { rules, _ in rules.received(Self.read, from: Self.link, security: .low, sendMTU: nil) }
        #expect(!h.shell.take().contains { $0.hasPrefix("write") })
    }

    @Test func theErrorResponseGoesOutBeforeTheSocketsSecurityIsRaised() {
        // Raising BT_SECURITY holds the socket's writes until the central has paired: an
        // Insufficient Encryption that waited for it would reach a central already encrypted,
        // which then does not retry.
        let h = Harness()
        h.open()
        h.accept()
        _ = h.shell.take()
        let encryptedRead: [UInt8] = [0x0A, 0x17, 0x00]  // ATTFixture's encrypted characteristic
        h.shell.feed { rules, _ in rules.received(encryptedRead, from: Self.link, security: .low, sendMTU: nil) }
        let actions = h.shell.take()
        #expect(actions.count == 2)
        #expect(actions.first?.hasPrefix("write \(Self.link) 01") == true, "the Error Response first")
        #expect(actions.last?.hasPrefix("requestSecurity") == true)
    }

    @Test func aDisconnectionWaitsOnTheStackTimerForItsReason() {
        let h = Harness()
        h.open()
        h.accept()
        h.events = []
        h.now = .seconds(1)
        h.shell.feed { rules, now in rules.socketClosed(Self.link, why: nil, now: now) }
        #expect(h.events.isEmpty, "the HCI reason may come just after the socket's close")
        #expect(h.stack.nextDeadline == .seconds(1) + .milliseconds(100))
        h.tick()
        #expect(h.events == ["disconnected \(Self.id) \(HCIStatus.connectionTimeout) unknown"])
        #expect(h.stack.nextDeadline == nil)
    }

    @Test func aDisconnectionWithItsReasonIsReportedAtOnce() {
        let h = Harness()
        h.open()
        h.accept()
        h.events = []
        h.shell.feed { rules, now in rules.adapterEvent(.disconnectionComplete(status: 0, handle: 0x0040, reason: 0x13), now: now).actions }
        h.shell.feed { rules, now in rules.socketClosed(Self.link, why: nil, now: now) }
        #expect(h.events == ["disconnected \(Self.id) \(HCIStatus(0x13)) "])
        #expect(h.shell.take().contains("close \(Self.link)"))
    }

    @Test func aLinkWithoutAHandleThatTheDaemonDisconnectsEndsAtOnce() {
        // The kernel told no handle, so there is no HCI Disconnect to send: the rules close the
        // socket, and a closed socket reports nothing, so the link must end here.
        let h = Harness()
        h.open()
        h.shell.feed { rules, now in rules.accepted(socket: Self.link, handle: nil, peer: Self.central, security: .low, now: now) }
        let id = ConnectionID(0x1000)
        #expect(h.events.last == "connected \(id)")
        _ = h.shell.take()
        h.events = []
        h.stack.perform([.disconnect(id, reason: .remoteUserTerminatedConnection)], now: h.now)
        #expect(h.shell.take() == ["close \(Self.link)"])
        #expect(h.events == ["disconnected \(id) \(HCIStatus(0x16)) gattd closed the link's ATT socket"])
        // A PDU read before the close goes nowhere.
        h.shell.feed { rules, _ in rules.received(Self.read, from: Self.link, security: .low, sendMTU: nil) }
        #expect(h.shell.take().isEmpty)
        #expect(h.stack.nextDeadline == nil)
    }

    @Test func anEncryptionChangeIsReadAgainUntilTheSocketShowsIt() {
        let h = Harness()
        h.open()
        h.accept()
        _ = h.shell.take()
        h.events = []
        h.shell.feed { rules, now in rules.adapterEvent(.encryptionChanged(status: 0, handle: 0x0040), now: now).actions }
        #expect(h.shell.take() == ["read security \(Self.link)"])
        // The kernel has not updated the socket yet: read again 20 ms later, on the stack's timer.
        h.shell.feed { rules, now in rules.securityRead(socket: Self.link, level: .low, now: now) }
        #expect(h.stack.nextDeadline == h.now + .milliseconds(20))
        h.tick()
        #expect(h.shell.take() == ["read security \(Self.link)"])
        h.shell.feed { rules, now in rules.securityRead(socket: Self.link, level: .medium, now: now) }
        #expect(h.events == ["security \(Self.id) \(SecurityLevel.medium)"])
        #expect(h.stack.nextDeadline == nil)
    }

    @Test func anEnhancedATTChannelAcceptedBeforeItsLinkWaitsForIt() {
        let h = Harness()
        h.open()
        h.shell.feed { rules, _ in
            rules.setEnhancedATT(true)
            return []
        }
        _ = h.shell.take()
        let waiting = KernelWaitingChannel(.enhancedATT, peer: Self.central, handle: 0x0040, localCID: 0x0041, mtu: 517, peerMTU: 100)
        h.shell.feed { rules, now in rules.channelAccepted(Self.channel, waiting, now: now) }
        #expect(h.shell.take().isEmpty)
        h.accept(at: .milliseconds(5))
        _ = h.shell.take()
        h.tick()
        let bearer = BearerID(Self.id, channel: 0x0041)
        #expect(h.shell.take() == ["read \(Self.channel) as \(bearer) security from \(Self.link) with MTU"])
        // The core has the bearer: a PDU on it is answered on the channel's socket.
        h.shell.feed { rules, _ in rules.received(Self.read, from: Self.channel, security: .medium, sendMTU: 100) }
        #expect(h.shell.take().contains { $0.hasPrefix("write \(Self.channel) 0b") })
    }

    @Test func aChannelWhoseLinkNeverComesIsClosedAfterItsTries() {
        let h = Harness()
        h.open()
        let waiting = KernelWaitingChannel(.enhancedATT, peer: Self.central, handle: 0x0040, localCID: 0x0041, mtu: 517, peerMTU: 100)
        h.shell.feed { rules, now in rules.channelAccepted(Self.channel, waiting, now: now) }
        _ = h.shell.take()
        for _ in 1...KernelAdapter.channelLinkAttempts { h.tick() }
        #expect(h.shell.take() == ["close \(Self.channel)"])
        #expect(h.stack.nextDeadline == nil)
    }

    @Test func losingTheAdapterReportsEveryLinkThenLost() {
        let h = Harness()
        h.open()
        h.accept()
        h.shell.feed { rules, now in rules.socketClosed(Self.link, why: nil, now: now) }
        h.events = []
        h.shell.feed { rules, now in rules.adapterEvent(.down(index: 0), now: now).actions }
        #expect(h.events == ["disconnected \(Self.id) \(HCIStatus.connectionTimeout) unknown", "controllerLost(reason: \"hci0 went down\")"])
        #expect(h.stack.nextDeadline == nil, "nothing of the old session waits")
    }

    @Test func anInstanceTheKernelWasBusyForIsTriedAgainOnTheTimerInItsSession() throws {
        let h = Harness()
        h.open()
        let add = try #require(h.shell.actions.compactMap { a -> KernelAdvertisingDriver.Operation? in
            if case .management(.advertising(let op, "primary"), _) = a { return op }
            return nil
        }.first)
        _ = h.shell.take()
        h.shell.feed { rules, now in
            rules.advertisingFinished(add, set: "primary", .failed(status: KernelManagement.Status.busy, reason: "Busy"), session: 1, now: now)
        }
        #expect(h.stack.nextDeadline == .milliseconds(100))
        h.tick()
        #expect(h.shell.take().map { $0.hasPrefix("advertising primary replace") && $0.hasSuffix("session 1") } == [true])
        // Busy again, then the adapter goes: the retry belongs to a session that ended.
        h.shell.feed { rules, now in
            rules.advertisingFinished(add, set: "primary", .failed(status: KernelManagement.Status.busy, reason: "Busy"), session: 1, now: now)
        }
        h.shell.feed { rules, now in rules.adapterEvent(.down(index: 0), now: now).actions }
        #expect(h.stack.nextDeadline == nil)
    }
}
