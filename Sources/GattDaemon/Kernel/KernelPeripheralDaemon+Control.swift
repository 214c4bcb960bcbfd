import GattCore
import GattTransport
import NIOCore

// The kernel-transport daemon as seen by the control socket, persistence, systemd and
// SIGHUP: what it does its own way. The rest is shared with the H4 daemon (`PeripheralBackEnd`).

extension KernelPeripheralDaemon: PeripheralBackEnd, GattPeripheralDaemon {
    func withServer<R, E: Error>(_ body: (inout ATTServer) throws(E) -> R) throws(E) -> R { try body(&server) }

    var centralCount: Int { links.count }

    public func connection(of central: BluetoothAddress) -> ConnectionID? {
        links.sorted { $0.key.rawValue < $1.key.rawValue }.first { $0.value.bearer.peer.address == central }?.key
    }

    public func status() -> ControlStatus {
        ControlStatus(
            advertising: isAdvertising, address: address,
            connections: links.sorted { $0.key.rawValue < $1.key.rawValue }.map { id, link in
                ControlStatus.Central(
                    address: link.bearer.peer.address, addressType: link.bearer.peer.type.hciAddressType, security: link.security,
                    id: id, att: server)
            })
    }

    public func setAdvertising(_ enabled: Bool) {
        advertisingWanted = enabled
        updateAdvertising()
    }

    /// HCI Disconnect (Remote User Terminated) on the central's link; the bearer's
    /// ECONNRESET then cleans up as for any disconnection.
    public func disconnect(_ connection: ConnectionID) {
        guard let link = links[connection] else { return }
        guard let handle = link.handle, let controller else {
            link.bearer.close()
            return
        }
        let logger = self.logger
        runCommand {
            do {
                try controller.send(.disconnect(handle: handle, reason: .remoteUserTerminatedConnection))
            } catch {
                logger.warning("cannot disconnect \(link.bearer.peer.address): \(error)")
            }
        }
    }

    /// The kernel daemon's reload line for a new database (shorter than the H4 daemon's).
    func databaseChangedLine(oldHash: [UInt8], newHash: [UInt8], serviceChanged r: NotifyResult) -> String {
        "config reloaded: database changed; Service Changed: \(r)"
    }
}
