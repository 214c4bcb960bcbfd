import GattCore

/// Bytes from hex digits, ignoring spaces and any other non-hex separators
/// ("0e 04 01 03 0c 00"), for writing expected PDUs the way specs print them.
package func h(_ s: String) -> [UInt8] {
    let digits = s.filter(\.isHexDigit)
    var out: [UInt8] = []
    var i = digits.startIndex
    while i < digits.endIndex, digits.index(after: i) < digits.endIndex {
        let j = digits.index(i, offsetBy: 2)
        out.append(UInt8(digits[i..<j], radix: 16) ?? 0)
        i = j
    }
    return out
}
