import GattCore
import NIOCore

// Bonds and pairing prompts on the kernel transport: the kernel pairs (its SMP), mgmt tells
// the keys and asks the questions; the bond store's bonds are loaded into the kernel.
extension KernelPeripheralTransport {
    // MARK: - mgmt events

    func managementEvent(_ event: KernelManagementEvent) {
        guard !lifecycle.isClosed else { return }
        switch event {
        case .userConfirmationRequest(let peer, _, let value):
            // Just Works (Confirm_Hint 1) is answered by the agent itself: this is numeric comparison.
            prompt(.confirmation(peer), .numericComparison(value), peer)
        case .userPasskeyRequest(let peer):
            prompt(.passkey(peer), .passkeyRequest, peer)
        case .passkeyNotify(let peer, let passkey, let entered):
            // Entered > 0: the central's keypresses, not a new passkey.
            guard entered == 0, let id = connection(of: peer.address) else { return }
            onEvent?(.pairing(id, .displayPasskey(passkey)))
        case .authenticationFailed(let peer, let status):
            logger.info("pairing with \(peer.address) failed (the kernel's mgmt status 0x\(String(status, radix: 16)))")
            guard let id = connection(of: peer.address) else { return }
            prompts.ended(id)
            onEvent?(.pairing(id, .pairingFailed(.unspecifiedReason, remote: false)))
        case .newConnectionParameter(let entry, _):
            // Sent only when the kernel is the central of a peripheral that asked for parameters.
            logger.debug("\(entry.peer.address): New Connection Parameter ignored (gattd is the peripheral)")
        case .newLongTermKey(let key, _):
            if let done = bondAssembler.add(event) {
                bondCompleted(done)
            } else if key.central {
                // A legacy pairing's central key comes first; ours follows at once if we gave one.
                eventLoop.scheduleTask(in: .seconds(1)) { [weak self] in
                    guard let self, let done = self.bondAssembler.finish(key.peer) else { return }
                    self.bondCompleted(done)
                }
            }
        case .newIdentityResolvingKey, .newSignatureResolvingKey:
            _ = bondAssembler.add(event)
        }
    }

    /// The connected central at `address` (its ATT socket's peer), or at `alias` (the RPA it
    /// paired with before it gave its identity).
    func connection(of address: BluetoothAddress, alias: BluetoothAddress? = nil) -> ConnectionID? {
        links.connection(of: address, alias: alias)
    }

    private func prompt(_ p: KernelPairingPrompt, _ question: SecurityManagerEvent, _ peer: KernelBDAddress) {
        switch prompts.asked(p, on: connection(of: peer.address)) {
        case .ask(let id):
            onEvent?(.pairing(id, question))
        case .refuse(let command):
            logger.warning("\(peer.address): the kernel asks a pairing question about a central gattd has no ATT connection with; refused")
            send(command)
        }
    }

    private func bondCompleted(_ done: KernelBondAssembler.Completed) {
        let bond = done.bond
        if done.bonded { kernelKeys?.add(bond) }
        guard let id = connection(of: bond.address, alias: done.resolvablePrivateAddress) else {
            logger.warning("\(bond.address): the kernel paired with a central gattd has no ATT connection with; its bond is not stored")
            return
        }
        prompts.ended(id)
        onEvent?(.pairing(id, .pairingComplete(bond, bonded: done.bonded)))
    }

    // MARK: - Answers

    /// Passes the daemon's answer to the kernel (User Confirmation / Passkey (Negative) Reply).
    public func respondToPairing(_ id: ConnectionID, _ answer: PairingUserAnswer, now: Duration) -> [Never] {
        guard let command = prompts.answered(id, answer) else {
            logger.debug("\(id): no pairing question of the kernel is waiting; answer ignored")
            return []
        }
        send(command)
        return []
    }

    private func send(_ command: KernelPairingPrompts.Command) {
        if agent?.send(command.opcode, parameters: command.parameters) != true {
            logger.warning("\(adapterName): cannot send mgmt \(command.opcode.name); the kernel's pairing times out")
        }
    }

    // MARK: - Keys

    /// The bond store's bonds: loaded into the kernel now when it lacks some, and at every
    /// open of the adapter (it forgets them when it is unregistered).
    /// The kernel's stack keeps its own identity: ours is not used.
    public func setLocalIRK(_ irk: [UInt8]) {}

    public func setBonds(_ bonds: [Bond]) {
        self.bonds = bonds
        if lifecycle.isReady { loadBondsIntoKernel() }
    }

    /// Unbond: mgmt Unpair Device, so the kernel forgets the central's keys at once (and drops
    /// its link). With the adapter down, the next open loads the bonds without it.
    public func removeBond(_ bond: Bond) {
        let peer = KernelBondMapping.peer(of: bond)
        kernelKeys?.remove(peer)
        guard lifecycle.isReady else { return }
        let index = self.index, logger = self.logger, adapter = adapterName
        commandThread.submit { _ in
            do {
                let had = try KernelManagement.unpair(index: index, peer)
                logger.info("\(adapter): the kernel forgot the keys of \(peer.address)\(had ? "" : " (it had none)") (mgmt Unpair Device)")
            } catch {
                logger.warning("\(adapter): mgmt Unpair Device for \(peer.address) failed (\(error)); loading the remaining bonds instead")
                self.eventLoop.execute {
                    self.kernelKeys = nil
                    if self.lifecycle.isReady { self.loadBondsIntoKernel() }
                }
            }
        }
    }

    /// Load Long Term Keys + Load Identity Resolving Keys with the bonds' keys, unless the
    /// kernel is known to hold exactly those (a pairing it reported itself).
    func loadBondsIntoKernel() {
        let keys = KernelBondMapping.keys(for: bonds)
        if let known = kernelKeys, known.holdsSameKeys(as: keys) { return }
        kernelKeys = keys
        for address in keys.skipped {
            logger.warning("\(address): bond not loaded into the kernel (not an identity address: the kernel refuses it)")
        }
        let index = self.index, logger = self.logger, adapter = adapterName, session = lifecycle.session
        commandThread.submit { _ in
            do {
                let loaded = try KernelManagement.loadKeys(index: index, keys)
                let n = loaded.longTermKeys
                logger.info(
                    "\(adapter): \(n) bond\(n == 1 ? "" : "s") loaded into the kernel (\(n) LTK\(n == 1 ? "" : "s"), \(loaded.identityResolvingKeys) IRK\(loaded.identityResolvingKeys == 1 ? "" : "s"))"
                )
                if loaded.leftOut > 0 { logger.warning("\(adapter): \(loaded.leftOut) older key(s) did not fit one mgmt command and were not loaded") }
            } catch {
                logger.warning("\(adapter): cannot load the bonds into the kernel (\(error)); bonded centrals must pair again")
                self.eventLoop.execute { if self.lifecycle.isCurrent(session) { self.kernelKeys = nil } }
            }
        }
    }

    /// The `security` settings through mgmt (IO capability, bondable, Secure Connections).
    /// Each warning is logged once (again after a reload that changes `security`), not at
    /// every open of the adapter.
    func applySecurity() {
        let settings = securitySettings, index = self.index, adapter = adapterName
        commandThread.submit { _ in
            let warnings: [String]
            do {
                warnings = try KernelManagement.applySecurity(index: index, settings)
            } catch {
                warnings = ["cannot apply the security settings (\(error))"]
            }
            guard !warnings.isEmpty else { return }
            self.eventLoop.execute {
                for warning in warnings where self.securityWarnings.insert(warning).inserted {
                    self.logger.warning("\(adapter): \(warning)")
                }
            }
        }
    }
}
