import Testing
@testable import GattCore

@Suite struct AttributeValueLiteralTests {
    typealias L = AttributeValueLiteral

    @Test func hexAcceptsSeparatorsBetweenBytes() throws {
        #expect(try L.decode("0A1b", as: .hex) == [0x0A, 0x1B])
        #expect(try L.decode("0a 1b:2C-3d", as: .hex) == [0x0A, 0x1B, 0x2C, 0x3D])
        #expect(try L.decode("", as: .hex) == [])
    }

    @Test func hexSeparatorsOnlyBetweenWholeBytes() {
        for ok in ["0a1b", "0a:1b", "0a 1b", "0a-1b", "0A:1b 2c-3D"] {
            #expect((try? L.decode(ok, as: .hex)) != nil, "\(ok)")
        }
        #expect(throws: L.DecodingError("separator '-' at position 4 follows another separator; separators may only go between whole bytes (\"0a1b\", \"0a 1b\", \"0a:1b\", \"0a-1b\")")) { try L.decode("0a--1b", as: .hex) }
        #expect(throws: L.DecodingError("separator ' ' at position 1 comes before the first byte; separators may only go between whole bytes (\"0a1b\", \"0a 1b\", \"0a:1b\", \"0a-1b\")")) { try L.decode(" 0a", as: .hex) }
        #expect(throws: L.DecodingError("separator ':' at position 1 comes before the first byte; separators may only go between whole bytes (\"0a1b\", \"0a 1b\", \"0a:1b\", \"0a-1b\")")) { try L.decode(":0a", as: .hex) }
        #expect(throws: L.DecodingError("separator at position 3 ends the value; separators may only go between whole bytes (\"0a1b\", \"0a 1b\", \"0a:1b\", \"0a-1b\")")) { try L.decode("0a ", as: .hex) }
        #expect(throws: L.DecodingError("separator ':' at position 4 follows another separator; separators may only go between whole bytes (\"0a1b\", \"0a 1b\", \"0a:1b\", \"0a-1b\")")) { try L.decode("0a :1b", as: .hex) }
        #expect(throws: (L.DecodingError).self) { try L.decode(" ", as: .hex) }
    }

    @Test func hexRejectsBadInput() {
        #expect(throws: L.DecodingError("odd number of hex digits (3); every byte needs two digits, e.g. \"0A\" not \"A\"")) { try L.decode("0A1", as: .hex) }
        #expect(throws: L.DecodingError("'g' at position 2 is not a hex digit")) { try L.decode("0g", as: .hex) }
        #expect(throws: L.DecodingError("separator ' ' at position 2 splits a byte; separators may only go between whole bytes (\"0a1b\", \"0a 1b\", \"0a:1b\", \"0a-1b\")")) { try L.decode("0 A", as: .hex) }
        #expect(throws: L.DecodingError("'x' at position 2 is not a hex digit")) { try L.decode("0x0A", as: .hex) }
    }

    @Test func utf8IsTheStringBytes() throws {
        #expect(try L.decode("Hé", as: .utf8) == [0x48, 0xC3, 0xA9])
        #expect(try L.decode("", as: .utf8) == [])
    }

    @Test func base64WithAndWithoutPadding() throws {
        #expect(try L.decode("AQI=", as: .base64) == [1, 2])
        #expect(try L.decode("AQI", as: .base64) == [1, 2])
        #expect(try L.decode("AQ==", as: .base64) == [1])
        #expect(try L.decode("AQID", as: .base64) == [1, 2, 3])
        #expect(try L.decode("+/8=", as: .base64) == [0xFB, 0xFF])
        #expect(try L.decode("", as: .base64) == [])
    }

    @Test func base64RejectsBadInput() {
        #expect(throws: L.DecodingError("invalid base64 length (1 characters before padding)")) { try L.decode("A", as: .base64) }
        #expect(throws: L.DecodingError("'-' at position 2 is not a base64 character (A-Z a-z 0-9 + /)")) { try L.decode("A-==", as: .base64) }
        #expect(throws: L.DecodingError("'=' padding at position 3 is only allowed at the end")) { try L.decode("AQ=I", as: .base64) }
        #expect(throws: L.DecodingError("invalid base64 padding")) { try L.decode("AQI==", as: .base64) }
    }

