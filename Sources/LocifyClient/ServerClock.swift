import Foundation

/// How far the server's clock is ahead of the device's (negative: behind), learnt from the
/// `server_time` of the sync answers (issue 34): edits are stamped with the device's clock
/// corrected by it, so that a device whose clock runs behind does not lose its newer edits to
/// older ones of on-time devices (last write wins compares the stamps).
///
/// Each answer bounds the offset: the server read its clock between the request's sending and the
/// answer's arrival (device times `sent`, `received`), so the offset lies in
/// [`server_time - received`, `server_time - sent`]. The estimate is that interval's lower end, so
/// an edit is never stamped ahead of the server's clock (the server clamps a time in the future,
/// and the device's `created_at` would then differ from the server's); it is behind by at most the
/// round trip. A new one replaces the current one when it is at least as precise (a shorter round trip), or
/// when its interval excludes the current estimate (the device's clock was changed meanwhile).
/// An answer whose round trip is negative (the device's clock jumped back) or longer than
/// ``longestRoundTrip`` (a held long-poll, a stalled network) teaches nothing.
struct ServerClockOffset: Sendable, Hashable {
    /// The estimate, in milliseconds to add to the device's clock.
    private(set) var milliseconds: Int64 = 0
    /// Half the round trip of the answer it came from (nil: none learnt in this run; a persisted
    /// estimate is replaced by the first answer).
    private var uncertainty: Int64?

    /// Whether an answer of this run taught it (else it is the persisted estimate, or 0).
    var isLearnt: Bool { uncertainty != nil }

    /// Answers slower than this are ignored: their estimate could be behind by all of it.
    static let longestRoundTrip: Int64 = 30_000

    /// An estimate persisted by an earlier run (0 when none was).
    init(persisted milliseconds: Int64? = nil) {
        self.milliseconds = milliseconds ?? 0
    }

    /// Takes in one answer; returns whether the estimate changed.
    @discardableResult
    mutating func learn(serverTime: Date, sent: Date, received: Date) -> Bool {
        let server = serverTime.locifyMilliseconds, sent = sent.locifyMilliseconds, received = received.locifyMilliseconds
        let roundTrip = received &- sent
        guard roundTrip >= 0, roundTrip <= Self.longestRoundTrip else { return false }
        let low = server &- received, high = server &- sent
        let estimate = low, halfTrip = roundTrip / 2
        let consistent = (low...high).contains(milliseconds)
        if let uncertainty, consistent, halfTrip > uncertainty { return false }
        let changed = estimate != milliseconds
        milliseconds = estimate
        uncertainty = halfTrip
        return changed
    }

    /// The device's time `deviceTime` on the server's clock.
    func serverTime(at deviceTime: Date) -> Int64 {
        deviceTime.locifyMilliseconds &+ milliseconds
    }
}

/// The server's time in one answer, with the device's times of the request's sending and the
/// answer's arrival.
struct ServerTimeSample: Sendable, Hashable {
    var serverTime: Date
    var sent: Date
    var received: Date

    /// A sample of an answer that carried `serverTime` (nil: it did not).
    init?(_ serverTime: Date?, sent: Date, received: Date) {
        guard let serverTime else { return nil }
        self.serverTime = serverTime
        self.sent = sent
        self.received = received
    }
}
