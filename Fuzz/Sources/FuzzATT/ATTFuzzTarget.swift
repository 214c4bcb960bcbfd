import FuzzSupport
import GattCore

/// Fuzzes `ATTServer` with two connections over one of the configs under config/,
/// some characteristics switched to `.deferred` values, and an oracle that traps on:
/// - a request answered by anything but exactly one reply: its response opcode or
///   an Error Response naming it (none missing once no deferred access is pending,
///   none extra, in order);
/// - any reply to a command, a Handle Value Confirmation or an empty PDU;
/// - a PDU above the bearer's ATT_MTU, or one that does not decode and re-encode
///   to the same bytes;
/// - a notification or indication that `notify` did not queue, or a second
///   indication before the first was confirmed.
///
/// Input: 3 setup bytes (config, deferred mask, server MTU), then operations;
/// the low nibble of each operation byte selects it (see `step`).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzATT(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    var input = FuzzInput(data, size)
    var harness = ATTFuzzHarness(&input)
    while !input.isAtEnd { harness.step(&input) }
    harness.finish()
    return 0
}

/// What the oracle knows about one connection.
struct ConnectionModel {
    /// Request opcodes sent and not answered yet, oldest first.
    var awaiting: [UInt8] = []
    /// Notifications/indications `notify` queued and not seen yet.
    var queuedUpdates = 0
    var indicationOutstanding = false
}

struct ATTFuzzHarness {
    var server: ATTServer
    let database: GATTDatabase
    let ids = [ConnectionID(1), ConnectionID(2)]
    var models: [ConnectionID: ConnectionModel] = [:]
    /// Deferred accesses the server is waiting on (from its events), oldest first.
    var pending: [(id: PendingRequestID, connection: ConnectionID)] = []
    var now: Duration = .zero

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
        models[id] = ConnectionModel()
        pending.removeAll { $0.connection == id }
    }

    mutating func step(_ input: inout FuzzInput) {
        let op = input.byte()
        trace("op \(hex([op]))")
        let id = ids[Int(op >> 4) & 1]
        switch op & 0x0F {
        case 0...8:
            send(input.chunk(), from: id)
        case 9:
            // A request of a known opcode with fuzzed parameters (reaches deeper than random bytes).
            let requests: [UInt8] = [0x02, 0x04, 0x06, 0x08, 0x0A, 0x0C, 0x0E, 0x10, 0x12, 0x16, 0x18, 0x20, 0x52, 0xD2]
            send([requests[Int(input.byte()) % requests.count]] + input.chunk(), from: id)
        case 10:
            guard !pending.isEmpty else { return }
            let p = pending.removeFirst()
            let result: Result<[UInt8], ATTError> =
                op & 0x20 == 0 ? .success(input.chunk()) : .failure(ATTError.allCases[Int(input.byte()) % ATTError.allCases.count])
            if case .failure = result {
                // A failure answers the whole operation: its other ids are void.
                pending.removeAll { $0.connection == p.connection }
            }
            do {
                absorb(try server.respond(to: p.id, result: result, now: now))
            } catch {
                // Already answered or timed out: nothing may come out.
            }
        case 11:
            let count = database.characteristics.count
            guard count > 0 else { return }
            let characteristic = CharacteristicIndex(Int(input.byte()) % count)
            let (result, outputs) = server.notify(characteristic: characteristic, value: input.chunk(), only: id, now: now)
            if case .queued(let n) = result { models[id]?.queuedUpdates += n }
            absorb(outputs)
        case 12:
            send([ATTOpcode.handleValueConfirmation.rawValue], from: id)
        case 13:
            now += .milliseconds(100 * Int(input.byte()))
            absorb(server.tick(now: now))
        case 14:
            server.setSecurity(id, [SecurityLevel.low, .medium, .high][Int(input.byte()) % 3])
        default:
            if op & 0x20 != 0 {
                server.deferredAccessAvailable.toggle()
                if !server.deferredAccessAvailable { absorb(server.failDeferredAccesses(now: now)) }
            } else {
                absorb(server.disconnect(id))
                connect(id)
            }
        }
        checkAnswered()
    }

    mutating func send(_ pdu: [UInt8], from id: ConnectionID) {
        trace("\(id) <- \(hex(pdu))")
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
                pending.append((rid, id))
            case .event(.requestTimedOut(let rid)):
                pending.removeAll { $0.id == rid }
            case .event:
                break
            case .closeBearer(let id, _):
                connect(id)
            case .outgoingAvailable(let id):
                while let (pdu, more) = server.dequeueOutgoing(for: id) {
                    check(pdu, on: id)
                    absorb(more)
                }
            case .enhancedOutgoingAvailable, .closeEnhancedBearer:
                break  // the fuzzer opens no Enhanced ATT bearer
            }
        }
    }

    mutating func check(_ pdu: [UInt8], on id: ConnectionID) {
        trace("\(id) -> \(hex(pdu))")
        guard var model = models[id], let first = pdu.first else { oracleViolation("empty or unexpected PDU on \(id)") }
        let mtu = server.mtu(for: id) ?? 23
        if pdu.count > mtu { oracleViolation("\(pdu.count)-byte PDU \(hex(pdu)) above ATT_MTU \(mtu) on \(id)") }
        guard let decoded = try? ATTPDU(decoding: pdu), decoded.bytes == pdu else {
            oracleViolation("malformed PDU \(hex(pdu)) on \(id)")
        }
        switch ATTOpcode(rawValue: first) {
        case .handleValueNotification, .handleValueIndication, .multipleHandleValueNotification:
            if model.queuedUpdates == 0 { oracleViolation("unsolicited update \(hex(pdu)) on \(id)") }
            model.queuedUpdates -= 1
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

    /// Without a pending deferred access on a connection, every request has its reply.
    func checkAnswered() {
        for id in ids where !pending.contains(where: { $0.connection == id }) {
            if let waiting = models[id]?.awaiting, !waiting.isEmpty {
                oracleViolation("no reply to request(s) \(hex(waiting)) on \(id)")
            }
        }
    }

    /// Lets every timer fire until no deferred access is pending: each times out with
    /// a reply, and the PDUs held behind it are processed (they may start another).
    mutating func finish() {
        var rounds = 0
        repeat {
            now += .seconds(60)
            absorb(server.tick(now: now))
            rounds += 1
        } while !pending.isEmpty && rounds < 100_000
        if !pending.isEmpty { oracleViolation("deferred accesses still pending after \(rounds) timeouts") }
        checkAnswered()
    }
}

/// The entry point (see `runLibFuzzer`).
@main enum FuzzATTMain {
    static func main() { runLibFuzzer(fuzzATT) }
}
