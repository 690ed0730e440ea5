import FirebaseAdmin
import Foundation
import Locify
import LocifyJobs
import Synchronization

/// A `CleanupExecutor` for worker tests: records every call in order, can fail the next calls
/// of a kind with a given error, take time per call, run a hook inside a call, and detects two
/// calls for the same job target running at once.
final class CleanupScriptedExecutor: CleanupExecutor {
    /// One call as the worker made it.
    struct Call: Sendable, Equatable {
        var kind: CleanupJob.Kind
        var target: String
    }

    private struct State {
        var calls: [Call] = []
        var failures: [CleanupJob.Kind: [GoogleAPIError]] = [:]
        var inFlight: [String: Int] = [:]
        var overlaps: [String] = []
        var delay: Double = 0
    }

    private let state = Mutex(State())
    private let hook: Mutex<(@Sendable (Call) -> Void)?> = Mutex(nil)

    /// Every call, in the order they started (failed ones included).
    var calls: [Call] { state.withLock { $0.calls } }

    /// Targets that were entered while a call for the same target was still running.
    var overlaps: [String] { state.withLock { $0.overlaps } }

    /// Seconds each call takes.
    var delay: Double {
        get { state.withLock { $0.delay } }
        set { state.withLock { $0.delay = newValue } }
    }

    /// Makes the next `count` calls of `kind` throw `error`.
    func failNext(_ kind: CleanupJob.Kind, count: Int = 1, with error: GoogleAPIError) {
        state.withLock { $0.failures[kind, default: []] += Array(repeating: error, count: count) }
    }

    /// Runs `body` inside each subsequent call, before it succeeds or fails.
    func onCall(_ body: (@Sendable (Call) -> Void)?) {
        hook.withLock { $0 = body }
    }

    /// How many calls were made for `target`.
    func callCount(_ target: String) -> Int {
        calls.filter { $0.target == target }.count
    }

    func deleteStorageFolder(prefix: String) throws(GoogleAPIError) {
        try perform(Call(kind: .storagePrefix, target: prefix))
    }

    func deleteStorageObject(path: String) throws(GoogleAPIError) {
        try perform(Call(kind: .storageObject, target: path))
    }

    func deleteAuthAccount(uid: String) throws(GoogleAPIError) {
        try perform(Call(kind: .authAccount, target: uid))
    }

    private func perform(_ call: Call) throws(GoogleAPIError) {
        let (failure, delay): (GoogleAPIError?, Double) = state.withLock { state in
            state.calls.append(call)
            state.inFlight[call.target, default: 0] += 1
            if state.inFlight[call.target, default: 0] > 1 { state.overlaps.append(call.target) }
            var failure: GoogleAPIError?
            if var queue = state.failures[call.kind], !queue.isEmpty {
                failure = queue.removeFirst()
                state.failures[call.kind] = queue
            }
            return (failure, state.delay)
        }
        defer { state.withLock { $0.inFlight[call.target, default: 1] -= 1 } }
        if delay > 0 { Thread.sleep(forTimeInterval: delay) }
        hook.withLock { $0 }?(call)
        if let failure { throw failure }
    }
}
