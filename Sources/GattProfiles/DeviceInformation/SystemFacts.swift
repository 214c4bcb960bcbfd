import GattCore

/// What the OS knows about this machine, for Device Information's defaults: DMI
/// (`/sys/class/dmi/id`) on PCs, `/proc/device-tree/model` on a Raspberry Pi and other
/// device-tree boards, `/etc/os-release` and the kernel release. Read once, by the
/// composition; the catalog only uses the values.
public struct SystemFacts: Sendable, Equatable {
    public var manufacturer: String?
    public var model: String?
    public var hardwareRevision: String?
    /// The kernel release (`uname -r`).
    public var firmwareRevision: String?
    /// The OS (`PRETTY_NAME` of os-release).
    public var softwareRevision: String?

    public init(manufacturer: String? = nil, model: String? = nil, hardwareRevision: String? = nil, firmwareRevision: String? = nil, softwareRevision: String? = nil) {
        self.manufacturer = manufacturer
        self.model = model
        self.hardwareRevision = hardwareRevision
        self.firmwareRevision = firmwareRevision
        self.softwareRevision = softwareRevision
    }

    /// Reads the facts under `root` (`/`; tests pass a fake tree). Missing files and the
    /// placeholders firmware vendors leave in DMI ("To Be Filled By O.E.M.") give nil.
    public static func read(root: String = "/") -> SystemFacts {
        let base = root.hasSuffix("/") ? String(root.dropLast()) : root
        func file(_ path: String) -> String? { Self.readSmallFile(base + path).flatMap(Self.meaningful) }
        var f = SystemFacts()
        f.manufacturer = file("/sys/class/dmi/id/sys_vendor")
        f.model = file("/proc/device-tree/model") ?? file("/sys/class/dmi/id/product_name")
        f.hardwareRevision = file("/sys/class/dmi/id/product_version")
        f.firmwareRevision = file("/proc/sys/kernel/osrelease")
        if let osRelease = readSmallFile(base + "/etc/os-release") ?? readSmallFile(base + "/usr/lib/os-release") {
            f.softwareRevision = prettyName(osRelease).flatMap(Self.meaningful)
        }
        return f
    }

    /// `PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"` → the name (quotes and escapes removed).
    static func prettyName(_ osRelease: String) -> String? {
        for line in osRelease.split(separator: "\n") where line.hasPrefix("PRETTY_NAME=") {
            var v = Substring(line.dropFirst("PRETTY_NAME=".count))
            if let q = v.first, q == "\"" || q == "'", v.count >= 2, v.last == q { v = v.dropFirst().dropLast() }
            return v.replacingOccurrences(of: "\\", with: "")
        }
        return nil
    }

    static let placeholders: Set<String> = [
        "to be filled by o.e.m.", "system product name", "system manufacturer", "default string", "none", "not specified", "not applicable",
        "o.e.m.", "oem", "x.x", "0", "unknown",
    ]

    /// Trimmed (whitespace and the NUL device-tree strings end with); nil when empty or a placeholder.
    static func meaningful(_ s: String) -> String? {
        let t = String(s.unicodeScalars.filter { $0 != "\0" }).trimmingWhitespace
        guard !t.isEmpty, !placeholders.contains(t.lowercased()) else { return nil }
        return String(t.utf8.count > 248 ? String(decoding: Array(t.utf8.prefix(248)), as: UTF8.self) : t)
    }

    /// A small file (sysfs, procfs, os-release) as text; nil when it cannot be read.
    static func readSmallFile(_ path: String) -> String? {
        guard case .success(let bytes) = ConfigLoader.readFile(path) else { return nil }
        return String(decoding: bytes, as: UTF8.self)
    }
}

extension String {
    var trimmingWhitespace: String {
        let scalars = unicodeScalars
        guard let first = scalars.firstIndex(where: { !$0.properties.isWhitespace }),
            let last = scalars.lastIndex(where: { !$0.properties.isWhitespace })
        else { return "" }
        return String(scalars[first...last])
    }
}

extension Substring {
    func replacingOccurrences(of target: String, with replacement: String) -> String {
        split(separator: Substring(target), omittingEmptySubsequences: false).joined(separator: replacement)
    }
}
