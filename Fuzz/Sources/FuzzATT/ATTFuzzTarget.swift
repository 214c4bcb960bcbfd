import FuzzSupport
import GattCore

/// Fuzzes `ATTServer` with two connections over one of the configs under config/, each
/// with its fixed bearer and up to two Enhanced ATT bearers opened, reconfigured and closed
/// by the input (Vol 3 Part F §3.2.11), some characteristics switched to `.deferred` values,
/// and an oracle that traps on:
/// - a request answered by anything but exactly one reply on its own bearer: its response
///   opcode or an Error Response naming it (none missing once no deferred access is
///   pending, none extra, in order);
/// - any reply to a command, a Handle Value Confirmation or an empty PDU;
/// - a PDU above the bearer's ATT_MTU, or one that does not decode and re-encode
///   to the same bytes;
/// - a notification or indication (on any of the client's bearers) that `notify` or
///   `notifyMultiple` did not queue, or a second indication on a bearer before the
///   first was confirmed there;
/// - per client and characteristic, updates that arrive out of the order they were submitted
///   across all the client's bearers, or one `notify` queued that never arrives (issue #30).
///   A bearer may be held: what the server hands it waits "in the transport" until the
///   input releases it (a channel without credits), and is lost only if the bearer closes
///   meanwhile. Or stalled: the transport takes nothing from it (its queue grows in the
///   server; no request is sent on it meanwhile, as the server would ignore it). At the end
///   every bearer is released and every indication confirmed.
/// - a GATT-level access (a back end that runs ATT itself: `ATTServer.access`) answered
///   twice, or neither answered nor handed out as a deferred access when it is made, or
///   still unanswered at the end (after every timeout); a GATT-level update at all (no
///   subscriber is set here).
///
/// Input: 3 setup bytes (config, deferred mask, server MTU), then operations;
/// the low nibble of each operation byte selects it, bit 4 the connection, bits 6–7
/// the bearer (see `step`).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzATT(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    var input = FuzzInput(data, size)
    var harness = ATTFuzzHarness(&input)
    while !input.isAtEnd { harness.step(&input) }
    harness.finish()
    return 0
}

/// What the oracle knows about one bearer.
struct BearerModel {
    /// Request opcodes sent and not answered yet, oldest first.
    var awaiting: [UInt8] = []
    var indicationOutstanding = false
}

struct ATTFuzzHarness {
    var server: ATTServer
    let database: GATTDatabase
    let ids = [ConnectionID(1), ConnectionID(2)]
    /// The Enhanced ATT bearers' CIDs an operation may name (bits 6–7: 1 and 2; 0 and 3 the
    /// fixed bearer).
    static let enhancedCIDs: [UInt16] = [0x0040, 0x0041]
    var models: [BearerID: BearerModel] = [:]
    /// Per connection: notifications/indications queued and not seen yet (any bearer may
    /// carry them; a Multiple Handle Value Notification counts as one, so this is an upper
    /// bound).
    var queuedUpdates: [ConnectionID: Int] = [:]
    /// Deferred accesses the server is waiting on (from its events), oldest first.
    /// (Each waits on one bearer: a bearer's operation answers or fails as a whole, and a
    /// bearer with one pending holds its later requests; the others go on.)
    var pending: [(id: PendingRequestID, bearer: BearerID)] = []
    var now: Duration = .zero
    /// Bearers whose PDUs wait in `inTransport` until released.
    var held: Set<BearerID> = []
    /// Bearers the transport takes no PDU from, until released.
    var stalled: Set<BearerID> = []
    var inTransport: [BearerID: [[UInt8]]] = [:]
    /// Per connection and value handle: the values queued for it and not yet arrived, oldest first.
    var expected: [ConnectionID: [UInt16: [[UInt8]]]] = [:]
    /// Each connection's security level, as set here.
    var security: [ConnectionID: SecurityLevel] = [:]
    /// GATT-level accesses made and not answered yet, and the deferred accesses they wait on.
    var gattWaiting: Set<UInt64> = []
    var gattPending: [PendingRequestID] = []
    var nextAccess: UInt64 = 1

