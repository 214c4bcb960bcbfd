import GattCore
import Testing

@testable import GattTransport

/// The kernel transport's links without sockets: which id an accepted ATT socket gets, when
/// a connection ended advertising, what a closed link's disconnection reports, and that a
/// closed socket's late callbacks no longer reach its connection's successor.
@Suite("Kernel link table")
struct KernelLinkTableTests {
    static let central = KernelBDAddress(BluetoothAddress("00:AA:01:01:00:01")!, type: .lePublic)
    static let other = KernelBDAddress(BluetoothAddress("00:AA:01:01:00:02")!, type: .leRandom)

    @Test func acceptedSocketTakesItsHandleAsId() {
        var t = KernelLinkTable()
        let a = t.accepted(handle: 0x0040, peer: Self.central, security: .low)
        #expect(a.id == ConnectionID(0x0040))
        #expect(t[a.id]?.socket == a.socket)
        #expect(t[a.id]?.peer == Self.central)
        // The monitor had not reported it: the connection ended advertising.
        #expect(a.endedAdvertising)
        #expect(t.anyConnected)
    }

    /// A handle still in use (or unknown) gets a spare id from 0x1000.
    @Test func takenOrUnknownHandleGetsASpareId() {
        var t = KernelLinkTable()
        let a = t.accepted(handle: 0x0040, peer: Self.central, security: .low)
        let b = t.accepted(handle: 0x0040, peer: Self.other, security: .low)
        let c = t.accepted(handle: nil, peer: Self.other, security: .low)
        #expect(a.id == ConnectionID(0x0040))
        #expect(b.id == ConnectionID(0x1000))
        #expect(c.id == ConnectionID(0x1001))
        #expect(a.socket != b.socket && b.socket != c.socket)
        #expect(!c.endedAdvertising)
    }

    /// Link events for a handle go to the link now on it: the newest accepted one (an old link
    /// keeps a reused handle until its socket closes).
    @Test func theCurrentLinkOnAHandleIsTheNewest() {
        var t = KernelLinkTable()
        #expect(t.current(onHandle: 0x0040) == nil)
        let a = t.accepted(handle: 0x0040, peer: Self.central, security: .low)
        #expect(t.current(onHandle: 0x0040) == a.id)
        let b = t.accepted(handle: 0x0040, peer: Self.other, security: .low)
        #expect(t.current(onHandle: 0x0040) == b.id)
        _ = t.closed(b.id, socket: b.socket)
        #expect(t.current(onHandle: 0x0040) == a.id)
        #expect(t.current(onHandle: 0x0041) == nil)
    }

    /// LE Connection Complete (peripheral role) ends advertising once per link: a failed attempt
    /// always, a link the accepted socket already reported not again.
    @Test func connectionCompleteEndsAdvertisingOnce() {
        var t = KernelLinkTable()
        let r1 = t.connectionComplete(status: 0, handle: 0x0041)
        #expect(r1)
        let r2 = t.connectionComplete(status: 0, handle: 0x0041)
        #expect(!r2)
        let a = t.accepted(handle: 0x0041, peer: Self.central, security: .low)
        #expect(!a.endedAdvertising)
        let r3 = t.connectionComplete(status: 0x3C, handle: 0x0099)
        #expect(r3)
    }

    /// The socket closed before Disconnection Complete: wait, the id stays taken, then report
    /// the monitor's reason.
    @Test func closeBeforeDisconnectionCompleteWaitsForTheReason() throws {
        var t = KernelLinkTable()
        let a = t.accepted(handle: 0x0040, peer: Self.central, security: .low)
        let c4 = t.closed(a.id, socket: a.socket)
        let link = try #require(c4)
        let r5 = t.disconnection(of: a.id, link, why: nil, waited: false)
        #expect(r5 == .wait)
        #expect(t.disconnecting.contains(a.id))
        // A new link on the same handle meanwhile gets another id.
        let b = t.accepted(handle: 0x0040, peer: Self.central, security: .low)
        #expect(b.id != a.id)
        t.disconnectionComplete(status: 0, handle: 0x0040, reason: 0x13)
        let r6 = t.disconnection(of: a.id, link, why: nil, waited: true)
        #expect(r6 == .report(HCIStatus(0x13), detail: nil))
        #expect(!t.disconnecting.contains(a.id))
    }

    /// Disconnection Complete first: the close reports its reason at once.
    @Test func reasonKnownBeforeCloseIsReportedAtOnce() throws {
        var t = KernelLinkTable()
        let a = t.accepted(handle: 0x0040, peer: Self.central, security: .low)
        t.disconnectionComplete(status: 0, handle: 0x0040, reason: 0x3E)
        let c7 = t.closed(a.id, socket: a.socket)
        let link = try #require(c7)
        let r8 = t.disconnection(of: a.id, link, why: nil, waited: false)
        #expect(r8 == .report(HCIStatus(0x3E), detail: nil))
        #expect(!t.anyConnected)
    }

