import GattCore
import GattTransport

extension PeripheralControl {
    /// A peripheral without a capturing transport.
    public func capture(file: String?) -> ControlReply {
        .failure(ControlError(.invalidValue, "this peripheral cannot capture"))
    }
}

extension PeripheralDaemon {
    /// The `capture` op: a btsnoop file of what the transport records (`PacketCapturing`);
    /// only a new file, so a control client cannot make gattd overwrite one of its own.
    public func capture(file: String?) -> ControlReply {
        guard let t = transport as? any PacketCapturing else {
            return .failure(ControlError(.invalidValue, "this transport cannot capture"))
        }
        guard let file else {
            t.setCapture(nil)
            logger.info("capture stopped")
            return .success
        }
        guard file.hasPrefix("/") else {
            return .failure(ControlError(.invalidValue, "\"file\" must be an absolute path (gattd's working directory is not yours), got \"\(file)\""))
        }
        do {
            let logger = self.logger
            let writer = try BtsnoopWriter(path: file, exclusive: true) { logger.warning("\($0)") }
            t.setCapture(writer)
            logger.info("capturing \(t.captureScope) to \(file) (btsnoop)")
            return .capturing(file: file, records: t.captureScope)
        } catch {
            return .failure(ControlError(.invalidValue, "cannot create \(file): \(error)"))
        }
    }
}