    init(_ input: inout FuzzInput) {
        var config = FuzzConfigs.pick(input.byte())
        // Characteristics whose index bit is set in the mask are `.deferred`.
        let mask = input.byte()
        var index = 0
        for s in config.services.indices {
            for c in config.services[s].characteristics.indices {
                if mask & (1 << UInt8(index % 8)) != 0 {
                    config.services[s].characteristics[c].valueSource = .deferred
                }
                index += 1
            }
        }
        var configuration = ATTServerConfiguration()
        configuration.maxMTU = 23 + Int(input.byte()) * 2
        // Every PDU sent while a deferred access is pending is held, none dropped,
        // so the oracle can expect a reply to every request (inputs stay far below this).
        configuration.maxHeldPDUs = 1 << 20
        database = config.makeDatabase()
        server = ATTServer(database: database, configuration: configuration)
        server.deferredAccessAvailable = mask & 0x80 != 0
        for id in ids { connect(id) }
    }

    mutating func connect(_ id: ConnectionID) {
        server.connect(id, security: .low)
        models = models.filter { $0.key.connection != id }
        held = held.filter { $0.connection != id }
        stalled = stalled.filter { $0.connection != id }
        inTransport = inTransport.filter { $0.key.connection != id }
        expected[id] = [:]
        security[id] = .low
        models[.fixed(id)] = BearerModel()
        queuedUpdates[id] = 0
        pending.removeAll { $0.bearer.connection == id }
    }

    /// The bearer an operation names: the connection (bit 4) and bits 6–7.
    func bearer(_ op: UInt8) -> BearerID {
        let id = ids[Int(op >> 4) & 1]
        switch op >> 6 {
        case 1, 2: return BearerID(id, channel: Self.enhancedCIDs[Int(op >> 6) - 1])
        default: return .fixed(id)
        }
    }

    mutating func step(_ input: inout FuzzInput) {
        let op = input.byte()
        trace("op \(hex([op]))")
        let b = bearer(op)
        let id = b.connection
        switch op & 0x0F {
        case 0...8:
            send(input.chunk(), from: b)
        case 9:
            // A request of a known opcode with fuzzed parameters (reaches deeper than random bytes).
            let requests: [UInt8] = [0x02, 0x04, 0x06, 0x08, 0x0A, 0x0C, 0x0E, 0x10, 0x12, 0x16, 0x18, 0x20, 0x52, 0xD2]
            send([requests[Int(input.byte()) % requests.count]] + input.chunk(), from: b)
        case 10 where pending.isEmpty:
            guard !gattPending.isEmpty else { return }
            let rid = gattPending.removeFirst()
            let result: Result<[UInt8], ATTError> =
                op & 0x20 == 0 ? .success(input.chunk()) : .failure(ATTError.allCases[Int(input.byte()) % ATTError.allCases.count])
            absorb((try? server.respond(to: rid, result: result, now: now)) ?? [])
        case 10:
            guard !pending.isEmpty else { return }
            let p = pending.removeFirst()
            let result: Result<[UInt8], ATTError> =
                op & 0x20 == 0 ? .success(input.chunk()) : .failure(ATTError.allCases[Int(input.byte()) % ATTError.allCases.count])
            if case .failure = result {
                // A failure answers the whole operation: its other ids are void.
                pending.removeAll { $0.bearer == p.bearer }
            }
            do {
                absorb(try server.respond(to: p.id, result: result, now: now))
            } catch {
                // Already answered or timed out: nothing may come out.
            }
        case 11:
            let count = database.characteristics.count
            guard count > 0 else { return }
            if op & 0x20 == 0 {
                let characteristic = CharacteristicIndex(Int(input.byte()) % count)
                let value = input.chunk()
                let (result, outputs) = server.notify(characteristic: characteristic, value: value, only: id, now: now)
                if case .queued(let n) = result {
                    queuedUpdates[id, default: 0] += n
                    if n > 0 { expect(value, of: characteristic, for: id) }
                }
                absorb(outputs)
            } else {
                // Several values at once: one Multiple Handle Value Notification to a client
                // that set Client Supported Features bit 2, else one PDU per value.
                let updates = (0..<(2 + Int(input.byte()) % 3)).map { _ in
                    (characteristic: CharacteristicIndex(Int(input.byte()) % count), value: input.chunk())
                }
                let (result, outputs) = server.notifyMultiple(updates, only: id, now: now)
                if case .queued(let n) = result {
                    queuedUpdates[id, default: 0] += n * updates.count
                    if n > 0 { for u in updates where sends(u.characteristic, to: id) { expect(u.value, of: u.characteristic, for: id) } }
                }
                absorb(outputs)
            }
        case 12 where op & 0x20 != 0:
            gattAccess(&input, from: id)
        case 12:
            send([ATTOpcode.handleValueConfirmation.rawValue], from: b)
        case 13:
            now += .milliseconds(100 * Int(input.byte()))
            absorb(server.tick(now: now))
        case 14 where b.isEnhanced:
            // The Enhanced ATT bearer's L2CAP channel opens, is reconfigured or closes.
            let mtu = 64 + Int(input.byte()) * 2
            switch input.byte() % 5 {
            case 0:
                if server.openBearer(b, mtu: mtu) { models[b] = BearerModel() }
            case 1:
                server.reconfigureBearer(b, mtu: mtu)
            case 2:
                guard let model = models[b] else { return }
                models[b] = nil
                dropTransport(b)
                // An indication the transport took and the client did not confirm is
                // reported unconfirmed, once; none otherwise (one still queued moves on).
                let outputs = server.closeBearer(b, now: now)
                let reports = outputs.filter { if case .event(.indicationUnconfirmed(b.connection, _)) = $0 { true } else { false } }
                if reports.count != (model.indicationOutstanding ? 1 : 0) {
                    oracleViolation("closing \(b) with an indication \(model.indicationOutstanding ? "" : "not ")outstanding reported \(reports)")
                }
                absorb(outputs)
            case 3:
                toggleHold(b)
            default:
                toggleStall(b)
            }
        case 14:
            switch Int(input.byte()) % 5 {
            case 3: toggleHold(b)
            case 4: toggleStall(b)
            case let level:
                security[id] = [SecurityLevel.low, .medium, .high][level]
                server.setSecurity(id, [SecurityLevel.low, .medium, .high][level])
            }
        default:
            if op & 0x20 != 0 {
                server.deferredAccessAvailable.toggle()
                if !server.deferredAccessAvailable { absorb(server.failDeferredAccesses(now: now)) }
            } else {
                absorb(server.disconnect(id))
                connect(id)
            }
        }
        // A closed Enhanced bearer's deferred accesses are gone with it.
        pending.removeAll { server.bearer(waitingOn: $0.id) == nil }
        gattPending.removeAll { !server.isWaiting($0) }
        checkAnswered()
    }

