import GattCore
import GattDBus
import GattTransport

/// One adapter as bluetoothd exports it (`/org/bluez/hciN`: `org.bluez.Adapter1`,
/// `LEAdvertisingManager1`, `GattManager1`), read from `GetManagedObjects`: what gattd can do
/// through it. Sans-I/O: built from the bus's answer, tested on recorded ones.
public struct BlueZAdapter: Sendable, Equatable {
    public var index: Int
    public var address: BluetoothAddress
    /// `AddressType` "random": the adapter's identity is a static random address.
    public var randomAddress = false
    public var name: String?
    public var powered: Bool
    /// bluetoothd's version ("5.66"), from the adapter's Device ID (`Modalias`), when it says.
    public var bluetoothdVersion: String?
    /// `Roles`: "central", "peripheral"...
    public var roles: [String]
    /// Whether bluetoothd serves GATT applications (`GattManager1`) on it.
    public var gattManager: Bool
    /// `LEAdvertisingManager1`; nil: bluetoothd cannot advertise on it.
    public var advertising: Advertising?

    /// What bluetoothd's advertising manager takes.
    public struct Advertising: Sendable, Equatable {
        public var supportedInstances: Int
        public var activeInstances: Int
        public var includes: [String]
        /// `SupportedSecondaryChannels`: "1M", "2M", "Coded" (BlueZ 5.54 on; extended advertising).
        public var secondaryChannels: [String]
        /// `SupportedFeatures`: "CanSetTxPower", "HardwareOffload" (BlueZ 5.60 on).
        public var features: [String]
        /// `SupportedCapabilities.MaxAdvLen`, when bluetoothd says (else 31, legacy).
        public var maximumDataLength: Int
    }

    public static func path(_ index: Int) -> String { "/org/bluez/hci\(index)" }

    /// `Adapter1.Powered` set true on adapter `index`.
    static func powerOnCall(_ index: Int) -> DBusCall {
        DBusCall(
            destination: BlueZ.service, path: path(index), interface: "org.freedesktop.DBus.Properties", member: "Set",
            [.string("org.bluez.Adapter1"), .string("Powered"), .variant(.boolean(true))])
    }

    /// `Device1.Disconnect` of the device at `path`.
    static func disconnectCall(_ path: String) -> DBusCall { DBusCall(destination: BlueZ.service, path: path, interface: BlueZDevices.interface, member: "Disconnect") }

    /// `Adapter1.RemoveDevice` of the device at `device` on adapter `index`: its bond goes, and its link.
    static func removeDeviceCall(_ index: Int, _ device: String) -> DBusCall {
        DBusCall(destination: BlueZ.service, path: path(index), interface: "org.bluez.Adapter1", member: "RemoveDevice", [.objectPath(device)])
    }

    /// The adapter `hci<index>` in a `GetManagedObjects` answer (`a{oa{sa{sv}}}`); the error
    /// names the adapters there are.
    public static func find(_ index: Int, in objects: DBusValue) throws(BlueZError) -> BlueZAdapter {
        let all = objects.dictionary ?? [:]
        guard let interfaces = all[path(index)]?.dictionary, let adapter = interfaces["org.bluez.Adapter1"]?.dictionary else {
            let names = all.compactMap { path, value in value.dictionary?["org.bluez.Adapter1"] != nil ? path.split(separator: "/").last.map(String.init) : nil }.sorted()
            throw .noAdapter(index, present: names)
        }
        var a = BlueZAdapter(
            index: index, address: BluetoothAddress(adapter["Address"]?.string ?? "") ?? .zero, name: adapter["Alias"]?.string ?? adapter["Name"]?.string,
            powered: adapter["Powered"]?.bool ?? false, bluetoothdVersion: Self.version(modalias: adapter["Modalias"]?.string),
            roles: adapter["Roles"]?.items?.compactMap(\.string) ?? [], gattManager: interfaces["org.bluez.GattManager1"] != nil, advertising: nil)
        a.randomAddress = adapter["AddressType"]?.string == "random"
        if let m = interfaces["org.bluez.LEAdvertisingManager1"]?.dictionary {
            let caps = m["SupportedCapabilities"]?.dictionary ?? [:]
            a.advertising = Advertising(
                supportedInstances: m["SupportedInstances"]?.integer ?? 0, activeInstances: m["ActiveInstances"]?.integer ?? 0,
                includes: m["SupportedIncludes"]?.items?.compactMap(\.string) ?? [],
                secondaryChannels: m["SupportedSecondaryChannels"]?.items?.compactMap(\.string) ?? [],
                features: m["SupportedFeatures"]?.items?.compactMap(\.string) ?? [],
                maximumDataLength: caps["MaxAdvLen"]?.integer ?? AdvertisingPayloadBuilder.maximumDataLength)
        }
        return a
    }

