import GattCore
import NIOCore

/// What `gattd --probe` prints: the controller line a transport logs when it is ready, and
/// what the controller is and can do (nil when the transport could not tell).
public struct ControllerProbe: Sendable, Equatable {
    public var description: String
    public var controller: ControllerInfo?
    /// The report's lines, where the transport reads no HCI fields (BlueZ: what bluetoothd
    /// says of the adapter); nil: `gattd --probe` prints the controller's own.
    public var report: [String]?

    public init(description: String, controller: ControllerInfo?, report: [String]? = nil) {
        self.description = description
        self.controller = controller
        self.report = report
    }
}

/// A probe that did not get as far as a ready controller.
public struct ControllerProbeFailure: Error, Sendable, CustomStringConvertible {
    public var description: String
    /// The exit status: what the transport named for a failure waiting cannot fix, else 69.
    public var exitCode: Int32

    public init(_ description: String, exitCode: Int32 = 69) {
        self.description = description
        self.exitCode = exitCode
    }

    init(_ error: any Error) {
        if let f = error as? ControllerProbeFailure {
            self = f
        } else if let f = error as? TransportOpenFailure, case .never(let code) = f.retry {
            self.init(f.message, exitCode: code)
        } else {
            self.init("\(error)")
        }
    }
}

extension PeripheralTransport {
    /// Opens the transport, waits for `.ready` (at most `timeout`), and closes it again: for
    /// transports that own their controller (the H4 host resets it and reads it at bring-up,
    /// as the daemon would). Nothing calls `setAdvertising`, so nothing goes on the air.
    public func probeByOpening(timeout: TimeAmount) -> EventLoopFuture<ControllerProbe> {
        eventLoop.flatSubmit {
            let promise = self.eventLoop.makePromise(of: ControllerProbe.self)
            self.onEvent = { event in
                switch event {
                case .ready(_, let description, let controller): promise.succeed(ControllerProbe(description: description, controller: controller))
                case .lost(let reason): promise.fail(ControllerProbeFailure(reason))
                default: break
                }
            }
            let deadline = self.eventLoop.scheduleTask(in: timeout) {
                promise.fail(ControllerProbeFailure("the controller did not finish its bring-up in \(timeout.nanoseconds / 1_000_000_000) s"))
            }
            self.open().whenFailure { promise.fail($0) }
            let result = self.eventLoop.makePromise(of: ControllerProbe.self)
            promise.futureResult.whenComplete { outcome in
                deadline.cancel()
                self.close().whenComplete { _ in
                    switch outcome {
                    case .success(let probe): result.succeed(probe)
                    case .failure(let error): result.fail(ControllerProbeFailure(error))
                    }
                }
            }
            return result.futureResult
        }
    }
}
