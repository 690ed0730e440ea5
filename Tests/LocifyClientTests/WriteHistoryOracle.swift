import Foundation
import Synchronization
import Testing

@testable import LocifyClient

/// Every push the observed devices sent that reached the server, with the server's answer (also
/// when the test network then dropped it), in the order the server applied the changes: pushes
/// go one at a time through ``FaultInjectingURLProtocol``, and within one the server applies
/// category writes, then location changes, then category deletes (openapi.yaml). Each push
/// carries the wall-clock milliseconds just before it was sent and just after its answer came
/// back: the server (in this process, on the same clock) read its clock in between, which bounds
/// where it clamped a time from a device clock ahead of it.
enum PushObserver {
    struct Observation: Sendable {
        var sequence: Int
        var device: String
        var change: PushChange
        var result: PushResult
        /// The server's clock when it decided this change lies in `sent...received` (milliseconds).
        var sent: Int64
        var received: Int64
    }

    static let lock = NSLock()
    private static let state = Mutex<(observed: Set<String>, next: Int, observations: [Observation])>(([], 0, []))

    /// Starts recording the pushes of `devices`.
    static func observe(_ devices: [String]) {
        state.withLock { $0.observed.formUnion(devices) }
    }

    /// Stops recording `devices` and returns what they pushed, in the server's order.
    static func take(_ devices: [String]) -> [Observation] {
        state.withLock { state in
            state.observed.subtract(devices)
            let mine = state.observations.filter { devices.contains($0.device) }
            state.observations.removeAll { devices.contains($0.device) }
            return mine
        }
    }

    static func record(device: String, request: Data, response: Data, sent: Date, received: Date) {
        struct Request: Decodable { var changes: [PushChange] }
        struct Response: Decodable { var results: [PushResult] }
        guard state.withLock({ $0.observed.contains(device) }),
            let changes = try? JSONCoding.decoder.decode(Request.self, from: request).changes,
            let results = try? JSONCoding.decoder.decode(Response.self, from: response).results, changes.count == results.count
        else { return }
        let order = changes.indices.sorted { (changes[$0].applicationGroup, $0) < (changes[$1].applicationGroup, $1) }
        state.withLock { state in
            for index in order {
                state.observations.append(
                    Observation(
                        sequence: state.next, device: device, change: changes[index], result: results[index],
                        sent: sent.locifyMilliseconds, received: received.locifyMilliseconds))
                state.next += 1
            }
        }
    }
}

/// A time the oracle knows exactly, or only within bounds: the stored time of a write from a clock
/// ahead of the server's, clamped to the server's clock at a moment its answer did not tell (a
/// location write kept while its category is deleted is answered E007, without the record).
struct StampRange: Equatable, CustomStringConvertible {
    var low: Int64
    var high: Int64

    init(_ exact: Int64) {
        low = exact
        high = exact
    }

    init(low: Int64, high: Int64) {
        self.low = low
        self.high = high
    }

    func contains(_ value: Int64) -> Bool { low <= value && value <= high }

    var description: String { low == high ? "\(low)" : "\(low)...\(high)" }
}

/// The oracle of the multi-device soak (issue 22 item 2): a model of the server's rules, written
/// from API.md and openapi.yaml ("Writes in any order"), independently of the server's code.
///
/// It replays every change the devices pushed, in the order the server applied them, and checks
/// that the server's answer to each is one the rules allow: last write wins on each record's own
/// newest write (a future time clamped to the server's clock, a delete winning a tie, an identical
/// write at the same time a replay), a location shown where the category its own newest write
/// named shows it (live: in it; deleted with a reassign: in the target, followed; deleted with a
/// cascade or a loop of reassigns: deleted, with its own time), a location write kept when it wins
/// even if its category is deleted, a write naming what the user never had refused. Then the
/// replay must end in the server's final state, record by record, and each device's last write to
/// each record is accounted for: it is the final state, or a named write superseded it, or a named
/// category delete moved or hid it. Nothing is excused.
struct WriteHistoryOracle {
    /// A write that reached the server, for messages.
    struct WriteRef: CustomStringConvertible {
        var sequence: Int
        var device: String
        var change: PushChange

