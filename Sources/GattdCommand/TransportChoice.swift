import GattBlueZ
import GattTransport

/// `--transport` as given, or the default (`TransportSpec.chosen`): hci0 through bluetoothd
/// when it is on the system bus, else through the kernel, with the reason for the log.
func chooseTransport(_ text: String?) throws(TransportSpecError) -> (spec: TransportSpec, reason: String?) {
    if let text { return (try TransportSpec(parsing: text), nil) }
    let (spec, reason) = TransportSpec.chosen(bluetoothdRunning: BlueZ.isRunning())
    return (spec, reason)
}
