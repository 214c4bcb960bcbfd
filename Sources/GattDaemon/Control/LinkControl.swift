import GattControlProtocol
import GattCore

/// The control op `connection_parameters` (Core Bluetooth's `setDesiredConnectionLatency`,
/// Android's `requestConnectionPriority`): what a peripheral that can ask centrals for new
/// link parameters offers the control socket. `ControlDispatcher` uses it when the peripheral has it.
public protocol LinkControl: AnyObject {
    /// Asks each central of `connections` (nil: every connected central) for `request`; the
    /// reply comes once every one of them answered, refused, left or timed out.
    func requestLink(_ request: LinkRequest, on connections: [ConnectionID]?) -> ControlOutcome
}
