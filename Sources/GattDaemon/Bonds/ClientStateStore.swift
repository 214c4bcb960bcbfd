import GattCore

/// Bonded clients' GATT state next to their bonds: `<state-dir>/bonds/<address>.gatt` per
/// bond (its identity address), and `<state-dir>/bonds/database.gatt`, the services last
/// served (to know after a restart which handles changed). Saves replace the file the
/// `SystemStateDirectory` way (temp file, fsync, rename, directory fsync): a save that
/// returned survives kill -9. An unreadable file is set aside and reported, never fatal.
public struct ClientStateStore {
    public let directory: SystemStateDirectory
    static let suffix = ".gatt"
    static let layoutName = "database.gatt"

    public init(stateDirectory: String) {
        self.directory = SystemStateDirectory(stateDirectory + "/bonds")
    }

    static func fileName(_ address: BluetoothAddress) -> String { "\(address)\(suffix)" }

    /// The saved states by bond address, and sentences for the log.
    public func load() -> (states: [BluetoothAddress: GATTClientState], problems: [String]) {
        var states: [BluetoothAddress: GATTClientState] = [:]
        var problems: [String] = []
        for name in directory.fileNames() {
            if name.contains(Self.suffix + ".tmp-") {
                try? directory.remove(name)
                continue
            }
            guard name.hasSuffix(Self.suffix), name != Self.layoutName,
                let address = BluetoothAddress(String(name.dropLast(Self.suffix.count)))
            else { continue }
            do {
                guard let bytes = try directory.read(name) else { continue }
                if let s = ClientStateCodec.decode(bytes) {
                    states[address] = s
                    continue
                }
                let aside = try directory.setAside(name, suffix: "corrupt-\(BondStore.unixTime())")
                problems.append("the GATT state file \(directory.path)/\(name) is not valid; set aside as \(aside) (the central starts with no subscriptions)")
            } catch {
                problems.append("\(error); the central's GATT state is ignored")
            }
        }
        return (states, problems)
    }

    /// Writes the state of the bond `address` durably before returning.
    public func save(_ address: BluetoothAddress, _ state: GATTClientState) throws(StateFileError) {
        try directory.replace(Self.fileName(address), with: ClientStateCodec.encode(state))
    }

    public func remove(_ address: BluetoothAddress) throws(StateFileError) {
        try directory.remove(Self.fileName(address))
    }

    /// The services last served; nil when unknown (first start, or an unreadable file).
    public func loadLayout() -> [ServiceFingerprint]? {
        guard let bytes = try? directory.read(Self.layoutName) else { return nil }
        return ClientStateCodec.decodeLayout(bytes)
    }

    public func saveLayout(_ services: [ServiceFingerprint]) throws(StateFileError) {
        try directory.replace(Self.layoutName, with: ClientStateCodec.encodeLayout(services))
    }
}
