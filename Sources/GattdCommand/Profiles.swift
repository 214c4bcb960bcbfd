import GattCore
import GattDaemon
import GattProfiles
import Logging
import NIOCore
import Synchronization

/// The profiles' catalog, with what this machine says about itself (Device Information's
/// defaults): one per process, used by every config load, `--check-config` and `add_service`.
let profileCatalog = ProfileCatalog(system: SystemFacts.read())
