import GattCore
import NIOCore

// The H4 daemon as seen by the control socket, persistence, systemd and SIGHUP: what it
// does its own way. The rest is shared with the kernel daemon (`PeripheralBackEnd`).

extension PeripheralDaemon: PeripheralBackEnd, GattPeripheralDaemon {
    func withServer<R, E: Error>(_ body: (inout Host) throws(E) -> R) throws(E) -> R { try body(&host) }

    var centralCount: Int { host.connections.count }

    public func connection(of central: BluetoothAddress) -> ConnectionID? {
        host.connections.values.sorted { $0.handle < $1.handle }.first { $0.peerAddress == central }?.id
    }

    public func status() -> ControlStatus {
        ControlStatus(
            advertising: host.isAdvertising, address: host.advertisedAddress,
            connections: host.connections.values.sorted { $0.handle < $1.handle }.map { c in
                ControlStatus.Central(address: c.peerAddress, addressType: c.peerAddressType, security: c.security, id: c.id, att: host.att)
            })
    }

    public func setAdvertising(_ enabled: Bool) {
        advertisingWanted = enabled
        process(host.setAdvertising(enabled, now: now))
    }

    public func disconnect(_ connection: ConnectionID) {
        process(host.disconnect(connection.rawValue, now: now))
    }

    /// Reload: new advertising data or parameters (the random address stays).
    func advertisingPayloadsChanged() {
        var hc = HostConfiguration(deviceName: configuration.name, advertising: configuration.advertising)
        hc.randomAddress = host.configuration.randomAddress
        process(host.updateAdvertising(hc, payloads: payloads, now: now))
    }
}
