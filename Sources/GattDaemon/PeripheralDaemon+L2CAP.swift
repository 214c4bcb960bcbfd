import GattCore

#if canImport(Glibc)
import Glibc
#endif

extension PeripheralDaemon {
    /// A central opened an app's channel: hand its socket to a program listening for it.
    func l2capChannelOpened(_ channel: L2CAPChannelOpened, central: PeripheralConnection?) {
        // Nobody to hand it to yet: close it (the central sees the channel disconnect).
        logger.warning("\(central.map { "\($0.address)" } ?? "a central") opened L2CAP channel \"\(channel.server)\" (PSM \(channel.psm)) but no program listens for it; closing it")
        _ = close(channel.socket)
    }
}
