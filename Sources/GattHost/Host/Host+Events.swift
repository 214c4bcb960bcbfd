import GattCore

// HCI events and command answers (Core Spec Vol 4 Part E §7.7).
extension Host {
    mutating func handle(_ event: HCIEvent) -> [HostOutput] {
        switch event {
        case .commandComplete(let c):
            return answered(c.opcode, credits: c.numHCICommandPackets, status: c.status ?? .success, complete: c) + pumpCommands()
        case .commandStatus(let status, let num, let opcode):
            return answered(opcode, credits: num, status: status, complete: nil) + pumpCommands()
        case .numberOfCompletedPackets(let entries):
            for e in entries { acl.completed(e.handle, count: Int(e.count)) }
            return pumpACL()
        case .disconnectionComplete(let status, let handle, let reason):
            guard status == .success else {
                return [.event(.warning("Disconnect of handle \(handle) failed: \(status)"))]
            }
            return connectionClosed(handle, reason: reason)
        case .encryptionChange(let status, let handle, let enabled):
            return encryptionChanged(handle: handle, status: status, enabled: enabled != 0)
        case .encryptionKeyRefreshComplete(let status, let handle):
            return encryptionChanged(handle: handle, status: status, enabled: true)
        case .hardwareError(let code):
            return [.event(.fatal("the controller reported hardware error 0x\(String(code, radix: 16))"))]
        case .dataBufferOverflow:
            return [.event(.warning("the controller reported a data buffer overflow"))]
        case .leMeta(let meta):
            return handle(meta)
        case .unknown:
            return []
        }
    }

    private mutating func handle(_ meta: HCILEMetaEvent) -> [HostOutput] {
        switch meta {
        case .connectionComplete(let c), .enhancedConnectionComplete(let c), .enhancedConnectionCompleteV2(let c):
            return connectionOpened(c)
        case .longTermKeyRequest(let handle, let rand, let ediv):
            return longTermKeyRequested(handle: handle, rand: rand, ediv: ediv)
        case .remoteConnectionParameterRequest(let handle, let p):
            commands.append(.leRemoteConnectionParameterRequestReply(handle: handle, parameters: p, minCELength: 0, maxCELength: 0))
            return pumpCommands()
        case .advertisingSetTerminated(let status, let handle, let connection, _):
            return advertising.setTerminated(handle: handle, status: status, connectionHandle: connection).map { .event(.transport($0)) }
        case .dataLengthChange, .phyUpdateComplete, .connectionUpdateComplete:
            return apply(linkProcedures.handle(meta))
        case .readRemoteFeaturesComplete, .unknown:
            return []
        }
    }

    /// The answer to the outstanding command (Command Complete or Command Status).
    private mutating func answered(_ opcode: HCIOpcode, credits: UInt8, status: HCIStatus, complete: HCICommandComplete?) -> [HostOutput] {
        // A NOP (opcode 0) just grants credits; other strays are ignored.
        guard let command = commands.answered(opcode: opcode, credits: credits) else { return [] }
        if advertising.isBatchCommand(command) {
            return advertisingCommandAnswered(command, status: status)
        }
        var out: [HostOutput]
        if status != .success {
            out = failed(command, status: status)
        } else {
            do {
                out = try succeeded(command, complete)
            } catch {
                return [.event(.fatal("\(command.name) returned malformed parameters: \(error)"))]
            }
        }
        // Bring-up ends when its last command is answered.
        if phase == .bringingUp(buffersKnown: true), commands.isEmpty { out += becameReady() }
        return out
    }

    private mutating func failed(_ command: HCICommand, status: HCIStatus) -> [HostOutput] {
        if let steps = linkProcedures.answered(command, status: status) { return apply(steps) }
        if bringUp.failed(command, commands: &commands) { return [] }
        if command.isOptional { return [.event(.warning("\(command.name) failed: \(status)"))] }
        return [.event(.fatal("\(command.name) failed: \(status)"))]
    }

    private mutating func succeeded(_ command: HCICommand, _ complete: HCICommandComplete?) throws -> [HostOutput] {
        if case .leSetDataLength = command { return linkProcedures.answered(command, status: .success).map { apply($0) } ?? [] }
        switch try bringUp.succeeded(command, complete, commands: &commands, acl: &acl) {
        case .none: break
        case .advertisingChosen: advertising = .legacy(AdvertisingRotation())  // the extended sets' limits come next (`becameReady`)
        case .buffersKnown: setOwnAddress()
        case .fatal(let reason): return [.event(.fatal(reason))]
        }
        return []
    }

    /// A command of the running advertising batch was answered: the batch goes on, or ends
    /// (its last command is always an enable or disable).
    private mutating func advertisingCommandAnswered(_ command: HCICommand, status answered: HCIStatus) -> [HostOutput] {
        let status = advertising.isHarmless(command, answered) ? .success : answered
        let last = command.isAdvertisingEnable && !commands.containsAdvertisingCommand
        guard status != .success || last else { return [] }
        if status != .success {
            commands.removeAdvertisingCommands()
        }
        let (events, next) = advertising.batchFinished(failure: status == .success ? nil : (command, status), connected: !connections.isEmpty)
        var out: [HostOutput] = []
        for e in events {
            if case .advertisingRefused(let whileConnected, _, let set) = e, !whileConnected, set == AdvertisingSet.primaryID {
                // A controller that will not advertise at all is not usable as a peripheral.
                out.append(.event(.fatal("\(command.name) failed: \(status)")))
                continue
            }
            out.append(.event(.transport(e)))
        }
        if let next { commands.append(contentsOf: next) }
        return out
    }
}
