import GattCore
import GattTransport
import Logging

/// The `capture` op: a btsnoop file of what the transport records (`PacketCapturing`), only a
/// new file, so a control client cannot make gattd overwrite one of its own.
struct CaptureService {
    /// The transport's recorder; nil when it cannot capture.
    let recorder: (any PacketCapturing)?
    let logger: Logger

    init(transport: any PeripheralTransport, logger: Logger) {
        recorder = transport as? any PacketCapturing
        self.logger = logger
    }

    /// Starts capturing to `file` (nil: stops).
    func capture(file: String?) -> ControlReply {
        guard let t = recorder else {
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
