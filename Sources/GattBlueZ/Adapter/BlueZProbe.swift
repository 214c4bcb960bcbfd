import GattDBus
import GattTransport
import NIOCore

/// `gattd --probe --transport bluez:hciN`: asks bluetoothd (one `GetManagedObjects` on the
/// system bus) what the adapter is and what gattd can do through it; nothing goes on the air.
public enum BlueZProbe {
    public static func probe(_ index: Int, bus: DBusConnection.Bus = .system, eventLoop: any EventLoop, timeout: TimeAmount) -> EventLoopFuture<ControllerProbe> {
        let promise = eventLoop.makePromise(of: ControllerProbe.self)
        let connection: DBusConnection
        do {
            connection = try DBusConnection(bus, description: "gattd-probe")
        } catch {
            promise.fail(ControllerProbeFailure(BlueZError.noBus(error.message).description))
            return promise.futureResult
        }
        connection.call(BlueZ.managedObjectsCall, timeout: .nanoseconds(timeout.nanoseconds)) { result in
            do throws(BlueZError) {
                let objects = try result.mapError { BlueZError.answer("asking bluetoothd for its adapters", $0) }.get()
                promise.succeed(try BlueZAdapter.find(index, in: objects.first ?? .array(element: "{oa{sa{sv}}}", [])).probe)
            } catch {
                promise.fail(ControllerProbeFailure(error.description))
            }
        }
        return promise.futureResult.always { _ in
            // Not on the bus thread (the reply ran there): close from the event loop.
            eventLoop.execute { connection.close() }
        }
    }
}
