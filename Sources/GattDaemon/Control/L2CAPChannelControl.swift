import GattControlProtocol
import GattCore

/// App L2CAP channels on the control socket (Core Bluetooth's `publishL2CAPChannel`): the
/// channel list, publishing at run time, and the programs that listen. `ControlServer` keeps
/// who listens for what and hands each opened channel's socket to one of them.
public protocol L2CAPChannelControl: AnyObject {
    /// Every channel: the config's, then the published ones, with their listener counts.
    var l2capChannelList: [ControlL2CAPChannel] { get }
    /// `publish_l2cap_channel` (a channel object as in the config) and `unpublish_l2cap_channel`.
    func publishL2CAPChannel(_ json: JSONValue) -> ControlReply
    func unpublishL2CAPChannel(_ id: String) -> ControlReply
    /// How many programs listen for each channel id: the transport accepts channels to those.
    func setL2CAPListeners(_ counts: [String: Int])
    /// Where opened channels go (set by `ControlServer`): returns false when nobody took the
    /// socket (the caller closes it). `central`: the central's address.
    var l2capChannelHandler: ((L2CAPChannelOpened, _ socket: Int32, _ central: String) -> Bool)? { get set }
}
