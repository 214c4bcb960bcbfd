import GattControlProtocol
import GattCore
import Testing

@Suite("Control requests: advertising_data")
struct ControlAdvertisingDataCodecTests {
    static let counter = AdvertisingConfiguration.ManufacturerData(companyID: 0xFFFF, data: [0x01, 0x02])
    static let eddystone = AdvertisingConfiguration.ServiceData(uuid: 0xFEAA, data: [0x10, 0xF6])

    /// The typed request encodes to exactly this line (the config's spellings), and the line decodes to it.
    @Test(arguments: [
        (ControlRequest(command: .advertisingData(set: nil, update: AdvertisingDataUpdate(manufacturerData: [counter]))),
         #"{"op":"advertising_data","manufacturer_data":[{"company_id":65535,"data":{"hex":"0102"}}]}"#),
        (ControlRequest(id: .rawNumber("4"), command: .advertisingData(set: "beacon", update: AdvertisingDataUpdate(manufacturerData: [counter], serviceData: [eddystone]))),
         #"{"op":"advertising_data","set":"beacon","manufacturer_data":[{"company_id":65535,"data":{"hex":"0102"}}],"service_data":[{"uuid":"FEAA","data":{"hex":"10f6"}}],"id":4}"#),
        (ControlRequest(command: .advertisingData(set: "beacon", update: AdvertisingDataUpdate(serviceData: []))),
         #"{"op":"advertising_data","set":"beacon","service_data":[]}"#),
    ])
    func roundTrip(request: ControlRequest, line: String) throws {
        #expect(request.text == line)
        #expect(try decode(line) == request)
    }

    /// The members are read as the config reads them: any value literal, 128-bit UUIDs, an
    /// empty array removing the field; an absent member stays nil (unchanged).
    @Test func membersAsInTheConfig() throws {
        let r = try decode(#"{"op":"advertising_data","manufacturer_data":[{"company_id":76,"data":{"utf8":"hi"}}],"service_data":[{"uuid":"6e400001-b5a3-f393-e0a9-e50e24dcca9e","data":{"base64":"AQ=="}}]}"#)
        let uuid = try #require(BluetoothUUID("6e400001-b5a3-f393-e0a9-e50e24dcca9e"))
        #expect(r.command == .advertisingData(set: nil, update: AdvertisingDataUpdate(
            manufacturerData: [.init(companyID: 76, data: Array("hi".utf8))], serviceData: [.init(uuid: uuid, data: [1])])))
        #expect(try decode(#"{"op":"advertising_data","manufacturer_data":[]}"#).command
            == .advertisingData(set: nil, update: AdvertisingDataUpdate(manufacturerData: [])))
    }

    /// Errors name the member's path in the request, as `--check-config` names it in a file.
    @Test(arguments: [
        (#"{"op":"advertising_data"}"#, ControlErrorCode.missingField, #"missing "manufacturer_data" or "service_data""#),
        (#"{"op":"advertising_data","set":"beacon"}"#, .missingField, #"missing "manufacturer_data" or "service_data""#),
        (#"{"op":"advertising_data","set":1,"service_data":[]}"#, .invalidValue, #""set" must be a string"#),
        (#"{"op":"advertising_data","manufacturer_data":{}}"#, .invalidValue, "manufacturer_data: "),
        (#"{"op":"advertising_data","manufacturer_data":[{"company_id":65536,"data":{"hex":"01"}}]}"#, .invalidValue, "manufacturer_data[0].company_id: "),
        (#"{"op":"advertising_data","manufacturer_data":[{"data":{"hex":"01"}}]}"#, .invalidValue, "manufacturer_data[0].company_id: required key is missing"),
        (#"{"op":"advertising_data","manufacturer_data":[{"company_id":1,"data":{"hex":"01"},"extra":1}]}"#, .invalidValue, "manufacturer_data[0]"),
        (#"{"op":"advertising_data","manufacturer_data":[{"company_id":1,"data":{"hex":"0g"}}]}"#, .invalidValue, "manufacturer_data[0].data"),
        (#"{"op":"advertising_data","service_data":[{"uuid":"nope","data":{"hex":"01"}}]}"#, .invalidValue, "service_data[0].uuid: "),
        (#"{"op":"advertising_data","service_data":[{"uuid":"FEAA"}]}"#, .invalidValue, "service_data[0].data: required key is missing"),
    ])
    func errors(line: String, code: ControlErrorCode, message: String) throws {
        let error = try #require(failure(line)?.error, "\(line)")
        #expect(error.code == code, "\(line)")
        #expect(error.message.contains(message), "\(line): \(error.message)")
    }

    /// Every error of the request at once, each with its path.
    @Test func everyErrorNamed() throws {
        let error = try #require(failure(#"{"op":"advertising_data","manufacturer_data":[{"company_id":-1,"data":{"hex":"01"}}],"service_data":[{"uuid":"x","data":{"hex":"01"}}]}"#)?.error)
        #expect(error.message.contains("manufacturer_data[0].company_id: "))
        #expect(error.message.contains("; service_data[0].uuid: "))
    }
}
