// What a controller is and can do, in words: the one controller line of the log, the
// `controller` object of `status` and `gattd --probe` all read from here.

extension LEFeatures {
    /// The LE features' names (Core Spec Vol 6 Part B §4.6, Table 4.6), by bit; the short form
    /// the log line and `status` use.
    public static let names: [(bit: Int, name: String)] = [
        (0, "LE Encryption"), (1, "Connection Parameters Request"), (2, "Extended Reject Indication"),
        (3, "Peripheral-initiated Features Exchange"), (4, "LE Ping"), (5, "Data Length Extension"),
        (6, "LL Privacy"), (7, "Extended Scanner Filter Policies"), (8, "LE 2M PHY"),
        (9, "Stable Modulation Index (TX)"), (10, "Stable Modulation Index (RX)"), (11, "LE Coded PHY"),
        (12, "Extended Advertising"), (13, "Periodic Advertising"), (14, "Channel Selection Algorithm #2"),
        (15, "LE Power Class 1"), (16, "Minimum Number of Used Channels"), (17, "Connection CTE Request"),
        (18, "Connection CTE Response"), (19, "Connectionless CTE Transmitter"), (20, "Connectionless CTE Receiver"),
        (21, "Antenna Switching During CTE Transmission"), (22, "Antenna Switching During CTE Reception"),
        (23, "Receiving Constant Tone Extensions"), (24, "Periodic Advertising Sync Transfer (Sender)"),
        (25, "Periodic Advertising Sync Transfer (Recipient)"), (26, "Sleep Clock Accuracy Updates"),
        (27, "Remote Public Key Validation"), (28, "Connected Isochronous Stream (Central)"),
        (29, "Connected Isochronous Stream (Peripheral)"), (30, "Isochronous Broadcaster"),
        (31, "Synchronized Receiver"), (32, "Connected Isochronous Stream (Host Support)"), (33, "LE Power Control Request"),
        (34, "LE Power Control Request"), (35, "LE Path Loss Monitoring"), (36, "Periodic Advertising ADI support"),
        (37, "Connection Subrating"), (38, "Connection Subrating (Host Support)"), (39, "Channel Classification"),
        (40, "Advertising Coding Selection"), (41, "Advertising Coding Selection (Host Support)"),
        (42, "Decision-Based Advertising Filtering"), (43, "Periodic Advertising with Responses (Advertiser)"),
        (44, "Periodic Advertising with Responses (Scanner)"), (45, "Unsegmented Framed Mode"),
        (46, "Channel Sounding"), (47, "Channel Sounding (Host Support)"),
    ]

    /// The names of the features set, in bit order; bits without a name as "bit N". Bit 34
    /// repeats bit 33's name (the specification gives both one feature), so it is left out
    /// when 33 is set.
    public var featureNames: [String] {
        var out: [String] = []
        for bit in 0..<64 where rawValue & (1 << UInt64(bit)) != 0 {
            if bit == 34, rawValue & (1 << 33) != 0 { continue }
            out.append(Self.names.first { $0.bit == bit }?.name ?? "bit \(bit)")
        }
        return out
    }
}

extension HCILocalVersionInformation {
    /// The Core Specification version an HCI or LMP version number stands for (Assigned
    /// Numbers §2.1): 6 → "4.0", 11 → "5.2"; "unknown (N)" beyond the table.
    public static func coreVersion(_ number: UInt8) -> String {
        let names = ["1.0b", "1.1", "1.2", "2.0", "2.1", "3.0", "4.0", "4.1", "4.2", "5.0", "5.1", "5.2", "5.3", "5.4", "6.0", "6.1"]
        return Int(number) < names.count ? names[Int(number)] : "unknown (\(number))"
    }

    /// The manufacturer's name for the company identifiers controllers commonly report
    /// (Assigned Numbers, Company Identifiers), else "company 0xNNNN".
    public var manufacturer: String {
        let known: [UInt16: String] = [
            0x0000: "Ericsson", 0x0002: "Intel", 0x0006: "Microsoft", 0x000A: "Qualcomm (CSR)", 0x000D: "Texas Instruments",
            0x000F: "Broadcom", 0x001D: "Qualcomm", 0x0030: "STMicroelectronics", 0x0046: "MediaTek", 0x0048: "Marvell",
            0x004C: "Apple", 0x0059: "Nordic Semiconductor", 0x005D: "Realtek", 0x0075: "Samsung", 0x00E0: "Google",
            0x0131: "Cypress", 0x02E5: "Espressif", 0x0588: "Infineon", 0x05F1: "The Linux Foundation", 0xFFFF: "none (test)",
        ]
        return known[companyIdentifier] ?? "company 0x\(String(companyIdentifier, radix: 16, uppercase: true).leftPadded(to: 4))"
    }

    /// "Bluetooth 5.2 (HCI 11 rev 0x0000, LMP 11 rev 0x0000), Nordic Semiconductor".
    public var summary: String {
        "Bluetooth \(Self.coreVersion(hciVersion)) (HCI \(hciVersion) rev 0x\(String(hciSubversion, radix: 16).leftPadded(to: 4)), "
            + "LMP \(lmpVersion) rev 0x\(String(lmpSubversion, radix: 16).leftPadded(to: 4))), \(manufacturer)"
    }
}

extension String {
    fileprivate func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}
