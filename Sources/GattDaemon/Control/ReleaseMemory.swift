#if canImport(Glibc)
import Glibc
#endif

/// Returns free heap memory to the system. glibc keeps what a burst of allocations freed
/// (a dropped control client's queued replies) in its arenas, so the daemon's RSS would
/// stay that much higher; `malloc_trim` (looked up at run time: glibc only) gives it back.
enum ReleaseMemory {
    static func now() {
        #if canImport(Glibc)
        typealias Trim = @convention(c) (Int) -> Int32
        guard let symbol = dlsym(nil, "malloc_trim") else { return }
        _ = unsafeBitCast(symbol, to: Trim.self)(0)
        #endif
    }
}
