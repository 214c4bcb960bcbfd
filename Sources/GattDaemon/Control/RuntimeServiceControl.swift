import GattControlProtocol

/// The control ops `add_service`, `remove_service` and `list_services` (Core Bluetooth's
/// `CBPeripheralManager.add`/`remove`): what a peripheral that can change its database while
/// running offers the control socket. `ControlDispatcher` uses it when the peripheral has it.
public protocol RuntimeServiceControl: AnyObject {
    func runServiceCommand(_ command: ControlCommand) -> ControlReply
}
