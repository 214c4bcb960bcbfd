import ArgumentParser
import GattControlProtocol
import GattCore

// MARK: - add-service / remove-service / list-services

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
