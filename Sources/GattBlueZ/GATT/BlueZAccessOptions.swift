import GattDBus

/// The options dictionary of `ReadValue`/`WriteValue` (doc/org.bluez.GattCharacteristic.rst).
public struct BlueZAccessOptions: Sendable, Equatable {
    /// The central's `Device1` path.
    public var device: String?
    public var offset: Int = 0
    public var mtu: Int?
    /// "LE" or "BR/EDR".
    public var link: String?
    /// A write's kind: "command", "request" or "reliable".
    public var type: String?
    /// A Prepare Write asking whether it would be authorized (nothing is written).
    public var prepareAuthorize = false

    public init(device: String? = nil, offset: Int = 0, mtu: Int? = nil, link: String? = nil, type: String? = nil, prepareAuthorize: Bool = false) {
        self.device = device
        self.offset = offset
        self.mtu = mtu
        self.link = link
        self.type = type
        self.prepareAuthorize = prepareAuthorize
    }

    init(_ value: DBusValue?) {
        let d = value?.dictionary ?? [:]
        device = d["device"]?.string
        offset = d["offset"]?.integer ?? 0
        mtu = d["mtu"]?.integer
        link = d["link"]?.string
        type = d["type"]?.string
        prepareAuthorize = d["prepare-authorize"]?.bool ?? false
    }
}
