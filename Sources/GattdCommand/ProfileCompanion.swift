import GattCore
import GattDaemon
import GattProfiles
import Logging
import NIOCore
import Synchronization

/// The profiles' agents beside the daemon (`DaemonCompanion`): started once the control server
/// is up, restarted with the instances of each config reload takes.
final class ProfileCompanion: DaemonCompanion {
    private let instances: Mutex<[ProfileInstance]>
    private let runner = Mutex<ProfileRunner?>(nil)
    let logger: Logger

    init(instances: [ProfileInstance], logger: Logger) {
        self.instances = Mutex(instances)
        self.logger = logger
    }

    /// The config at `path` was loaded (and is the one a reload will serve): its instances,
    /// and their warnings logged.
    func loaded(path: String, configuration: DaemonConfiguration) {
        guard case .success(let data) = ConfigLoader.readFile(path), let root = try? JSONParser.parse(data) else { return }
        let found = profileCatalog.instances(inConfig: root)
        let sets = (try? configuration.gatt.allAdvertisingSets()) ?? []
        for w in found.flatMap(\.warnings) + profileCatalog.advertisingWarnings(found, sets: sets) { logger.warning("\(path): \(w)") }
        instances.withLock { $0 = found }
    }

    func start(control: ControlServer) {
        let r = ProfileRunner(eventLoop: control.eventLoop, logger: logger) { control.connectLocalClient() }
        runner.withLock { $0 = r }
        r.run(instances.withLock { $0 })
    }

    func reload() {
        let current = instances.withLock { $0 }
        runner.withLock { $0 }?.run(current)
    }

    func stop(on eventLoop: any EventLoop) -> EventLoopFuture<Void> {
        runner.withLock { $0 }?.stop() ?? eventLoop.makeSucceededVoidFuture()
    }
}
