#if canImport(Glibc)
import Glibc
#endif

/// strerror(3) as a Swift string.
func errnoDescription(_ code: Int32) -> String {
    guard let text = strerror(code) else { return "errno \(code)" }
    return String(cString: text)
}
