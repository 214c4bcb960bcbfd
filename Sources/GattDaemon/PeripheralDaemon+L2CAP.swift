import GattControlProtocol
import GattCore

// App L2CAP channels for the control socket (`L2CAPChannelService`).
extension PeripheralDaemon: L2CAPChannelControl {
    public var l2capChannelList: [ControlL2CAPChannel] { l2capChannels.list }

    public func publishL2CAPChannel(_ json: JSONValue) -> ControlReply { l2capChannels.publish(json) }

    /// Refused while a service publishes the channel's PSM.
    public func unpublishL2CAPChannel(_ id: String) -> ControlReply {
        if let s = services.publishing(l2capChannel: id) {
            return .failure(ControlError(.unknownChannel, "the service \(s.id ?? "\(s.uuid)") publishes the PSM of \"\(id)\"; remove it first"))
        }
        return l2capChannels.unpublish(id)
    }

    public func setL2CAPListeners(_ counts: [String: Int]) { l2capChannels.setListeners(counts) }

    /// `L2CAPChannelControl`: where opened channels go (set by `ControlServer`).
    public var l2capChannelHandler: ((L2CAPChannelOpened, _ socket: Int32, _ central: String) -> Bool)? {
        get { l2capChannels.handler }
        set { l2capChannels.handler = newValue }
    }
}
