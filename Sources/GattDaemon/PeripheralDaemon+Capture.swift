import GattCore
import GattTransport

extension PeripheralControl {
    /// A peripheral without a capturing transport.
    public func capture(file: String?) -> ControlReply {
        .failure(ControlError(.invalidValue, "this peripheral cannot capture"))
    }
}

extension PeripheralDaemon {
    /// The `capture` op (`CaptureService`).
    public func capture(file: String?) -> ControlReply { packetCapture.capture(file: file) }
}
