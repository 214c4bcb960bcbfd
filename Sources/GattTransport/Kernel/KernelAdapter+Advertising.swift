import GattCore
import GattHost

// Advertising on the kernel transport: one mgmt instance per set (`KernelAdvertising`), never
// raw HCI advertising commands; and the programs' link requests (`KernelLinkControl`).
extension KernelAdapter {
    // MARK: - Advertising

    mutating func setAdvertising(_ sets: [AdvertisingSet]) -> [KernelAction] {
        guard lifecycle.isReady else { return [] }
        let (refused, operations) = advertising.setDesired(sets, limits: controllerInfo?.limits)
        var out = operations.map { KernelAction.management(.advertising($0.1, set: $0.set), session: lifecycle.session) }
        out += refused.map(KernelAction.event)
        return out
    }

    /// A connection in the peripheral role ended a connectable set's advertising (one still
    /// wanted is added again). Once the core has answered the events (the stack's `flush`),
    /// instances nobody wants any more are removed.
    mutating func advertisingEndedByConnection(_ out: inout [KernelAction]) {
        out += advertising.connectionOpened().map(KernelAction.event)
        advertisingSettleOwed = true
    }

    /// The operations owed since a connection ended advertising.
    mutating func settleAdvertising(_ out: inout [KernelAction]) {
        guard advertisingSettleOwed else { return }
        advertisingSettleOwed = false
        guard lifecycle.isReady else { return }
        for (id, op) in advertising.settle() { out.append(.management(.advertising(op, set: id), session: lifecycle.session)) }
    }

    /// How a set's mgmt operation in `session` ended: the events, and what follows.
    mutating func advertisingFinished(
        _ op: KernelAdvertisingDriver.Operation, set id: String, _ outcome: KernelAdvertisingDriver.Outcome, session: Int?, now: Duration
    ) -> [KernelAction] {
        guard lifecycle.isCurrent(session),
            let (events, next) = advertising.finished(id, op, outcome, connected: bearers.links.anyConnected)
        else { return [] }
        var out = events.map(KernelAction.event)
        switch next {
        case .run(let op)?: out.append(.management(.advertising(op, set: id), session: session))
        case .retry(let op, let delay)?: timers.add(.retryAdvertising(op, set: id, session: session), at: now + delay)
        case nil: break
        }
        return out
    }

    // MARK: - Link requests (`KernelLinkControl`)

    mutating func requestLink(_ id: ConnectionID, _ request: LinkRequest) -> [KernelAction] {
        linkControl.request(id, request, adapter: adapterName, leFeatures: controllerInfo?.leFeatures, links: bearers.links)
    }

    mutating func cancelLinkRequest(_ id: ConnectionID, _ kind: LinkRequestKind) {
        linkControl.cancel(id, kind, links: bearers.links)
    }

    /// The controller's answer to a link command.
    mutating func commandAnswered(_ command: HCICommand, status: HCIStatus) -> [KernelAction] {
        linkControl.answered(command, status: status, leFeatures: controllerInfo?.leFeatures, links: bearers.links)
    }
}
