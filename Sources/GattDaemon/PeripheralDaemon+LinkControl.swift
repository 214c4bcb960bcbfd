import GattControlProtocol
import GattCore

// `connection_parameters` and the other link requests (`LinkRequestService`).
extension PeripheralDaemon: LinkControl {
    public func requestLink(_ request: LinkRequest, on connections: [ConnectionID]?) -> ControlOutcome {
        linkRequests.request(request, on: connections)
    }
}