        var description: String {
            let stamp = change.updatedAt.map { "@\($0.locifyMilliseconds)" } ?? ""
            var text = "#\(sequence) \(device) \(change.kind) \(change.action)\(stamp)"
            if case .deleteCategory(let delete) = change, let target = delete.reassignCategoryID {
                text += " to \(target.uuidString.prefix(4))"
            }
            if case .createLocation(let write) = change { text += " in \(write.categoryID.uuidString.prefix(4))" }
            if case .updateLocation(let write) = change { text += " in \(write.categoryID.uuidString.prefix(4))" }
            return text
        }
    }

    /// A record's own newest write, as the server keeps it.
    enum Own {
        case absent
        case category(name: String, icon: String?, at: StampRange, by: WriteRef)
        case location(LocationWrite, at: StampRange, by: WriteRef)
        case deleted(at: StampRange, reassignTo: UUID?, by: WriteRef)

        var writer: WriteRef? {
            switch self {
            case .absent: return nil
            case .category(_, _, _, let by), .location(_, _, let by), .deleted(_, _, let by): return by
            }
        }

        var at: StampRange? {
            switch self {
            case .absent: return nil
            case .category(_, _, let at, _), .location(_, let at, _), .deleted(let at, _, _): return at
            }
        }

        var isDeleted: Bool {
            if case .deleted = self { return true }
            return false
        }
    }

    /// What the server shows of a record: the state the feed reports.
    enum Shown: Equatable, CustomStringConvertible {
        case absent
        /// Live (a location with the category it is shown in), with its `updated_at`.
        case live(category: UUID?, at: StampRange)
        /// A tombstone with its `deleted_at`.
        case gone(at: StampRange)

        var isGone: Bool {
            if case .live = self { return false }
            return true
        }

        var description: String {
            switch self {
            case .absent: return "absent"
            case .live(let category, let at): return "live@\(at)" + (category.map { " in \($0.uuidString.prefix(4))" } ?? "")
            case .gone(let at): return "deleted@\(at)"
            }
        }
    }

    /// A record's state as the server reports it at the end (the feed, or the listings when the
    /// tombstones may have been purged).
    enum Final: Equatable, CustomStringConvertible {
        case absent
        case live(category: UUID?, at: Int64)
        case tombstone(at: Int64)

        init(_ record: RecordState) {
            switch record {
            case .category(let category): self = .live(category: nil, at: category.updatedAt.locifyMilliseconds)
            case .location(let location): self = .live(category: location.categoryID, at: location.updatedAt.locifyMilliseconds)
            case .tombstone(_, let tombstone): self = .tombstone(at: tombstone.deletedAt.locifyMilliseconds)
            }
        }

        var description: String {
            switch self {
            case .absent: return "absent"
            case .live(let category, let at): return "live@\(at)" + (category.map { " in \($0.uuidString.prefix(4))" } ?? "")
            case .tombstone(let at): return "deleted@\(at)"
            }
        }
    }

    /// The last-write-wins verdict on one write (API.md section 5 and 11, openapi.yaml).
    enum Verdict: Equatable {
        /// Stored: the record's new own newest write.
        case store
        /// Same time and content: nothing changes.
        case replay
        /// A delete of a deleted record, not newer: nothing changes.
        case alreadyDeleted
        /// Older than the stored write (or a different write at the same time): 409 E008.
        case conflict
        /// An update or delete of an id never created: 404 E007.
        case notFound
    }

    /// One observed change of a record, and what the replay made of it.
    struct Step: CustomStringConvertible {
        var write: WriteRef
        var result: PushResult.Status
        var errorCode: String?
        var verdict: Verdict?
        /// The record's own newest write after the change.
        var after: Own
        /// What the server showed of the record after the change.
        var shown: Shown