    /// A read or write of one attribute as bluetoothd asks it: answered now, or handed out as
    /// one deferred access (answered later, by op 10, a timeout or a disconnection).
    mutating func gattAccess(_ input: inout FuzzInput, from id: ConnectionID) {
        let access = GATTAccessID(nextAccess)
        nextAccess += 1
        gattWaiting.insert(access.rawValue)
        let handle = AttributeHandle(UInt16(input.byte()) % UInt16(database.attributes.count + 3))
        let kind = input.byte()
        let offset = kind & 0x04 == 0 ? 0 : Int(input.byte())
        let a: GATTAccess = kind & 0x01 == 0 ? .read(handle, offset: offset) : .write(handle, input.chunk(), offset: offset, withResponse: kind & 0x02 == 0)
        trace("\(id) GATT \(a)")
        let before = gattPending.count
        absorb(server.access(a, id: access, from: id, now: now))
        if gattWaiting.contains(access.rawValue) && gattPending.count != before + 1 {
            oracleViolation("\(a) neither answered nor handed out as one deferred access")
        }
    }

    mutating func send(_ pdu: [UInt8], from id: BearerID) {
        trace("\(id) <- \(hex(pdu))")
        guard models[id] != nil else { return }  // an Enhanced bearer not open
        if let first = pdu.first, stalled.contains(id) {
            // A client waits for the answers it cannot get yet, and confirms no indication it
            // has not received (the server would take it for the one still in its queue).
            if first == ATTOpcode.handleValueConfirmation.rawValue ? models[id]?.indicationOutstanding != true : !ATTOpcode.isCommand(first) { return }
        }
        if let first = pdu.first {
            if first == ATTOpcode.handleValueConfirmation.rawValue {
                if pdu.count == 1 { models[id]?.indicationOutstanding = false }
            } else if !ATTOpcode.isCommand(first) {
                models[id]?.awaiting.append(first)
            }
        }
        absorb(server.receive(pdu, from: id, now: now))
    }