    /// No reason came: Connection Timeout, with why the socket closed.
    @Test func noReasonAfterWaitingIsATimeoutWithDetail() throws {
        var t = KernelLinkTable()
        let a = t.accepted(handle: 0x0040, peer: Self.central, security: .low)
        let c9 = t.closed(a.id, socket: a.socket)
        let link = try #require(c9)
        let r10 = t.disconnection(of: a.id, link, why: "read error 104", waited: false)
        #expect(r10 == .wait)
        let r11 = t.disconnection(of: a.id, link, why: "read error 104", waited: true)
        #expect(r11 == .report(.connectionTimeout, detail: "read error 104"))
    }

    /// A reason of an earlier link on the handle is dropped when a new link comes on it.
    @Test func staleReasonIsDroppedByANewConnection() throws {
        var t = KernelLinkTable()
        t.disconnectionComplete(status: 0, handle: 0x0040, reason: 0x13)
        _ = t.connectionComplete(status: 0, handle: 0x0040)
        let a = t.accepted(handle: 0x0040, peer: Self.central, security: .low)
        let c12 = t.closed(a.id, socket: a.socket)
        let link = try #require(c12)
        let r13 = t.disconnection(of: a.id, link, why: nil, waited: false)
        #expect(r13 == .wait)
    }

    /// A closed socket's late callbacks (security, close) do not reach a new link with its id.
    @Test func lateCallbacksOfAClosedSocketAreIgnored() throws {
        var t = KernelLinkTable()
        let a = t.accepted(handle: 0x0040, peer: Self.central, security: .low)
        let c14 = t.closed(a.id, socket: a.socket)
        _ = try #require(c14)
        let link = KernelLink(socket: a.socket, handle: 0x0040, peer: Self.central, security: .low)
        _ = t.disconnection(of: a.id, link, why: nil, waited: true)
        let b = t.accepted(handle: 0x0040, peer: Self.central, security: .low)
        #expect(b.id == a.id)
        #expect(t.link(a.id, socket: a.socket) == nil)
        let r15 = t.securityRead(a.id, socket: a.socket, level: .high)
        #expect(!r15)
        let r16 = t.closed(a.id, socket: a.socket)
        #expect(r16 == nil)
        #expect(t[b.id] != nil)
    }

    /// The level is reported when it moved, once.
    @Test func securityReadReportsAChangeOnce() {
        var t = KernelLinkTable()
        let a = t.accepted(handle: 0x0040, peer: Self.central, security: .low)
        let r17 = t.securityRead(a.id, socket: a.socket, level: .low)
        #expect(!r17)
        let r18 = t.securityRead(a.id, socket: a.socket, level: .medium)
        #expect(r18)
        let r19 = t.securityRead(a.id, socket: a.socket, level: .medium)
        #expect(!r19)
        #expect(t[a.id]?.security == .medium)
        #expect(t.links(onHandle: 0x0040).map(\.0) == [a.id])
        #expect(t.links(onHandle: 0x0041).isEmpty)
    }

    /// Pairing events name the central by address, or by the RPA it paired with.
    @Test func connectionByAddressOrAlias() {
        var t = KernelLinkTable()
        let a = t.accepted(handle: 0x0040, peer: Self.central, security: .low)
        let b = t.accepted(handle: nil, peer: Self.other, security: .low)
        #expect(t.connection(of: Self.other.address) == b.id)
        #expect(t.connection(of: BluetoothAddress("4A:AA:01:01:00:09")!, alias: Self.central.address) == a.id)
        #expect(t.connection(of: BluetoothAddress("4A:AA:01:01:00:09")!) == nil)
        // An L2CAP channel finds its link by handle, else by peer.
        #expect(t.connection(handle: 0x0040, peer: Self.other) == a.id)
        #expect(t.connection(handle: nil, peer: Self.other) == b.id)
    }

    /// The adapter went: every link goes, in order, and nothing is left connected.
    @Test func removeAllDropsEveryLink() {
        var t = KernelLinkTable()
        let b = t.accepted(handle: 0x0050, peer: Self.other, security: .low)
        let a = t.accepted(handle: 0x0040, peer: Self.central, security: .low)
        _ = t.connectionComplete(status: 0, handle: 0x0060)
        let r20 = t.removeAll()
        #expect(r20.map(\.0) == [a.id, b.id])
        #expect(!t.anyConnected)
        #expect(t.ids.isEmpty)
    }
}
