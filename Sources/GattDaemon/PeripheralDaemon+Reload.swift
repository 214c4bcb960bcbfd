import GattCore
import GattTransport
import NIOCore

// SIGHUP: a new config served without dropping connections.
extension PeripheralDaemon {
    /// Switches to a new, already validated config without dropping connections
    /// (`Peripheral.reload`), with its daemon `settings` (state restoration is chosen at start
    /// only). Fails, changing nothing, when the transport refuses it.
    public func reload(configuration new: GattConfiguration, settings: DaemonSettings, payloads: AdvertisingPayloads) -> EventLoopFuture<Void> {
        eventLoop.submit {
            if let refusal = self.transport.refusal(of: new) ?? self.controller.refusal(of: new, payloads: payloads) {
                throw ReloadRefused(message: refusal)
            }
            try? self.options.notifier.reloading()
            var new = new
            self.l2capChannels.adopt(&new)
            // Runtime services stay (at their handles) with state restoration, else go.
            let (services, kept) = ServiceCatalog.restoring(new, self.restoration.state, l2capChannels: self.l2capChannels.channels, expander: self.options.serviceExpander, logger: self.logger)
            var database = services.database(new)
            self.persistence.values?.apply(to: &database)
            let (primary, otherSets) = self.reloadedAdvertising(from: self.configuration, to: new, payloads: payloads)
            self.configuration = new
            self.settings = settings
            self.services.reloaded(services)
            self.restoration.keep(kept, what: "the runtime services")
            self.keepAdvertisingData()
            let now = self.now
            self.stack.configureBelow(new, now: now)
            self.core.setMinimumEncryptionKeySize(new.security.minimumKeySize)
            self.core.securityOnConnect = new.security.securityOnConnect
            let before = self.core.database.serviceFingerprints
            self.process(self.core.reload(
                database: database, payloads: primary, otherSets: otherSets, maxConnections: new.advertising.maxConnections, now: self.now))
            self.bonds.databaseChanged(before: before)
            self.transport.serveDatabase(self.core.database)
            self.applyEnhancedATT()
            try? self.options.notifier.ready(status: self.statusLine())
            self.l2capChannels.updateServers()
            self.cleanPages.schedule()
        }
    }

    /// Server Supported Features' EATT bit: the config's `eatt` where the transport can serve
    /// it now (asked at start, on reload and whenever the adapter is ready).
    static func servesEnhancedATT(_ configuration: GattConfiguration, _ transport: any PeripheralTransport) -> Bool {
        configuration.enhancedATT && transport.supportsEnhancedATT
    }

    /// The config's `eatt` where the transport can: Server Supported Features' EATT bit, and
    /// whether the transport accepts Enhanced ATT bearers (new channels only; open ones stay).
    func applyEnhancedATT() {
        let wanted = configuration.enhancedATT
        stack.setEnhancedATT(wanted, now: now)
        core.setEnhancedATT(Self.servesEnhancedATT(configuration, transport))
        // The transport logs why, once; this line only says what follows from it.
        if wanted, !transport.supportsEnhancedATT, !loggedNoEnhancedATT {
            loggedNoEnhancedATT = true
            logger.debug("Enhanced ATT: this transport cannot accept it; Server Supported Features says so")
        }
    }

    /// A reload the transport cannot serve.
    public struct ReloadRefused: Error, Sendable, CustomStringConvertible {
        public var message: String
        public var description: String { message }
    }
}
