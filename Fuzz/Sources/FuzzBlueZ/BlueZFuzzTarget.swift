import FuzzSupport
import GattBlueZ
import GattCore
import GattDBus

/// Fuzzes what bluetoothd sends the BlueZ back end (docs/bluez.md), through its sans-I/O
/// values: calls on gattd's GATT application (`BlueZGattApplication.route`, the attribute
/// requests through `BlueZGATTAccesses`), `Device1` property changes and removals
/// (`BlueZDevices`), and calls on the pairing agent (`BlueZAgent.route` through
/// `BlueZPairingPrompts`, `reply`), with arbitrary D-Bus values for their arguments.
///
/// Input: one byte picks the config; then operations, each one selector byte and its
/// arguments (values are built from the input: a kind byte, then its contents).
///
/// The oracle traps when a read or write is routed to a handle that is not the object's own
/// (or not in the database), when the devices report a connection twice, a disconnection or
/// a bond, access or confirmation of a connection that is not up, or when their count
/// disagrees with the events; when an access does not wait for the core's answer under its
/// own id (or is answered with another call's reply); when a prompt waits for a central that
/// is not up; and when an agent answer other than the question's own acceptance is sent as a
/// success.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzBlueZ(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    var input = FuzzInput(data, size)
    let database = FuzzConfigs.pick(input.byte()).makeDatabase()
    var application = BlueZGattApplication(database: database, handleOffset: BlueZGattApplication.handleOffsets[Int(input.byte()) % 3])
    var devices = BlueZDevices(adapter: 0)
    var up = Set<ConnectionID>()
    var accesses = BlueZGATTAccesses<Int>()
    var prompts = BlueZPairingPrompts<Int>()
    let devicePaths = [
        "/org/bluez/hci0/dev_00_AA_01_01_00_01", "/org/bluez/hci0/dev_11_22_33_44_55_66", "/org/bluez/hci1/dev_00_AA_01_01_00_01",
        "/org/bluez/hci0/dev_00_AA_01_01_00_01/service0010", "/org/bluez/hci0",
    ]
    func check(_ events: [TransportEvent]) {
        for e in events {
            switch e {
            case .connected(let id, _):
                guard up.insert(id).inserted else { oracleViolation("\(id) reported connected twice") }
            case .disconnected(let id, _, _):
                guard up.remove(id) != nil else { oracleViolation("\(id) reported disconnected while not connected") }
            case .pairing(let id, _), .gattAccess(let id, _, _), .gattConfirmed(let id, _):
                guard up.contains(id) else { oracleViolation("\(e) reported for \(id), which is not connected") }
            case .gattSubscribers:
                break
            default:
                oracleViolation("an unexpected device event \(e)")
            }
        }
        guard devices.connectedCount == up.count, Set(devices.connectedIDs) == up else {
            oracleViolation("\(devices.connectedCount) devices connected, the events say \(up.count)")
        }
        _ = prompts.ended(events)
        guard Set(prompts.waiting).isSubset(of: up) else { oracleViolation("a prompt waits for a central that is not connected") }
    }
    var steps = 0
    while !input.isAtEnd, steps < 256 {
        steps += 1
        let op = input.byte()
        switch op % 6 {
        case 0, 1:
            // A call on the application: one of its objects (or any path), an interface and member.
            let paths = application.objects.map(\.path) + [BlueZGattApplication.root, "/", "/org/gattd/app/service9999"]
            let path = paths[Int(input.byte()) % paths.count]
            let interfaces = [
                BlueZGattApplication.characteristicInterface, BlueZGattApplication.descriptorInterface, BlueZGattApplication.serviceInterface,
                "org.freedesktop.DBus.Properties", "org.freedesktop.DBus.ObjectManager", "org.freedesktop.DBus.Introspectable",
            ]
            let members = ["ReadValue", "WriteValue", "StartNotify", "StopNotify", "Confirm", "GetAll", "Get", "Set", "GetManagedObjects", "Introspect", "AcquireNotify"]
            let interface = interfaces[Int(input.byte()) % interfaces.count]
            let member = members[Int(input.byte()) % members.count]
            let arguments = values(&input, count: Int(input.byte() % 4), depth: 0)
            switch application.route(path: path, interface: interface, member: member, arguments: arguments) {
            case .attribute(let request):
                let handle: AttributeHandle
                switch request {
                case .read(let h, _), .write(let h, _, _), .startNotify(let h), .stopNotify(let h), .confirm(let h): handle = h
                }
                guard let object = application.object(at: path), object.handle == handle, database.attribute(at: handle) != nil else {
                    oracleViolation("\(member) on \(path) routed to handle \(handle), not the object's")
                }
                let handling = accesses.request(request, steps, devices: &devices)
                check(handling.events)
                for case .gattAccess(_, let id, let access) in handling.events {
                    guard handling.reply == nil, let answered = accesses.answer(id, .success([0xAB])), answered.call == steps else {
                        oracleViolation("\(id) did not wait for the core's answer to call \(steps)")
                    }
                    let value: [DBusValue] = if case .read = access { [.bytes([0xAB])] } else { [] }
                    guard answered.reply == .success(value) else { oracleViolation("\(access) answered \(answered.reply)") }
                }
                guard accesses.count == 0 else { oracleViolation("an access waits that the core never heard of") }
            case .moved(let p, _, _):
                guard application.object(at: p) != nil else { oracleViolation("a handle moved at \(p), which is no object") }
            case .reply, .fail:
                break
            }
        case 2:
            let path = devicePaths[Int(input.byte()) % devicePaths.count]
            let names = ["Connected", "Bonded", "Paired", "Address", "AddressType", "Name"]
            var properties: [String: DBusValue] = [:]
            for _ in 0..<Int(input.byte() % 4) {
                properties[names[Int(input.byte()) % names.count]] = value(&input, depth: 0)
            }
            if op & 0x80 != 0 {
                check(devices.load(.array(element: "{oa{sa{sv}}}", [
                    .dictEntry(.objectPath(path), .array(element: "{sa{sv}}", [.dictEntry(.string(BlueZDevices.interface), .properties(properties))]))
                ])))
            } else {
                check(devices.changed(path, properties))
            }
        case 3:
            check(devices.removed(devicePaths[Int(input.byte()) % devicePaths.count]))
        case 4:
            // A request naming a device (ReadValue's `device`, an L2CAP channel's peer, the agent).
            let path = devicePaths[Int(input.byte()) % devicePaths.count]
            switch input.byte() % 3 {
            case 0: check(devices.connection(for: path)?.1 ?? [])
            case 1: check(devices.connection(address: BluetoothAddress(bytes: input.take(6)) ?? .zero)?.1 ?? [])
            default: devices.asked(path, .numericComparison(UInt32(input.uint16())))
            }
        default:
            let members = ["RequestConfirmation", "RequestPasskey", "RequestAuthorization", "DisplayPasskey", "Cancel", "Release", "RequestPinCode", "AuthorizeService", "Other"]
            let member = members[Int(input.byte()) % members.count]
            let call = BlueZAgent.route(member: member, arguments: values(&input, count: Int(input.byte() % 4), depth: 0), confirmPairing: op & 0x80 != 0)
            let handling = prompts.agentCall(steps, call, devices: &devices)
            check(handling.events)
            guard case .prompt(_, let question) = call else { continue }
            let answers: [PairingUserAnswer] = [.accept, .reject, .confirm(true), .confirm(false), .passkey(UInt32(input.uint16()) << UInt32(input.byte() % 8))]
            let answer = answers[Int(input.byte()) % answers.count]
            // Some prompts are left waiting (a newer one, Cancel, or the central leaving ends them).
            let reply: Result<[DBusValue], DBusError>
            if case .pairing(let id, _)? = handling.events.last, op & 0x40 == 0 {
                guard let answered = prompts.answer(id, answer), answered.call == steps else { oracleViolation("the prompt of call \(steps) did not wait") }
                reply = answered.reply
            } else {
                reply = BlueZAgent.reply(answer, to: question)
            }
            guard case .success = reply else { continue }
            switch (question, answer) {
            case (.numericComparison, .confirm(true)), (.pairingRequest, .accept), (.pairingRequest, .confirm(true)): break
            case (.passkeyRequest, .passkey(let n)) where n <= 999_999: break
            default: oracleViolation("the answer \(answer) to \(question) was sent as a success")
            }
        }
    }
    return 0
}

