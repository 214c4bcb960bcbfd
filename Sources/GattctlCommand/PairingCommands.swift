#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import ArgumentParser
import GattControlProtocol
import GattCore

// MARK: - pairing prompts

/// Options of the commands that answer a pairing prompt.
struct PromptOptions: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp("The central whose prompt to answer (default: the only prompt waiting).", valueName: "address"))
    var central: String?

    func command(_ answer: ControlPairingAnswer) -> ControlCommand { .pairingRespond(central: central, answer: answer) }
}

struct PairAccept: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pair-accept", abstract: "Accept a pairing (a pairing_request prompt, or confirm a numeric comparison).")

    @OptionGroup var global: GlobalOptions
    @OptionGroup var prompt: PromptOptions

    func run() throws {
        try runReportingFailures { () throws(GattctlFailure) in
            try global.connect().expectOK(prompt.command(ControlPairingAnswer(accept: true)))
        }
    }
}

struct PairReject: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "pair-reject", abstract: "Refuse the pairing prompt: the pairing fails.")

    @OptionGroup var global: GlobalOptions
    @OptionGroup var prompt: PromptOptions

    func run() throws {
        try runReportingFailures { () throws(GattctlFailure) in
            try global.connect().expectOK(prompt.command(ControlPairingAnswer(accept: false)))
        }
    }
}

struct Passkey: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Answer a passkey_request with the six digits the central shows.")

    @OptionGroup var global: GlobalOptions
    @OptionGroup var prompt: PromptOptions
    @Argument(help: "The passkey, 0 to 999999.") var passkey: String

    func run() throws {
        try runReportingFailures { () throws(GattctlFailure) in
            guard (1...6).contains(passkey.count), passkey.allSatisfy(\.isASCII), let n = UInt32(passkey) else {
                throw .usage("\"\(passkey)\" is not a passkey: expected up to six digits")
            }
            try global.connect().expectOK(prompt.command(ControlPairingAnswer(passkey: n)))
        }
    }
}

struct Confirm: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Answer a numeric_comparison: yes when the central shows the same six digits.")

    enum Answer: String, ExpressibleByArgument, CaseIterable {
        case yes, no
    }

    @OptionGroup var global: GlobalOptions
    @OptionGroup var prompt: PromptOptions
    @Argument(help: "yes or no.") var answer: Answer

    func run() throws {
        try runReportingFailures { () throws(GattctlFailure) in
            try global.connect().expectOK(prompt.command(ControlPairingAnswer(confirm: answer == .yes)))
        }
    }
}

// MARK: - bonds

struct Unbond: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Forget a bond (the central must pair again); disconnects it when connected.")

    @OptionGroup var global: GlobalOptions
    @Argument(help: "The central's identity address, as `gattctl bonds` shows it.") var address: String

    func run() throws {
        try runReportingFailures { () throws(GattctlFailure) in
            guard BluetoothAddress(address) != nil else {
                throw .usage("\"\(address)\" is not a Bluetooth address (AA:BB:CC:DD:EE:FF)")
            }
            try global.connect().expectOK(.unbond(central: address))
        }
    }
}