    @Test func encodersRoundTrip() throws {
        let bytes: [UInt8] = [0x00, 0x01, 0xFE, 0xFF, 0x7F]
        #expect(L.hexString(bytes) == "0001feff7f")
        #expect(L.hexString([0xAB, 0xCD], separator: " ") == "ab cd")
        for n in 0...5 {
            let b = Array(bytes.prefix(n))
            #expect(try L.decode(L.base64String(b), as: .base64) == b)
        }
        #expect(L.base64String([1, 2]) == "AQI=")
    }
}

@Suite struct JSONParserTests {
    @Test func parsesAllKindsWithOffsets() throws {
        let v = try JSONParser.parse(Array(#" {"a": [1, -2.5e3, true, false, null, "x\n\u00e9\ud83d\ude00"]}"#.utf8))
        guard case .object(let members) = v.kind else { Issue.record("not an object"); return }
        #expect(v.offset == 1)
        #expect(members.map(\.key) == ["a"])
        #expect(members[0].keyOffset == 2)
        #expect(members[0].value.kind == .array([
            JSONValue(.number("1"), offset: 8), JSONValue(.number("-2.5e3"), offset: 11), JSONValue(.bool(true), offset: 19),
            JSONValue(.bool(false), offset: 25), JSONValue(.null, offset: 32), JSONValue(.string("x\né😀"), offset: 38),
        ]))
    }

    @Test func keepsDuplicateKeysAndOrder() throws {
        let v = try JSONParser.parse(Array(#"{"b": 1, "a": 2, "b": 3}"#.utf8))
        guard case .object(let members) = v.kind else { Issue.record("not an object"); return }
        #expect(members.map(\.key) == ["b", "a", "b"])
    }

    @Test func rejectsWithPositions() {
        func message(_ s: String) -> String {
            do { _ = try JSONParser.parse(Array(s.utf8)); return "<parsed>" } catch { return error.description }
        }
        #expect(message("[1,]") == "line 1, column 4: trailing comma before ']' is not allowed in JSON")
        #expect(message("[01]") == "line 1, column 2: invalid number: leading zeros are not allowed in JSON")
        #expect(message("{\"a\" 1}") == "line 1, column 6: expected ':' after the key \"a\", got '1'")
        #expect(message("\"abc") == "line 1, column 1: unterminated string (missing closing \")")
        #expect(message("\"a\nb\"") == "line 1, column 3: unterminated string (a line break must be written \\n)")
        #expect(message("\"\\q\"") == "line 1, column 2: invalid escape '\\q' in a string")
        #expect(message("\"\\ud800\"") == "line 1, column 2: unpaired UTF-16 surrogate in a \\u escape")
        #expect(message("tru") == "line 1, column 1: invalid literal; expected true, false or null (strings need double quotes)")
        #expect(message("{} {}") == "line 1, column 4: unexpected '{' after the end of the top-level value")
        #expect(message("ü\n  [x]") == "line 1, column 1: unexpected 'ü'; expected a value (object, array, string, number, true, false or null)")
        #expect(message("[\n  1,\n  é]") == "line 3, column 3: unexpected 'é'; expected a value (object, array, string, number, true, false or null)")
        #expect(message("[\u{1}]").hasPrefix("line 1, column 2: unexpected byte 0x01;"))
        #expect(message(String(repeating: "[", count: 65)) == "line 1, column 65: nesting is deeper than 64 levels")
    }

    @Test func rejectsInvalidUTF8InStrings() {
        do {
            _ = try JSONParser.parse([0x22, 0xC3, 0x28, 0x22])
            Issue.record("accepted invalid UTF-8")
        } catch {
            #expect(error.message == "the string is not valid UTF-8")
        }
        do {
            _ = try JSONParser.parse([0x5B, 0xFF, 0x5D])
            Issue.record("accepted a stray 0xFF")
        } catch {
            #expect(error.description == "line 1, column 2: unexpected invalid UTF-8 byte 0xFF; expected a value (object, array, string, number, true, false or null)")
        }
    }

    @Test func skipsByteOrderMark() throws {
        #expect(try JSONParser.parse([0xEF, 0xBB, 0xBF] + Array("{}".utf8)).kind == .object([]))
    }
}
