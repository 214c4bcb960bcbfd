/// How gattd picks dynamic PSMs (pure; `GattConfiguration.assignL2CAPPSMs`).
public enum L2CAPPSMAssignment {
    public static func assign(_ channels: [L2CAPChannelConfiguration], kept: [String: UInt16], taken extra: Set<UInt16> = []) -> [L2CAPChannelConfiguration] {
        var out = channels
        var taken = Set(channels.compactMap(\.requestedPSM)).union(extra)
        let dynamic = L2CAPChannelServer.dynamicPSMs
        // First the kept ones (an earlier run's picks), so a new channel cannot take them.
        for i in out.indices where out[i].requestedPSM == nil {
            if let k = kept[out[i].id], dynamic.contains(k), !taken.contains(k) {
                out[i].psm = k
                taken.insert(k)
            } else {
                out[i].psm = 0
            }
        }
        for i in out.indices where out[i].requestedPSM == nil && out[i].psm == 0 {
            let count = UInt16(dynamic.count)
            let start = UInt16(fnv1a(out[i].id) % UInt32(count))
            for step in 0..<count {
                let psm = dynamic.lowerBound + (start + step) % count
                if !taken.contains(psm) {
                    out[i].psm = psm
                    taken.insert(psm)
                    break
                }
            }
        }
        for i in out.indices where out[i].requestedPSM != nil { out[i].psm = out[i].requestedPSM! }
        return out
    }

    /// FNV-1a over the id's UTF-8 (stable across runs and platforms, unlike `hashValue`).
    static func fnv1a(_ s: String) -> UInt32 {
        var h: UInt32 = 2_166_136_261
        for b in s.utf8 { h = (h ^ UInt32(b)) &* 16_777_619 }
        return h
    }
}
