import ArgumentParser
import GattControlProtocol
import GattCore

// MARK: - add-service / remove-service / list-services

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

struct RemoveService: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "remove-service",
        abstract: "Remove a service by its id while gattd runs (its handles stay unused).")

    @OptionGroup var global: GlobalOptions
    @Argument(help: "The service's id.") var id: String

    func run() throws {
        try runReportingFailures { () throws(GattctlFailure) in
            try global.connect().expectOK(.removeService(id: id))
        }
    }
}

struct ListServices: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list-services", abstract: "List the services gattd serves, with their handles.")

    @OptionGroup var global: GlobalOptions

    func run() throws {
        try runReportingFailures { () throws(GattctlFailure) in
            guard case .services(let list) = try global.connect().expectOK(.listServices) else {
                throw .reply("gattd's reply has no services")
            }
            for s in list { emit(ServiceRendering.line(s)) }
        }
    }
}

enum ServiceRendering {
    /// `0x0037-0x0039  5ED0  id=heart  runtime` (`runtime, restored` when put back at start;
    /// `profile=battery` before it for a service expanded from a profile)
    static func line(_ s: ControlService) -> String {
        var parts = ["\(AttributeHandle(UInt16(clamping: s.start)))-\(AttributeHandle(UInt16(clamping: s.end)))", s.uuid]
        if let id = s.id { parts.append("id=\(id)") }
        if let profile = s.profile { parts.append("profile=\(profile)") }
        parts.append(s.runtime ? (s.restored ? "runtime, restored" : "runtime") : "config")
        return parts.joined(separator: "  ")
    }
}
