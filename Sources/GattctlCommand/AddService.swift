import ArgumentParser
import GattControlProtocol
import GattCore

struct AddService: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "add-service",
        abstract: "Add a service while gattd runs (a JSON service object, as in the config's \"services\").",
        discussion: """
            Handles of existing attributes never move: the service takes handles after the last one.
            Connected centrals get Service Changed for its range; bonded centrals that are away get
            it on their next connection. Not written into the config: gone after a restart or reload.
            """)

    @OptionGroup var global: GlobalOptions
    @Argument(help: "A file with one service object (- for standard input is not supported).") var file: String

    func run() throws {
        try runReportingFailures { () throws(GattctlFailure) in
            let bytes: [UInt8]
            switch ConfigLoader.readFile(file) {
            case .success(let b): bytes = b
            case .failure(let e): throw .usage(e.message)
            }
            let service: JSONValue
            do {
                service = try JSONParser.parse(bytes)
            } catch {
                throw .usage("\(file): \(error)")
            }
            guard case .services(let added) = try global.connect().expectOK(.addService(service: service)) else {
                throw .reply("gattd's reply has no services")
            }
            for s in added { emit(ServiceRendering.line(s)) }
        }
    }
}
