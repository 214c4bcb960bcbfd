/// A pre-pass over the entries of the config's `services` (and the object of `add_service`):
/// an entry the expander recognises (a profile, `{"profile": "battery"}`) becomes a service
/// object as docs/config.md describes, which is then parsed like any other. The core knows no
/// profile: the daemon's composition passes the expander (GattProfiles' `ProfileCatalog`).
public protocol ServiceExpander: Sendable {
    /// What becomes of one entry. `.invalid` after reporting every problem to `reader`, with
    /// paths under `path` (`services[2].command`).
    func expand(_ entry: JSONValue, at path: String, reader: ConfigReader) -> ServiceExpansion
}

/// What a `ServiceExpander` made of one `services` entry.
public enum ServiceExpansion: Sendable {
    /// Not an entry this expander handles: parsed as it is.
    case unchanged
    /// The service object to parse instead, and the profile it came from (`list_services`
    /// and `--check-config` show it).
    case expanded(JSONValue, profile: String)
    /// An entry of the expander's with errors, reported already.
    case invalid
}