    /// Follows the server's outputs: pending deferred accesses, closed bearers,
    /// and every PDU it queued (checked as it is dequeued).
    mutating func absorb(_ outputs: [ATTServerOutput]) {
        for output in outputs {
            if case .outgoingAvailable = output {} else { trace("  \(output)") }
            switch output {
            case .event(.deferredAccess(let rid, let id, _)):
                // Known while the server waits on it (it just said so); a GATT-level access's
                // waits on no bearer.
                if let bearer = server.bearer(waitingOn: rid) { pending.append((rid, bearer)) } else if server.isWaiting(rid) { gattPending.append(rid) } else { pending.append((rid, .fixed(id))) }
            case .event(.requestTimedOut(let rid)):
                pending.removeAll { $0.id == rid }
                gattPending.removeAll { $0 == rid }
            case .event(.indicationTimedOut(let id, let c)):
                // The Enhanced bearer it timed out on is gone from the server already. If the
                // transport never took it (a stalled bearer), it is reported lost here and
                // never comes (the outputs that follow may already bring later values).
                // What its transport held goes with it, before the outputs that follow move
                // its queue to another bearer.
                for b in models.keys.sorted() where b.connection == id && b.isEnhanced && server.mtu(for: b) == nil {
                    dropTransport(b)
                    if models[b]?.indicationOutstanding == false { excuse(c, for: id) }
                }
            case .event(.indicationUnconfirmed):
                break  // checked where the bearer closes
            case .event:
                break
            case .closeBearer(let b, _) where b.isEnhanced:
                models[b] = nil
                dropTransport(b)
            case .closeBearer(let b, _):
                connect(b.connection)
            case .gattAnswer(let access, _):
                guard gattWaiting.remove(access.rawValue) != nil else { oracleViolation("\(access) answered twice, or never made") }
            case .gattUpdate:
                oracleViolation("a GATT-level update with no GATT-level subscriber: \(output)")
            case .outgoingAvailable(let b):
                guard !stalled.contains(b) else { break }
                while let (pdu, more) = server.dequeueOutgoing(for: b) {
                    check(pdu, on: b)
                    if held.contains(b) { inTransport[b, default: []].append(pdu) } else { arrived(pdu, on: b) }
                    absorb(more)
                }
            }
        }
    }

    mutating func check(_ pdu: [UInt8], on id: BearerID) {
        trace("\(id) -> \(hex(pdu))")
        guard var model = models[id], let first = pdu.first else { oracleViolation("empty or unexpected PDU on \(id)") }
        let mtu = server.mtu(for: id) ?? 23
        if pdu.count > mtu { oracleViolation("\(pdu.count)-byte PDU \(hex(pdu)) above ATT_MTU \(mtu) on \(id)") }
        guard let decoded = try? ATTPDU(decoding: pdu), decoded.bytes == pdu else {
            oracleViolation("malformed PDU \(hex(pdu)) on \(id)")
        }
        switch ATTOpcode(rawValue: first) {
        case .handleValueNotification, .handleValueIndication, .multipleHandleValueNotification:
            if queuedUpdates[id.connection, default: 0] == 0 { oracleViolation("unsolicited update \(hex(pdu)) on \(id)") }
            queuedUpdates[id.connection, default: 0] -= 1
            if first == ATTOpcode.handleValueIndication.rawValue {
                if model.indicationOutstanding { oracleViolation("second indication before confirmation on \(id): \(hex(pdu))") }
                model.indicationOutstanding = true
            }
        default:
            guard !model.awaiting.isEmpty else { oracleViolation("reply \(hex(pdu)) to no request on \(id)") }
            let request = model.awaiting.removeFirst()
            let response = ATTOpcode(rawValue: request)?.responseOpcode?.rawValue
            let isError = first == ATTOpcode.errorResponse.rawValue && pdu[1] == request && pdu[4] != 0
            if first != response && !isError {
                oracleViolation("request 0x\(hex([request])) answered with \(hex(pdu)) on \(id)")
            }
        }
        models[id] = model
    }

    /// Without a pending deferred access on a bearer, every request on it has its reply.
    func checkAnswered() {
        for (id, model) in models where !model.awaiting.isEmpty && !pending.contains(where: { $0.bearer == id }) && !stalled.contains(id) {
            oracleViolation("no reply to request(s) \(hex(model.awaiting)) on \(id)")
        }
    }

    // MARK: Per-characteristic order (issue #30)

    /// A value queued for `c` to connection `id`.
    mutating func expect(_ value: [UInt8], of c: CharacteristicIndex, for id: ConnectionID) {
        expected[id, default: [:]][database[c].valueHandle.rawValue, default: []].append(value)
    }

    /// Whether `notifyMultiple` sends `c`'s value to `id` (Vol 3 Part G §3.3.3.3: its CCCD;
    /// an encryption-required update only on an encrypted link).
    func sends(_ c: CharacteristicIndex, to id: ConnectionID) -> Bool {
        let p = database[c].properties
        let bits = server.clientConfiguration(for: id, characteristic: c) ?? 0
        let encrypted = security[id]?.isEncrypted ?? false
        if bits & 0x0002 != 0, p.canIndicate { return !p.contains(.indicateEncryptionRequired) || encrypted }
        return bits & 0x0001 != 0 && p.canNotify && (!p.contains(.notifyEncryptionRequired) || encrypted)
    }