/// `count` values from the input.
private func values(_ input: inout FuzzInput, count: Int, depth: Int) -> [DBusValue] {
    (0..<count).map { _ in value(&input, depth: depth) }
}

/// One value: a kind byte, then its contents; containers nest at most three deep.
private func value(_ input: inout FuzzInput, depth: Int) -> DBusValue {
    let kind = input.byte()
    switch kind % (depth < 3 ? 12 : 8) {
    case 0: return .boolean(kind & 0x80 != 0)
    case 1: return .uint16(input.uint16())
    case 2: return .uint32(UInt32(input.uint16()) << 16 | UInt32(input.uint16()))
    case 3: return .byte(input.byte())
    case 4: return .string(String(decoding: input.chunk(), as: UTF8.self))
    case 5: return .objectPath(["/org/bluez/hci0/dev_00_AA_01_01_00_01", "/org/bluez/hci1/dev_00_AA_01_01_00_01", "/", "/org/gattd/agent"][Int(input.byte()) % 4])
    case 6: return .bytes(input.chunk())
    case 7: return .int32(Int32(bitPattern: UInt32(input.uint16())))
    case 8: return .variant(value(&input, depth: depth + 1))
    case 9:
        let keys = ["offset", "device", "mtu", "type", "prepare-authorize", "link"]
        var entries: [String: DBusValue] = [:]
        for _ in 0..<Int(input.byte() % 4) { entries[keys[Int(input.byte()) % keys.count]] = .variant(value(&input, depth: depth + 1)) }
        return .properties(entries)
    case 10: return .structure(values(&input, count: Int(input.byte() % 3), depth: depth + 1))
    default: return .array(element: "v", values(&input, count: Int(input.byte() % 3), depth: depth + 1).map { .variant($0) })
    }
}

/// The entry point (see `runLibFuzzer`).
@main enum FuzzBlueZMain {
    static func main() { runLibFuzzer(fuzzBlueZ) }
}