        var description: String {
            let answer: String
            switch result {
            case .applied: answer = "applied"
            case .conflict: answer = "conflict"
            case .error: answer = errorCode ?? "error"
            case .unknown(let status): answer = status
            }
            return "\(write) -> \(answer), \(shown)"
        }
    }

    /// How each device's last write to a record ended.
    struct Tally: CustomStringConvertible {
        var kept = 0
        var supersededByOtherDevice = 0
        var supersededByOwnLaterWrite = 0
        /// Locations moved to a reassign target or hidden by a category delete (named): the
        /// server shows a location where the category its own newest write named shows it.
        var followedCategory = 0
        /// Verdicts that depended on when the server read its clock within a push's round trip
        /// (a clamped time): the server's answer was one of those the rules allow.
        var clampedAmbiguous = 0
        var unexplained: [String] = []

        var description: String {
            "kept \(kept) superseded \(supersededByOtherDevice) own-later \(supersededByOwnLaterWrite)"
                + " category-followed \(followedCategory) clamp-ambiguous \(clampedAmbiguous) unexplained \(unexplained.count)"
        }
    }

    private(set) var own: [RecordKey: Own] = [:]
    private(set) var steps: [RecordKey: [Step]] = [:]
    /// Answers the rules do not allow (a server departing from API.md), with the record's history.
    private(set) var departures: [String] = []
    private(set) var clampedAmbiguous = 0

    /// The replay of `observations`, starting from the records the account held before (`initial`:
    /// the default categories the server provisions).
    init(initial: [RecordState], _ observations: [PushObserver.Observation]) {
        for record in initial {
            let key = RecordKey(kind: record.kind, id: record.id)
            let at = StampRange(record.updatedAt.locifyMilliseconds)
            switch record {
            case .category(let category):
                let write = CategoryWrite(id: category.id, name: category.name, icon: category.icon, updatedAt: category.updatedAt)
                own[key] = .category(
                    name: category.name, icon: category.icon, at: at, by: WriteRef(sequence: -1, device: "server", change: .createCategory(write)))
            case .location(let location):
                let write = LocationWrite(
                    id: location.id, categoryID: location.categoryID, name: location.name, address: location.address,
                    description: location.description, latitude: location.latitude, longitude: location.longitude,
                    isFavorite: location.isFavorite, imageURLs: location.imageURLs, updatedAt: location.updatedAt)
                own[key] = .location(write, at: at, by: WriteRef(sequence: -1, device: "server", change: .createLocation(write)))
            case .tombstone(let kind, let tombstone):
                let delete = DeleteWrite(id: tombstone.id, updatedAt: tombstone.deletedAt)
                own[key] = .deleted(
                    at: at, reassignTo: nil,
                    by: WriteRef(sequence: -1, device: "server", change: kind == .category ? .deleteCategory(delete) : .deleteLocation(delete)))
            }
        }
        for observation in observations.sorted(by: { $0.sequence < $1.sequence }) { replay(observation) }
    }

    // MARK: The rules

    /// Last write wins on a record's own newest write `stored`, for a write requested at
    /// `requested` when the server's clock read `now` (a future time is clamped to it).
    static func verdict(_ change: PushChange, stored: Own, storedAt: Int64, requested: Int64, now: Int64) -> Verdict {
        let at = min(requested, now)
        let isDelete = change.action == .delete
        switch stored {
        case .absent:
            return change.action == .create ? .store : .notFound
        case .deleted:
            if isDelete { return at > storedAt ? .store : .alreadyDeleted }
            return at > storedAt ? .store : .conflict
        case .category, .location:
            if isDelete { return at < storedAt ? .conflict : .store }
            if at < storedAt { return .conflict }
            if at == storedAt { return sameContent(change, stored) ? .replay : .conflict }
            return .store
        }
    }

