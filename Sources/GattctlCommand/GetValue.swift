#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import ArgumentParser
import GattControlProtocol
import GattCore

struct GetValue: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "get", abstract: "Print a characteristic's current value (hex unless --utf8 or --base64).")

    @OptionGroup var global: GlobalOptions
    @Argument(help: "The characteristic's id (or UUID).") var id: String
    @Flag var encoding: ValueEncoding = .hex

    func run() throws {
        try runReportingFailures { () throws(GattctlFailure) in
            guard case .value(let value) = try global.connect().expectOK(.get(characteristic: id)) else {
                throw .reply("gattd's reply has no value")
            }
            let bytes = value.bytes
            switch encoding {
            case .hex: emit(AttributeValueLiteral.hexString(bytes))
            case .base64: emit(AttributeValueLiteral.base64String(bytes))
            case .utf8:
                guard let text = String(validating: bytes, as: UTF8.self) else {
                    throw .reply("the value (\(AttributeValueLiteral.hexString(bytes))) is not valid UTF-8; use --hex")
                }
                emit(text)
            }
        }
    }
}
