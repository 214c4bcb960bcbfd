/// A pointer carried to the bus thread (which alone dereferences it).
struct UnsafeSendable<T>: @unchecked Sendable {
    let value: T
    init(_ value: T) { self.value = value }
}
