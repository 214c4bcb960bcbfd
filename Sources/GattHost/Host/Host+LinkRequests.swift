import GattCore

// A program's requests for one link (`requestLink`) and what each link's parameters are: the
// rules are `LinkProcedures`'; the host sends what they ask (HCI commands, the L2CAP
// Connection Parameter Update Request) and reports what they tell.
extension Host {
    public mutating func requestLink(_ id: ConnectionID, _ request: LinkRequest, now: Duration) -> [HostOutput] {
        self.now = now
        // A link not connected is refused by `linkProcedures` (it opens and closes with `connections`).
        let supported = bringUp.supportedCommands
        let steps = linkProcedures.request(id.rawValue, request, leFeatures: controller.leFeatures) { supported?.isSupported($0.opcode) ?? false }
        return apply(steps)
    }

    /// The program stopped waiting for `kind` on `id` (its timeout): the request is forgotten,
    /// so that a late answer does not answer a later request.
    public mutating func cancelLinkRequest(_ id: ConnectionID, _ kind: LinkRequestKind, now: Duration) -> [HostOutput] {
        self.now = now
        linkProcedures.cancel(id.rawValue, kind)
        return []
    }

    /// Carries out what `LinkProcedures` returned, in order.
    mutating func apply(_ steps: [LinkProcedures.Step]) -> [HostOutput] {
        var out: [HostOutput] = []
        var sendsCommands = false
        var sendsSignalling = false
        for step in steps {
            switch step {
            case .command(let command):
                commands.append(command)
                sendsCommands = true
            case .signal(let handle, let p):
                let identifier = signalling.next()
                linkProcedures.signalled(handle, identifier: identifier)
                acl.queue(frame: LESignallingPDU(identifier: identifier, command: .connectionParameterUpdateRequest(p)).frame, on: handle)
                sendsSignalling = true
            case .changed(let handle, let link):
                out.append(.event(.transport(.linkChanged(ConnectionID(handle), link))))
            case .finished(let handle, let kind, let result):
                out.append(.event(.transport(.linkRequestFinished(ConnectionID(handle), kind, result))))
            case .warning(let warning):
                out.append(.event(.warning(warning)))
            }
        }
        if sendsCommands { out += pumpCommands() }
        if sendsSignalling { out += pumpACL() }
        return out
    }

    /// LE Set PHY for a new link (`LinkProcedures.preferredPHYCommand`).
    func preferredPHYRequest(_ handle: UInt16) -> HCICommand? {
        LinkProcedures.preferredPHYCommand(handle, phys: configuration.advertising.connectionPHYs, leFeatures: controller.leFeatures)
    }
}