    /// The (handle, value) pairs an update PDU carries.
    static func values(of pdu: [UInt8]) -> [(UInt16, [UInt8])] {
        switch try? ATTPDU(decoding: pdu) {
        case .handleValueNotification(let h, let v)?, .handleValueIndication(let h, let v)?: [(h.rawValue, v)]
        case .multipleHandleValueNotification(let list)?: list.map { ($0.handle.rawValue, $0.value) }
        default: []
        }
    }

    /// An update reaches the client: each value must be the oldest of its characteristic
    /// still expected (a value cut to ATT_MTU-3 matches its start).
    mutating func arrived(_ pdu: [UInt8], on id: BearerID) {
        for (handle, value) in Self.values(of: pdu) {
            guard let oldest = expected[id.connection]?[handle]?.first else {
                oracleViolation("update \(hex(pdu)) on \(id): its characteristic has nothing queued")
            }
            if !oldest.starts(with: value) {
                oracleViolation("update \(hex(pdu)) on \(id) arrived before \(hex(oldest)), queued earlier")
            }
            expected[id.connection]?[handle]?.removeFirst()
        }
    }

    /// `c`'s oldest value still expected does not come (its indication timed out before the
    /// transport took it).
    mutating func excuse(_ c: CharacteristicIndex, for id: ConnectionID) {
        let handle = database[c].valueHandle.rawValue
        if expected[id]?[handle]?.isEmpty == false { expected[id]?[handle]?.removeFirst() }
    }

    /// A bearer closes: what waited for it in the transport goes with its channel.
    mutating func dropTransport(_ id: BearerID) {
        held.remove(id)
        stalled.remove(id)
        for pdu in inTransport.removeValue(forKey: id) ?? [] {
            for (handle, value) in Self.values(of: pdu) {
                if let k = expected[id.connection]?[handle]?.firstIndex(where: { $0.starts(with: value) }) {
                    expected[id.connection]?[handle]?.remove(at: k)
                }
            }
        }
    }

    mutating func toggleStall(_ id: BearerID) {
        guard models[id] != nil else { return }
        if stalled.remove(id) == nil {
            stalled.insert(id)
            return
        }
        absorb([.outgoingAvailable(id)])
        checkAnswered()
    }

    mutating func toggleHold(_ id: BearerID) {
        guard models[id] != nil else { return }
        if held.remove(id) == nil {
            held.insert(id)
            return
        }
        for pdu in inTransport.removeValue(forKey: id) ?? [] { arrived(pdu, on: id) }
    }

    /// Releases every bearer and confirms every indication until nothing more comes: then
    /// every value a `notify` queued has arrived.
    mutating func settleUpdates() {
        for id in stalled.sorted() { toggleStall(id) }
        for id in held.sorted() { toggleHold(id) }
        for _ in 0..<10_000 {
            let waiting = models.filter(\.value.indicationOutstanding).keys.sorted()
            if waiting.isEmpty { break }
            for id in waiting { send([ATTOpcode.handleValueConfirmation.rawValue], from: id) }
        }
        for (id, handles) in expected {
            for (handle, queue) in handles {
                if let lost = queue.first {
                    oracleViolation("\(id): update of handle 0x\(hex([UInt8(handle >> 8), UInt8(handle & 0xFF)])) with \(hex(lost)) never arrived")
                }
            }
        }
    }

    /// Lets every timer fire until no deferred access is pending: each times out with
    /// a reply, and the PDUs held behind it are processed (they may start another).
    mutating func finish() {
        settleUpdates()
        var rounds = 0
        repeat {
            now += .seconds(60)
            absorb(server.tick(now: now))
            pending.removeAll { server.bearer(waitingOn: $0.id) == nil }
            gattPending.removeAll { !server.isWaiting($0) }
            rounds += 1
        } while !(pending.isEmpty && gattPending.isEmpty) && rounds < 100_000
        if !pending.isEmpty || !gattPending.isEmpty { oracleViolation("deferred accesses still pending after \(rounds) timeouts") }
        if !gattWaiting.isEmpty { oracleViolation("GATT-level accesses never answered: \(gattWaiting.sorted())") }
        checkAnswered()
    }
}

/// The entry point (see `runLibFuzzer`).
@main enum FuzzATTMain {
    static func main() { runLibFuzzer(fuzzATT) }
}
