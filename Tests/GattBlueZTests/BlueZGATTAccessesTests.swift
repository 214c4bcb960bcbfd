import GattBlueZ
import GattCore
import GattDBus
import Testing

/// bluetoothd's calls on gattd's attributes: what the core hears, and the reads and writes
/// waiting for its answer (a call is an Int here: whatever the shell answers).
@Suite struct BlueZGATTAccessesTests {
    let device = "/org/bluez/hci0/dev_00_AA_01_01_00_01"
    let h = AttributeHandle(0x0012)

    private func connected(_ d: inout BlueZDevices, _ path: String) throws -> ConnectionID {
        try #require(d.changed(path, ["Connected": .boolean(true)]).first.flatMap { if case .connected(let id, _) = $0 { id } else { nil } })
    }

    @Test func aReadWaitsForTheCoreAndIsAnsweredWithItsValue() throws {
        var d = BlueZDevices(adapter: 0)
        let id = try connected(&d, device)
        var a = BlueZGATTAccesses<Int>()
        let read = a.request(.read(h, BlueZAccessOptions(device: device, offset: 22)), 1, devices: &d)
        #expect(read.reply == nil)
        guard case .gattAccess(id, let access, .read(h, offset: 22))? = read.events.last, read.events.count == 1 else { Issue.record("\(read.events)"); return }
        #expect(a.count == 1)
        let answer = a.answer(access, .success([1, 2]))
        let answered = try #require(answer)
        #expect(answered.call == 1 && answered.reply == .success([.bytes([1, 2])]))
        // Answered once.
        #expect(a.answer(access, .success([1, 2])) == nil)
        #expect(a.count == 0)
    }

    @Test func aWriteIsAnsweredWithNothingOrTheErrorBluetoothdTurnsBack() throws {
        var d = BlueZDevices(adapter: 0)
        var a = BlueZGATTAccesses<Int>()
        // A device bluetoothd has not said is connected comes up with its first request.
        let write = a.request(.write(h, [7], BlueZAccessOptions(device: device, type: "request")), 1, devices: &d)
        guard case .connected(let id, _)? = write.events.first, case .gattAccess(id, let first, .write(h, [7], offset: 0, withResponse: true))? = write.events.last,
            write.events.count == 2
        else { Issue.record("\(write.events)"); return }
        let command = a.request(.write(h, [8], BlueZAccessOptions(device: device, type: "command")), 2, devices: &d)
        guard case .gattAccess(id, let second, .write(h, [8], offset: 0, withResponse: false))? = command.events.first, command.events.count == 1 else {
            Issue.record("\(command.events)"); return
        }
        #expect(first != second)
        #expect(a.answer(second, .success([]))?.reply == .success([]))
        #expect(a.answer(first, .failure(.invalidAttributeValueLength))?.reply == .failure(BlueZGattError.dbusError(.invalidAttributeValueLength)))
    }

    @Test func requestsNamingNoCentralOfTheAdapterAreRefusedAtOnce() {
        var d = BlueZDevices(adapter: 0)
        var a = BlueZGATTAccesses<Int>()
        for o in [BlueZAccessOptions(), BlueZAccessOptions(device: "/org/bluez/hci1/dev_00_AA_01_01_00_01")] {
            let r = a.request(.read(h, o), 1, devices: &d)
            #expect(r.reply == .failure(BlueZGattError.dbusError(.unlikelyError)) && r.events.isEmpty)
        }
        #expect(a.count == 0)
    }

    @Test func aPrepareAuthorizeIsAcceptedWithoutTheCore() {
        var d = BlueZDevices(adapter: 0)
        var a = BlueZGATTAccesses<Int>()
        let r = a.request(.write(h, [1], BlueZAccessOptions(device: device, prepareAuthorize: true)), 1, devices: &d)
        #expect(r.reply == .success([]) && r.events.isEmpty && a.count == 0)
    }

    @Test func subscriptionsAndConfirmations() throws {
        var d = BlueZDevices(adapter: 0)
        var a = BlueZGATTAccesses<Int>()
        let start = a.request(.startNotify(h), 1, devices: &d)
        #expect(start.reply == .success([]) && start.events == [.gattSubscribers(h, true)])
        #expect(a.request(.stopNotify(h), 2, devices: &d).events == [.gattSubscribers(h, false)])
        // Confirm names no device: the central's when one is connected, else no one's.
        #expect(a.request(.confirm(h), 3, devices: &d).events.isEmpty)
        let id = try connected(&d, device)
        let one = a.request(.confirm(h), 4, devices: &d)
        #expect(one.reply == .success([]) && one.events == [.gattConfirmed(id, h)])
        _ = try connected(&d, "/org/bluez/hci0/dev_00_AA_01_01_00_02")
        #expect(a.request(.confirm(h), 5, devices: &d).events.isEmpty)
    }

    @Test func accessesStillWaitingAreEndedWithUnlikelyError() throws {
        var d = BlueZDevices(adapter: 0)
        var a = BlueZGATTAccesses<Int>()
        _ = a.request(.read(h, BlueZAccessOptions(device: device)), 1, devices: &d)
        guard case .gattAccess(_, let access, _)? = a.request(.read(h, BlueZAccessOptions(device: device)), 2, devices: &d).events.last else {
            Issue.record("no access"); return
        }
        let dropped = a.dropAll()
        #expect(dropped.map(\.call) == [1, 2])
        #expect(dropped.allSatisfy { $0.reply == BlueZGattError.dbusError(.unlikelyError) })
        #expect(a.count == 0 && a.answer(access, .success([])) == nil)
    }
}
