import Glibc

/// `strings` as a NULL-terminated array of C strings (argv, envp) for the duration of `body`.
func withCStringArray<R>(_ strings: [String], _ body: ([UnsafeMutablePointer<CChar>?]) throws -> R) rethrows -> R {
    let array = strings.map { strdup($0) } + [nil]
    defer { array.forEach { free($0) } }
    return try body(array)
}
