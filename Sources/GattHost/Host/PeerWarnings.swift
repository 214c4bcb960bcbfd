/// Warnings about what a central sent (frames dropped, requests refused), counted per link:
/// a central that keeps sending them must not make the log grow without bound.
struct PeerWarnings: Sendable {
    /// Warnings logged per link at most.
    static let perLink = 8

    private var counts: [UInt16: Int] = [:]

    /// `text` as a warning while the link has not had its share; then one line saying that
    /// the rest are not logged; then nothing (until the link drops).
    /// (`text` is made only when logged: a central flooding frames costs no strings.)
    mutating func warning(_ text: @autoclosure () -> String, handle: UInt16) -> [HostOutput] {
        let n = counts[handle, default: 0]
        guard n <= Self.perLink else { return [] }
        counts[handle] = n + 1
        guard n < Self.perLink else {
            return [.event(.warning("connection \(handle): further warnings about what this central sends are not logged (\(n) so far)"))]
        }
        return [.event(.warning(text()))]
    }

    /// The link dropped: a new one on its handle starts afresh.
    mutating func linkClosed(_ handle: UInt16) { counts[handle] = nil }
}