    /// Whether `change` writes what `stored` holds (names trimmed by the engine already; ids compared as values).
    static func sameContent(_ change: PushChange, _ stored: Own) -> Bool {
        switch (change, stored) {
        case (.createCategory(let write), .category(let name, let icon, _, _)), (.updateCategory(let write), .category(let name, let icon, _, _)):
            return write.name == name && write.icon == icon
        case (.createLocation(let write), .location(let old, _, _)), (.updateLocation(let write), .location(let old, _, _)):
            var a = write, b = old
            (a.createdAt, a.updatedAt, b.createdAt, b.updatedAt) = (nil, nil, nil, nil)
            return a == b
        default:
            return false
        }
    }

    /// Where locations whose own newest write names `category` are shown: in the live category
    /// reached by following reassigns, or nowhere (a cascade, a loop, a target never had).
    func placement(of category: UUID) -> UUID? {
        var current = category
        var visited: Set<UUID> = []
        while true {
            switch own[RecordKey(kind: .category, id: current)] ?? .absent {
            case .category: return current
            case .deleted(_, let target?, _) where visited.insert(current).inserted: current = target
            default: return nil
            }
        }
    }

    /// What the server shows of `key` now.
    func shown(_ key: RecordKey) -> Shown {
        switch own[key] ?? .absent {
        case .absent: return .absent
        case .deleted(let at, _, _): return .gone(at: at)
        case .category(_, _, let at, _): return .live(category: nil, at: at)
        case .location(let write, let at, _):
            guard let shownIn = placement(of: write.categoryID) else { return .gone(at: at) }
            return .live(category: shownIn, at: at)
        }
    }

    // MARK: Replay

    private mutating func replay(_ observation: PushObserver.Observation) {
        let change = observation.change
        let key = RecordKey(kind: change.kind, id: change.recordID)
        let write = WriteRef(sequence: observation.sequence, device: observation.device, change: change)
        let stored = own[key] ?? .absent
        guard let requested = change.updatedAt?.locifyMilliseconds else {
            departures.append("\(write): the engine sent a change without updated_at")
            return
        }
        // Every verdict the rules allow, over the stored time's bounds and the moments the server
        // may have read its clock.
        var verdicts: [Verdict] = []
        let storedBounds: [Int64] = stored.at.map { [$0.low, $0.high] } ?? [0]
        for storedAt in storedBounds {
            for now in [observation.sent, observation.received] {
                let verdict = Self.verdict(change, stored: stored, storedAt: storedAt, requested: requested, now: now)
                if !verdicts.contains(verdict) { verdicts.append(verdict) }
            }
        }
        let observed = Self.outcome(observation.result)
        let matching = verdicts.filter { expectedAnswer($0, of: change).answer == observed }
        var step = Step(
            write: write, result: observation.result.status, errorCode: observation.result.error?.code, verdict: matching.first,
            after: stored, shown: shown(key))
        defer {
            step.after = own[key] ?? .absent
            step.shown = shown(key)
            steps[key, default: []].append(step)
        }
        guard let verdict = matching.first else {
            let expected = verdicts.map { "\($0) (\(expectedAnswer($0, of: change).answer))" }.joined(separator: " or ")
            departures.append(
                "\(write): the server answered \(observed), the rules allow \(expected); stored \(describe(stored)), server clock in \(observation.sent)...\(observation.received); history: \(history(key))"
            )
            return
        }
        if verdicts.count > 1 { clampedAmbiguous += 1 }
        if verdict == .store && expectedAnswer(.store, of: change).isKept {
            let at = storedTime(observation, requested: requested)
            switch change {
            case .createCategory(let category), .updateCategory(let category):
                own[key] = .category(name: category.name, icon: category.icon, at: at, by: write)
            case .createLocation(let location), .updateLocation(let location):
                own[key] = .location(location, at: at, by: write)
            case .deleteCategory(let delete):
                own[key] = .deleted(at: at, reassignTo: delete.reassignCategoryID, by: write)
            case .deleteLocation:
                own[key] = .deleted(at: at, reassignTo: nil, by: write)
            case .patchCategory, .patchLocation:
                break
            }
        }
        // The answer's record is the server's state of the record after the change (applied) or
        // the one that won (conflict): it must be what the replay shows. It may also pin down a
        // clamped time the replay only knew within bounds.
        guard let record = observation.result.record, verdict != .notFound else { return }
        if let at = own[key]?.at, at.low != at.high, at.contains(record.updatedAt.locifyMilliseconds) {
            own[key] = own[key].map { Self.restamped($0, record.updatedAt.locifyMilliseconds) }
        }
        let answered = Final(record)
        if !Self.matches(shown(key), answered, purged: false) {
            departures.append(
                "\(write): the server answered \(observed) with \(answered), the rules show \(shown(key)); history: \(history(key))")
        }
    }

