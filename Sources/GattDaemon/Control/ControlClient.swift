import DequeModule
import GattControlProtocol
import NIOCore

/// One connected control client (confined to the server's event loop).
final class ControlClient: @unchecked Sendable {
    let number: Int
    let channel: any Channel
    /// One of gattd's own agents (`connectLocalClient`), not a program on the socket.
    let local: Bool
    var watching = false
    /// Sent `{"op":"watch","requests":true}`: answers forwarded reads and writes.
    var responding = false
    /// A `notify` answered `busy`: `ready` is due to this client.
    var owesReady = false
    var dropped = false
    /// Replies of the current read batch not yet written (see `ControlServer.sendBatch`).
    var batch: ByteBuffer?
    /// A `"wait":true` notify that found a full queue; the requests read after it are `held`.
    var waiting: ControlRequest?
    var held: Deque<ControlLineFramer.Output> = []
    /// Replies waiting for an earlier one that is not known yet (a persisted `set`).
    var unsentReplies: [ReplySlot] = []
    /// The L2CAP channel ids this client listens for (`l2cap_listen`).
    var listening: Set<String> = []
    /// The socket's descriptor (found at the first `l2cap_listen`), to pass channels on.
    var socketFD: Int32?
    /// Opened channels (their sockets and event lines) waiting to be passed, in order.
    var passing: Deque<(socket: Int32, line: String)> = []
    /// `passing` waits for NIO's queue to drain or the socket to take a byte.
    var passingBlocked = false
    final class ReplySlot {
        var text: String?
        init(text: String?) { self.text = text }
    }
    init(number: Int, channel: any Channel, local: Bool) {
        self.number = number
        self.channel = channel
        self.local = local
    }
}
