import GattCore
import Testing

@testable import GattHost

/// `LinkProcedures` on its own: the rules the kernel transport runs with no L2CAP signalling
/// of its own (H4's are driven through `Host` in `HostLinkRequestTests`).
struct LinkProceduresTests {
    static let handle: UInt16 = 0x40
    static let kernel = LinkProcedures(signallingUnavailable: "the kernel keeps LE signalling")
    static let all: LEFeatures = [.connectionParametersRequestProcedure, .dataPacketLengthExtension, .le2MPHY]
    static let fast = LEConnectionParameters(intervalMin: 12, intervalMax: 12, latency: 0, supervisionTimeout: 200)
    static let opened = LinkParameters.atConnection(connectionInterval: 40, peripheralLatency: 0, supervisionTimeout: 42)

    func connected(_ procedures: LinkProcedures = kernel) -> LinkProcedures {
        var p = procedures
        #expect(p.opened(Self.handle, Self.opened) == [.changed(handle: Self.handle, Self.opened)])
        return p
    }

    @Test func anAcceptedUpdateReportsTheValuesThenTheAnswer() {
        var p = connected()
        let command = HCICommand.leConnectionUpdate(handle: Self.handle, parameters: Self.fast, minCELength: 0, maxCELength: 0)
        #expect(p.request(Self.handle, .connectionParameters(Self.fast), leFeatures: Self.all) { _ in true } == [.command(command)])
        #expect(p.answered(command, status: .success) == nil)  // Command Status: keeps waiting
        #expect(p.waiting(.connectionParameters) == [Self.handle])
        var link = Self.opened
        link.connectionInterval = 12
        link.supervisionTimeout = 200
        #expect(
            p.handle(.connectionUpdateComplete(status: .success, handle: Self.handle, connectionInterval: 12, peripheralLatency: 0, supervisionTimeout: 200))
                == [.changed(handle: Self.handle, link), .finished(handle: Self.handle, .connectionParameters, .accepted)])
        #expect(p.waiting(.connectionParameters).isEmpty)
        // Asked again: the link has them, so it is answered at once.
        #expect(p.request(Self.handle, .connectionParameters(Self.fast), leFeatures: Self.all) { _ in true } == [.finished(handle: Self.handle, .connectionParameters, .accepted)])
    }

    @Test func withoutSignallingAControllerLackingTheProcedureRefuses() {
        var p = connected()
        let steps = p.request(Self.handle, .connectionParameters(Self.fast), leFeatures: [.dataPacketLengthExtension]) { _ in true }
        guard case .finished(Self.handle, .connectionParameters, .refused(let why)) = steps.first, steps.count == 1 else {
            Issue.record("expected a refusal, got \(steps)")
            return
        }
        #expect(why.contains("Connection Parameters Request procedure") && why.contains("the kernel keeps LE signalling"))
        #expect(p.waiting(.connectionParameters).isEmpty)
    }

    @Test func withoutSignallingACentralWithoutTheProcedureRefuses() {
        var p = connected()
        let command = HCICommand.leConnectionUpdate(handle: Self.handle, parameters: Self.fast, minCELength: 0, maxCELength: 0)
        _ = p.request(Self.handle, .connectionParameters(Self.fast), leFeatures: Self.all) { _ in true }
        let steps = p.handle(.connectionUpdateComplete(status: .unsupportedRemoteFeature, handle: Self.handle, connectionInterval: 0, peripheralLatency: 0, supervisionTimeout: 0))
        guard case .finished(Self.handle, .connectionParameters, .refused(let why)) = steps.first, steps.count == 1 else {
            Issue.record("expected a refusal, got \(steps)")
            return
        }
        #expect(why.contains("does not take part") && why.contains("the kernel keeps LE signalling"))
        #expect(p.answered(command, status: .unsupportedRemoteFeature) == nil)  // answered once
    }

    /// Our controller does not know LE Connection Update: the L2CAP request where the host can
    /// send it, a refusal naming both reasons where it cannot.
    @Test func anUnknownConnectionUpdateFallsBackOrIsRefused() {
        let command = HCICommand.leConnectionUpdate(handle: Self.handle, parameters: Self.fast, minCELength: 0, maxCELength: 0)
        var h4 = connected(LinkProcedures())
        _ = h4.request(Self.handle, .connectionParameters(Self.fast), leFeatures: Self.all) { _ in true }
        #expect(h4.answered(command, status: HCIStatus(0x01)) == [.signal(handle: Self.handle, Self.fast)])
        var kernel = connected()
        _ = kernel.request(Self.handle, .connectionParameters(Self.fast), leFeatures: Self.all) { _ in true }
        let steps = kernel.answered(command, status: HCIStatus(0x01)) ?? []
        guard case .finished(Self.handle, .connectionParameters, .refused(let why)) = steps.first else {
            Issue.record("expected a refusal, got \(steps)")
            return
        }
        #expect(why.contains("does not know LE Connection Update") && why.contains("the kernel keeps LE signalling"))
    }

    @Test func withSignallingTheL2CAPRequestTakesOver() {
        var p = connected(LinkProcedures())
        #expect(p.request(Self.handle, .connectionParameters(Self.fast), leFeatures: []) { _ in true } == [.signal(handle: Self.handle, Self.fast)])
        p.signalled(Self.handle, identifier: 7)
        #expect(p.updateResponse(6, result: 1, handle: Self.handle) == nil)  // another identifier
        #expect(p.updateResponse(7, result: 0, handle: Self.handle) == [])  // accepted: waits for the update
        #expect(p.commandRejected(7, handle: Self.handle) == [.finished(handle: Self.handle, .connectionParameters, .refused("the central rejected the command (L2CAP Command Reject of the Connection Parameter Update Request)"))])
    }

    @Test func aLinkNotOpenedIsRefusedAndAClosedOneForgetsItsRequests() {
        var p = Self.kernel
        #expect(p.request(Self.handle, .dataLength(txOctets: 251), leFeatures: Self.all) { _ in true } == [.finished(handle: Self.handle, .dataLength, .refused("conn#64 is not connected"))])
        p = connected()
        let command = HCICommand.leSetDataLength(handle: Self.handle, txOctets: 251, txTime: LinkProcedures.maximumTxTime)
        #expect(p.request(Self.handle, .dataLength(txOctets: 251), leFeatures: Self.all) { _ in true } == [.command(command)])
        p.closed(Self.handle)
        #expect(p.waiting(.dataLength).isEmpty && p.links.isEmpty)
        #expect(p.answered(command, status: .success) == nil)
    }

    /// A link whose values are unknown (the kernel transport accepted its socket before the
    /// monitor's event, or it was up before the monitor): requests are taken, nothing is
    /// answered as "already there", and the values arrive as they are reported.
    @Test func aLinkWithUnknownValuesTakesRequests() {
        var p = Self.kernel
        #expect(p.opened(Self.handle, LinkParameters()) == [.changed(handle: Self.handle, LinkParameters())])
        let command = HCICommand.leConnectionUpdate(handle: Self.handle, parameters: Self.fast, minCELength: 0, maxCELength: 0)
        #expect(p.request(Self.handle, .connectionParameters(Self.fast), leFeatures: Self.all) { _ in true } == [.command(command)])
        // The monitor's LE Connection Complete, late: its values replace the unknown ones.
        #expect(p.opened(Self.handle, Self.opened) == [.changed(handle: Self.handle, Self.opened)])
        #expect(p.waiting(.connectionParameters) == [Self.handle])
    }

    @Test func dataLengthIsAnsweredByItsCommandAndPHYByItsEvent() {
        var p = connected()
        let dle = HCICommand.leSetDataLength(handle: Self.handle, txOctets: 200, txTime: 0x4290)
        #expect(p.request(Self.handle, .dataLength(txOctets: 200), leFeatures: Self.all) { _ in true } == [.command(dle)])
        #expect(p.answered(dle, status: .success) == [.finished(handle: Self.handle, .dataLength, .accepted)])
        // An unknown command (a controller without LE Set PHY): refused with the status.
        let phy = HCICommand.leSetPHY(handle: Self.handle, allPHYs: 0, txPHYs: 2, rxPHYs: 2, phyOptions: 0)
        #expect(p.request(Self.handle, .phy(tx: .le2M, rx: .le2M, coding: .noPreference), leFeatures: Self.all) { _ in true } == [.command(phy)])
        #expect(p.answered(phy, status: HCIStatus(0x01)) == [.finished(handle: Self.handle, .phy, .refused("the controller does not know LE Set PHY (\(HCIStatus(0x01)))"))])
        // Asked again, carried out: LE PHY Update Complete gives the new PHYs, then the answer.
        #expect(p.request(Self.handle, .phy(tx: .le2M, rx: .le2M, coding: .noPreference), leFeatures: Self.all) { _ in true } == [.command(phy)])
        #expect(p.answered(phy, status: .success) == nil)  // Command Status: keeps waiting
        var link = Self.opened
        (link.txPHY, link.rxPHY) = (.le2M, .le2M)
        #expect(p.handle(.phyUpdateComplete(status: .success, handle: Self.handle, txPHY: 2, rxPHY: 2))
            == [.changed(handle: Self.handle, link), .finished(handle: Self.handle, .phy, .accepted)])
        // LE Coded on a controller without it: refused before anything is sent.
        let coded = p.request(Self.handle, .phy(tx: .leCoded, rx: .leCoded, coding: .s8), leFeatures: Self.all) { _ in true }
        #expect(coded == [.finished(handle: Self.handle, .phy, .refused("the controller does not support \(LEPHY.leCoded) (its LE features lack it)"))])
    }
}
