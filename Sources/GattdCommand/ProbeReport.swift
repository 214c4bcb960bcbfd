import ArgumentParser
import GattBlueZ
import GattCore
import GattDaemon
import GattTransport
import Logging
import NIOCore
import NIOPosix

/// The probe's report: one field per line.
enum ProbeReport {
    static func render(_ probe: ControllerProbe, location: String) -> String {
        if let report = probe.report { return report.joined(separator: "\n") + "\n" }
        guard let c = probe.controller else { return "controller \(probe.description)\n" }
        var lines = ["controller \(c.address) at \(location)"]
        func field(_ name: String, _ value: String) { lines.append("  " + name.padding(13) + value) }
        if let v = c.version {
            field("version", "Bluetooth \(HCILocalVersionInformation.coreVersion(v.hciVersion)) (HCI \(v.hciVersion), LMP \(v.lmpVersion))")
            field("manufacturer", "\(v.manufacturer) (\(v.companyIdentifier))")
        } else {
            field("version", "unknown (Read Local Version Information not answered)")
        }
        let features = c.leFeatures.featureNames
        field("LE features", features.isEmpty ? "none" : features.joined(separator: ", "))
        field("LE ACL", "\(c.aclDataPacketLength) bytes x \(c.totalACLDataPackets) buffers")
        field("advertising", c.advertisingSummary)
        let limits = c.limits
        let sets: String
        switch (limits.numberOfSets, limits.setsTakeTurns) {
        case (let n?, false): sets = "up to \(n) on the air at once"
        case (let n?, true): sets = "up to \(n), taking turns on the air"
        case (nil, _): sets = "any number, taking turns on the air"
        }
        field("sets", "\(sets); \(limits.maximumDataLength) bytes of data per set; extended PDUs \(limits.extendedPDUs ? "yes" : "no")")
        return lines.joined(separator: "\n") + "\n"
    }
}

extension String {
    fileprivate func padding(_ width: Int) -> String { count >= width ? self + " " : self + String(repeating: " ", count: width - count) }
}
