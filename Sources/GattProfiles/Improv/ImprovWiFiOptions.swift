import GattCore

/// Improv Wi-Fi's options (`{"profile": "improv_wifi", ...}`).
public struct ImprovWiFiOptions: Sendable, Equatable {
    public enum Authorization: Sendable, Equatable {
        /// Starts authorized (the spec's "does not require authorization").
        case none
        /// Authorization Required until `gattctl improv authorize` (the control op `signal`),
        /// then Authorized for this long.
        case control(Duration)
    }
    public enum WiFi: Sendable, Equatable {
        /// NetworkManager through `nmcli` (found in PATH).
        case networkManager
        /// A program: one JSON line `{"ssid": …, "password": …}` on stdin, exit 0 when connected.
        /// `scan`: a program printing one JSON object `{"ssid", "rssi", "auth"}` per line.
        case command(connect: [String], scan: [String]?)
    }
    public var authorization = Authorization.control(.seconds(60))
    public var wifi = WiFi.networkManager
    /// Sent as the RPC result after provisioning, `{ip}` replaced by the address.
    public var redirectURL: String?
    /// Run for Identify (capability bit 0); nil: Identify not supported.
    public var identifyCommand: [String]?
    /// How long the backend may take to connect (or scan, or identify).
    public var timeout: Duration = .seconds(60)
    /// The advertising set that carries the service UUID and service data 0x4677 (nil: the primary set).
    public var advertisingSet: String?
    /// Device Info's device name (nil: the host name).
    public var deviceName: String?
    /// The service's id (`gattctl improv authorize --id ID` authorizes this one only).
    public var serviceID: String
    public var stateID: String
    public var errorID: String
    public var rpcCommandID: String
    public var rpcResultID: String
    public var capabilitiesID: String

    var capabilities: ImprovSession.Capabilities {
        let scan: Bool
        switch wifi {
        case .networkManager: scan = true
        case .command(_, let s): scan = s != nil
        }
        return ImprovSession.Capabilities(identify: identifyCommand != nil, scan: scan)
    }

    var authorizationTimeout: Duration? {
        if case .control(let d) = authorization { return d }
        return nil
    }
}