    /// "5.66" from a Device ID modalias such as `usb:v1D6Bp0246d0542` (bluetoothd's own
    /// version as its Device ID: major in the high byte, minor in the low one).
    static func version(modalias: String?) -> String? {
        guard let modalias, let d = modalias.lastIndex(of: "d"), modalias[..<d].hasSuffix("p0246") || modalias.contains("v1D6B") else { return nil }
        guard let v = UInt16(modalias[modalias.index(after: d)...], radix: 16) else { return nil }
        return "\(v >> 8).\(v & 0xFF)"
    }

    /// What advertising sets fit: one per free instance (they are all on the air at once,
    /// on BlueZ's own schedule where the controller has fewer sets), each with `MaxAdvLen` bytes.
    public var limits: AdvertisingLimits {
        guard let advertising else { return AdvertisingLimits(numberOfSets: 0, maximumDataLength: AdvertisingPayloadBuilder.maximumDataLength, extendedPDUs: false) }
        return AdvertisingLimits(
            numberOfSets: advertising.supportedInstances, maximumDataLength: advertising.maximumDataLength,
            extendedPDUs: !advertising.secondaryChannels.isEmpty, setsTakeTurns: false)
    }

    /// What `gattd --probe` prints and the controller that `--check-config --probe` checks.
    public var probe: ControllerProbe {
        var c = ControllerInfo()
        c.address = address
        let summary = advertising.map { "bluetoothd's advertising manager (\($0.supportedInstances) instances, \($0.maximumDataLength) bytes of data each)" } ?? "none (bluetoothd has no advertising manager on this adapter)"
        c.advertisingOwner = .stack(limits: limits, summary: summary)
        c.nonConnectableSetsUseControllerAddress = false
        return ControllerProbe(description: "hci\(index) \(address) through \(bluetoothd); \(Self.limitations)", controller: c, report: reportLines)
    }

    /// "bluetoothd 5.66", or "bluetoothd" when its version is not known.
    var bluetoothd: String { "bluetoothd" + (bluetoothdVersion.map { " \($0)" } ?? "") }

    /// What gattd cannot do through bluetoothd (5.66), in `status` and the log (docs/bluez.md).
    static let limitations =
        "through it notify reaches every subscribed central (never one), is never busy, and confirmations name no central; no link requests, no captures (docs/bluez.md)"

    var reportLines: [String] {
        var lines = ["controller \(address) at bluez:hci\(index), through \(bluetoothd) on the system bus"]
        func field(_ name: String, _ value: String) { lines.append("  " + name + String(repeating: " ", count: max(1, 13 - name.count)) + value) }
        field("name", name ?? "(none)")
        field("powered", powered ? "yes" : "no (gattd powers it on when it serves)")
        field("roles", roles.isEmpty ? "not said (BlueZ before 5.61)" : roles.joined(separator: ", "))
        field("GATT", gattManager ? "GattManager1: applications can be registered" : "no GattManager1 on this adapter")
        guard let a = advertising else {
            field("advertising", "no LEAdvertisingManager1 on this adapter")
            return lines
        }
        field("advertising", "\(a.supportedInstances) instances (\(a.activeInstances) in use by others), \(a.maximumDataLength) bytes of data each")
        field("includes", a.includes.isEmpty ? "none" : a.includes.joined(separator: ", "))
        field("secondary", a.secondaryChannels.isEmpty ? "none (legacy advertising only)" : a.secondaryChannels.joined(separator: ", "))
        field("features", a.features.isEmpty ? "none" : a.features.joined(separator: ", "))
        let limits = self.limits
        field("sets", "up to \(limits.numberOfSets ?? 0) on the air at once; \(limits.maximumDataLength) bytes of data per set; extended PDUs \(limits.extendedPDUs ? "yes" : "no")")
        return lines
    }
}
