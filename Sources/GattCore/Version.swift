/// gattd's version, in one place: `gattd --version` prints it (and anything else that
/// states a version reads it from here).
public enum GattdVersion {
    public static let string = "0.1.0"
}