    /// The time a stored change holds: the answer's when it carries the record, else the requested
    /// time clamped to the server's clock within the push's round trip.
    private func storedTime(_ observation: PushObserver.Observation, requested: Int64) -> StampRange {
        if observation.result.status == .applied, let record = observation.result.record {
            return StampRange(record.updatedAt.locifyMilliseconds)
        }
        return StampRange(low: min(requested, observation.sent), high: min(requested, observation.received))
    }

    private static func restamped(_ own: Own, _ exact: Int64) -> Own {
        switch own {
        case .absent: return own
        case .category(let name, let icon, _, let by): return .category(name: name, icon: icon, at: StampRange(exact), by: by)
        case .location(let write, _, let by): return .location(write, at: StampRange(exact), by: by)
        case .deleted(_, let target, let by): return .deleted(at: StampRange(exact), reassignTo: target, by: by)
        }
    }

    /// The answer the rules give to `change` under `verdict` (judged before the change is
    /// stored), and whether a stored change is kept.
    private func expectedAnswer(_ verdict: Verdict, of change: PushChange) -> (answer: String, isKept: Bool) {
        switch verdict {
        case .conflict:
            return ("conflict", false)
        case .notFound:
            return ("E007", false)
        case .alreadyDeleted:
            return ("applied", false)
        case .store, .replay:
            switch change {
            case .createLocation(let write), .updateLocation(let write):
                // A category the user never had refuses the write; a deleted one keeps it, hidden
                // when nothing shows it (answered E007).
                if case .absent = own[RecordKey(kind: .category, id: write.categoryID)] ?? .absent { return ("E007", false) }
                return (placement(of: write.categoryID) == nil ? "E007" : "applied", true)
            case .deleteCategory(let delete):
                if verdict == .store, let target = delete.reassignCategoryID,
                    case .absent = own[RecordKey(kind: .category, id: target)] ?? .absent
                {
                    return ("E007", false)
                }
                return ("applied", true)
            default:
                return ("applied", true)
            }
        }
    }

    private static func outcome(_ result: PushResult) -> String {
        switch result.status {
        case .applied: return "applied"
        case .conflict: return "conflict"
        case .error: return result.error?.code ?? "error"
        case .unknown(let status): return "unknown status \(status)"
        }
    }

    private func describe(_ own: Own) -> String {
        switch own {
        case .absent: return "nothing"
        case .category(let name, _, let at, let by): return "category \(name)@\(at) by \(by)"
        case .location(let write, let at, let by): return "location in \(write.categoryID.uuidString.prefix(4))@\(at) by \(by)"
        case .deleted(let at, let target, let by):
            return "deleted@\(at)" + (target.map { " to \($0.uuidString.prefix(4))" } ?? "") + " by \(by)"
        }
    }

    /// A record's observed changes, for messages; a location's with those of the categories it was placed in.
    func history(_ kind: RecordKind, _ id: UUID) -> String {
        history(RecordKey(kind: kind, id: id))
    }

    func history(_ key: RecordKey) -> String {
        var text = (steps[key] ?? []).map(\.description).joined(separator: ", ")
        guard key.kind == .location else { return text }
        var categories: [UUID] = []
        for step in steps[key] ?? [] {
            if case .createLocation(let write) = step.write.change { categories.append(write.categoryID) }
            if case .updateLocation(let write) = step.write.change { categories.append(write.categoryID) }
        }
        var seen: Set<UUID> = []
        while let category = categories.popLast() {
            guard seen.insert(category).inserted else { continue }
            let categorySteps = steps[RecordKey(kind: .category, id: category)] ?? []
            text += "; category \(category.uuidString.prefix(4)): " + categorySteps.map(\.description).joined(separator: ", ")
            for step in categorySteps {
                if case .deleteCategory(let delete) = step.write.change, let target = delete.reassignCategoryID { categories.append(target) }
            }
        }
        return text
    }

