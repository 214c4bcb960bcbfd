/// Which command the multi-call `gattd` executable runs: the last path component of
/// `argv[0]`, `gattctl` for the control CLI, anything else for the daemon.
enum Invocation: Equatable {
    case gattd, gattctl

    init(argument0: String?) {
        let name = argument0?.split(separator: "/").last ?? ""
        self = name == "gattctl" ? .gattctl : .gattd
    }
}
