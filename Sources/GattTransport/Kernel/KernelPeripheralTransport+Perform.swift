import GattCore
import GattHost
import NIOCore

// The rules' actions, carried out: socket writes and closes, HCI commands and mgmt operations
// (`KernelCommands`: their answers go back to the rules on the loop).
extension KernelPeripheralTransport {
    public func perform(_ output: KernelOutput) {
        switch output.action {
        case .event:
            break  // the stack has queued it for the core
        case .log(let level, let message):
            logger.log(level: level, "\(message)")
        case .startReading(let socket, let id, let securityFrom, let readsMTU, let captureHandle):
            sockets.startReading(socket, bearer: id, securityFrom: securityFrom, readsMTU: readsMTU, captureHandle: captureHandle)
        case .write(let socket, let pdu):
            sockets.write(pdu, on: socket)
        case .close(let socket):
            sockets.close(socket)
        case .readSecurity(let socket):
            sockets.readSecurity(socket)
        case .requestSecurity(let socket, let level, let id, let what, let peer):
            sockets.requestSecurity(socket, level, id, what: what, peer: peer)
        case .openChannel(let socket, let server, let id, let linkKnown):
            sockets.openChannel(socket, server: server, connection: id, linkKnown: linkKnown)
        case .hci(let command, let answered, let failure):
            guard let controller else { break }
            commands.send(command, on: controller, answered: answered, failure: failure) { [weak self] in self?.answered($0, session: nil) }
        case .pairingReply(let command):
            if agent?.send(command.opcode, parameters: command.parameters) != true {
                logger.warning("\(adapterName): cannot send mgmt \(command.opcode.name); the kernel's pairing times out")
            }
        case .management(let operation, let session):
            commands.run(operation) { [weak self] in self?.answered($0, session: session) }
        case .listen(let servers, let enhancedATT):
            sockets.listen(servers: servers, enhancedATT: enhancedATT, on: listener?.address)
        case .closeAdapter:
            listener?.close()
            listener = nil
            sockets.closeListeners()
            if let controller { commands.thread.submit { _ in controller.close() } }
            controller = nil
        }
    }

    /// What the command thread brought back, for the rules.
    func answered(_ answer: KernelCommands.Answer, session: Int?) {
        rules { rules, now in
            switch answer {
            case .securityWarnings(let warnings): return rules.securityApplied(warnings: warnings)
            case .keysNotLoaded:
                rules.keysNotLoaded(session: session)
                return []
            case .unpairFailed: return rules.unpairFailed()
            case .advertising(let op, let set, let outcome): return rules.advertisingFinished(op, set: set, outcome, session: session, now: now)
            case .command(let command, let status): return rules.commandAnswered(command, status: status)
            }
        }
    }
}