    // MARK: Accounting

    /// Checks one record: the replay ends in the server's `final` state, and each device's last
    /// write is kept, superseded by a named write, or moved or hidden by named category deletes.
    /// `purged`: the final state comes from the listings (tombstones may be gone), so absent and
    /// deleted are one.
    func account(
        _ kind: RecordKind, _ id: UUID, lastWrites: [(device: String, stamp: Int64, isDelete: Bool)], final: Final, purged: Bool,
        into tally: inout Tally
    ) {
        let key = RecordKey(kind: kind, id: id)
        let name = "\(kind) \(id.uuidString.prefix(8))"
        let replayed = shown(key)
        guard Self.matches(replayed, final, purged: purged) else {
            tally.unexplained.append("\(name): the replay ends in \(replayed), the server holds \(final); history: \(history(key))")
            return
        }
        let recordSteps = steps[key] ?? []
        for write in lastWrites {
            guard
                let index = recordSteps.lastIndex(where: {
                    $0.write.device == write.device && $0.write.change.updatedAt?.locifyMilliseconds == write.stamp
                })
            else {
                // Never sent: a delete of a record the server never had, or a place whose create
                // this device's own later category delete (cascade) removed before it was sent.
                if replayed.isGone || replayed == .absent {
                    tally.kept += 1
                } else {
                    tally.unexplained.append("\(name): \(write.device)'s last write @\(write.stamp) never reached the server; history: \(history(key))")
                }
                continue
            }
            let mine = recordSteps[index]
            switch mine.verdict {
            case .store?, .replay?, .alreadyDeleted?:
                if let later = recordSteps[(index + 1)...].first(where: { $0.verdict == .store }) {
                    count(later.write, supersedes: write.device, &tally)
                } else if case .location(let location, _, _) = own[key] ?? .absent, !mine.write.change.isDelete,
                    placement(of: location.categoryID) != location.categoryID
                {
                    // Kept as the location's own newest write, shown where its category's deletes put it.
                    tally.followedCategory += 1
                } else {
                    tally.kept += 1
                }
            case .conflict?:
                if let winner = mine.after.writer {
                    count(winner, supersedes: write.device, &tally)
                } else {
                    tally.unexplained.append("\(name): \(write.device)'s write @\(write.stamp) lost a conflict to nothing; history: \(history(key))")
                }
            case .notFound?:
                if mine.write.change.isDelete && (replayed.isGone || replayed == .absent) {
                    tally.kept += 1  // a delete of a record the server never had
                } else {
                    tally.unexplained.append("\(name): \(write.device)'s write @\(write.stamp) named a record never created; history: \(history(key))")
                }
            case nil:
                tally.unexplained.append("\(name): \(write.device)'s write @\(write.stamp) got an answer the rules do not allow; history: \(history(key))")
            }
        }
    }

    private func count(_ winner: WriteRef, supersedes device: String, _ tally: inout Tally) {
        if winner.device == device { tally.supersededByOwnLaterWrite += 1 } else { tally.supersededByOtherDevice += 1 }
    }

    private static func matches(_ replayed: Shown, _ final: Final, purged: Bool) -> Bool {
        switch (replayed, final) {
        case (.absent, .absent): return true
        case (.live(let category, let at), .live(let finalCategory, let finalAt)): return category == finalCategory && at.contains(finalAt)
        case (.gone(let at), .tombstone(let finalAt)): return at.contains(finalAt)
        case (.gone, .absent): return purged
        default: return false
        }
    }
}

extension PushChange {
    var isDelete: Bool { action == .delete }
}
