import LocifyRules
import TestSupport
import Testing

/// The properties of `FieldLastWriteWins` over random writes of one record: every arrival order
/// ends in the per-field newest write, and whole-record writes are decided as `LastWriteWins`
/// decides them. The server and LocifyClient decide through this one function (a device shows
/// the pulled record with its pending patches decided on top, which is one of the orders), so
/// these properties hold for both ends.
@Suite("Field-level last write wins: properties over random writes")
struct FieldMergePropertyTests {
    /// A clock no test write is newer than, so no stamp is clamped.
    static let now = Timestamp(milliseconds: 1_000)

    @Test("every arrival order of whole writes, patches and deletes ends in the per-field newest write", arguments: [1, 2, 3] as [UInt64])
    func everyOrder(seed: UInt64) {
        var generator = SeededGenerator(seed: seed)
        var coverage = Coverage()
        for _ in 0..<40 {
            checkEveryOrder(of: randomWrites(LocationField.self, using: &generator), coverage: &coverage)
            checkEveryOrder(of: randomWrites(CategoryField.self, using: &generator), coverage: &coverage)
        }
        // The generator reached every case the property speaks of.
        #expect(coverage.tieFreeSets > 10 && coverage.setsWithTies > 10, "\(coverage)")
        #expect(Set(coverage.outcomes.keys).count == 7, "\(coverage)")
        #expect(coverage.hiddenSets > 0 && coverage.comebacks > 0, "\(coverage)")
    }

    @Test("whole-record writes are decided as LastWriteWins decides them, and leave the same visible record", arguments: [4, 5] as [UInt64])
    func wholeWritesReduceToLastWriteWins(seed: UInt64) throws {
        var generator = SeededGenerator(seed: seed)
        typealias Places = FieldLastWriteWins<LocationField>
        for _ in 0..<20_000 {
            let updatedAt = Timestamp(milliseconds: Int64.random(in: 10...20, using: &generator))
            let now = Timestamp(milliseconds: Int64.random(in: 10...25, using: &generator))
            // A whole-record history: one stamp on every field; a tombstone over its last write.
            let stored: Places.Clock? =
                switch Int.random(in: 0..<3, using: &generator) {
                case 0: nil
                case 1: Places.Clock(writtenWhole: updatedAt)
                default:
                    Places.Clock(writtenWhole: updatedAt.adding(milliseconds: -Int64.random(in: 0...5, using: &generator)), deletedAt: updatedAt)
                }
            let requested = Bool.random(using: &generator) ? nil : Timestamp(milliseconds: Int64.random(in: 5...30, using: &generator))
            let sameContent = Bool.random(using: &generator)
            let differing = LocationField.allCases.filter { _ in Bool.random(using: &generator) }
            let differs = Set(differing.isEmpty ? [LocationField.name] : differing)
            let intent = [LastWriteWins.Intent.create, .replace, .delete].randomElement(using: &generator) ?? .create
            let fieldIntent: Places.Intent =
                switch intent {
                case .create: .create
                case .replace: .replace
                case .delete: .delete
                }

            let expected = LastWriteWins.decide(
                intent, stored: stored.map { .init(updatedAt: $0.updatedAt, isDeleted: $0.isDeleted) }, requested: requested,
                sameContent: sameContent, now: now)
            let decision = Places.decide(
                fieldIntent, stored: stored, requested: requested, now: now, sameValue: { sameContent || !differs.contains($0) })
            let context = "\(intent) of \(String(describing: stored)) at \(String(describing: requested)), now \(now), same content \(sameContent)"
            #expect(lastWriteWinsDecision(decision) == expected, "\(context)")

            // The visible record: a whole write is stored at its time; anything else leaves it as it was.
            switch expected {
            case .insert(let at), .overwrite(let at):
                let clock = try #require(decision.clock)
                #expect(clock.isDeleted == (intent == .delete) && clock.updatedAt == at, "\(context)")
                if intent != .delete { #expect(clock == Places.Clock(writtenWhole: at), "\(context)") }
            case .replay, .alreadyDeleted, .conflict:
                #expect(decision.clock?.isDeleted == stored?.isDeleted && decision.clock?.updatedAt == stored?.updatedAt, "\(context)")
            case .notFound:
                #expect(decision.clock == nil)
            }
        }
    }

    /// `decision` in `LastWriteWins`' terms.
    private func lastWriteWinsDecision<Field>(_ decision: FieldLastWriteWins<Field>.Decision) -> LastWriteWins.Decision {
        switch decision.outcome {
        case .inserted: .insert(at: decision.at)
        case .updated, .deleted: .overwrite(at: decision.at)
        case .replayed: .replay
        case .alreadyDeleted: .alreadyDeleted
        case .conflict: .conflict
        case .notFound: .notFound
        }
    }
}

// MARK: - The model

/// One write of a record: its intent, its `updated_at` and a value for each field (small numbers,
/// so that two writes often carry the same value).
private struct ModelWrite<Field: RecordField>: CustomStringConvertible {
    let intent: FieldLastWriteWins<Field>.Intent
    let stamp: Timestamp
    let values: [Int]

    var description: String {
        switch intent {
        case .delete: "delete@\(stamp.milliseconds)"
        default:
            "\(intent == .create ? "create" : intent == .replace ? "replace" : "patch")@\(stamp.milliseconds)"
                + String(describing: intent.carriedFields.sorted { $0.rawValue < $1.rawValue }.map { "\($0)=\(values[$0.rawValue])" })
        }
    }
}

/// One end's copy of a record: its clock and a value per field (hidden ones included).
private struct ModelRecord<Field: RecordField>: Equatable {
    var clock: FieldLastWriteWins<Field>.Clock
    var values: [Int]
}

/// What the generator reached, so that a property cannot pass by never meeting its cases.
private struct Coverage: CustomStringConvertible {
    var tieFreeSets = 0
    var setsWithTies = 0
    var outcomes: [String: Int] = [:]
    /// Writes answered E008 that stored fields under a tombstone.
    var hiddenSets = 0
    /// Writes that brought a tombstone back.
    var comebacks = 0

    var description: String {
        "tie-free \(tieFreeSets), with ties \(setsWithTies), hidden sets \(hiddenSets), comebacks \(comebacks), outcomes \(outcomes)"
    }
}

/// 3 to 6 writes of one record, one of them a create, at 1 to 6 ms.
private func randomWrites<Field: RecordField>(_: Field.Type, using generator: inout SeededGenerator) -> [ModelWrite<Field>] {
    let count = Int.random(in: 3...6, using: &generator)
    let fields = Field.allCases.count
    return (0..<count).map { index in
        let intent: FieldLastWriteWins<Field>.Intent
        switch index == 0 ? 0 : Int.random(in: 0..<10, using: &generator) {
        case 0, 1: intent = .create
        case 2: intent = .replace
        case 3, 4: intent = .delete
        default:
            let carried = Field.allCases.filter { _ in Int.random(in: 0..<3, using: &generator) == 0 }
            intent = .patch(Set(carried.isEmpty ? [Field.allCases.first].compactMap { $0 } : carried))
        }
        let values = (0..<fields).map { _ in Int.random(in: 0...1, using: &generator) }
        return ModelWrite(intent: intent, stamp: Timestamp(milliseconds: Int64.random(in: 1...6, using: &generator)), values: values)
    }
}

/// Decides `write` against `record` and applies the decision as the server or a device would:
/// the values of `setting`, and the new clock.
private func apply<Field>(
    _ write: ModelWrite<Field>, to record: ModelRecord<Field>?, coverage: inout Coverage
) -> ModelRecord<Field>? {
    let decision = FieldLastWriteWins<Field>.decide(
        write.intent, stored: record?.clock, requested: write.stamp, now: FieldMergePropertyTests.now,
        sameValue: { record?.values[$0.rawValue] == write.values[$0.rawValue] })
    coverage.outcomes["\(decision.outcome)", default: 0] += 1
    #expect(decision.setting.isSubset(of: write.intent.carriedFields))
    var after = record
    if decision.changesRecord, let clock = decision.clock {
        // E008 only when the write sets nothing the record shows (the contract of issue 36).
        if decision.outcome == .conflict {
            #expect(clock.isDeleted, "\(write) answered E008 but set \(decision.setting) of a live record")
            coverage.hiddenSets += 1
        }
        if decision.outcome == .updated, record?.clock.isDeleted == true { coverage.comebacks += 1 }
        var values = record?.values ?? write.values
        for field in decision.setting { values[field.rawValue] = write.values[field.rawValue] }
        after = ModelRecord(clock: clock, values: values)
    } else {
        #expect(decision.setting.isEmpty && decision.clock == record?.clock, "\(write) changed \(String(describing: record))")
    }
    if let after { checkAnswer(decision.outcome, of: write, after: after) }
    return after
}

/// A write answered 200 or 201 shows at least one of its fields' values at its time in the live
/// record (one it set, or one an identical earlier arrival set).
private func checkAnswer<Field>(_ outcome: FieldLastWriteWins<Field>.Decision.Outcome, of write: ModelWrite<Field>, after: ModelRecord<Field>) {
    guard [.inserted, .updated, .replayed].contains(outcome) else { return }
    let shown = write.intent.carriedFields.contains {
        after.clock[$0] == write.stamp && after.values[$0.rawValue] == write.values[$0.rawValue]
    }
    #expect(shown && !after.clock.isDeleted, "\(write) answered \(outcome) but \(after) shows none of it")
}

/// The record after `order`, computed without the rule: the writes from the first create on are
/// kept (before it, every write is of an id never created: 404, not kept); each field holds its
/// newest kept write, the first to arrive of those at that time; the newest kept delete hides the
/// record unless a field is newer.
private func expectedRecord<Field>(after order: [ModelWrite<Field>]) -> ModelRecord<Field>? {
    guard let firstCreate = order.firstIndex(where: { $0.intent == .create }) else { return nil }
    let kept = order[firstCreate...]
    var stamps: [Timestamp] = []
    var values: [Int] = []
    for field in Field.allCases {
        let carriers = kept.filter { $0.intent.carriedFields.contains(field) }
        let newest = carriers.map(\.stamp).max() ?? .epoch
        let winner = carriers.first { $0.stamp == newest }
        stamps.append(newest)
        values.append(winner?.values[field.rawValue] ?? 0)
    }
    let newestField = stamps.max() ?? .epoch
    let newestDelete = kept.filter { $0.intent == .delete }.map(\.stamp).max()
    let deletedAt = newestDelete.flatMap { $0 >= newestField ? $0 : nil }
    guard let clock = FieldLastWriteWins<Field>.Clock(stamps: stamps, deletedAt: deletedAt) else { return nil }
    return ModelRecord(clock: clock, values: values)
}

/// Whether two writes carry one field at one time with different values: the only case where the
/// arrival order decides (the first to arrive stays; the other is refused on that field).
private func hasTies<Field>(_ writes: [ModelWrite<Field>]) -> Bool {
    for (index, one) in writes.enumerated() {
        for other in writes[(index + 1)...] where one.stamp == other.stamp {
            let both = one.intent.carriedFields.intersection(other.intent.carriedFields)
            if both.contains(where: { one.values[$0.rawValue] != other.values[$0.rawValue] }) { return true }
        }
    }
    return false
}

/// Applies every permutation of `writes` and checks: each ends in `expectedRecord(after:)`; and
/// when no two writes tie on a field with different values, every order that starts with a
/// create (so keeps every write) ends in one same record.
private func checkEveryOrder<Field>(of writes: [ModelWrite<Field>], coverage: inout Coverage) {
    let tieFree = !hasTies(writes)
    if tieFree { coverage.tieFreeSets += 1 } else { coverage.setsWithTies += 1 }
    var keptAll: ModelRecord<Field>??
    for order in permutations(of: writes) {
        var record: ModelRecord<Field>?
        for write in order { record = apply(write, to: record, coverage: &coverage) }
        let expected = expectedRecord(after: order)
        guard record == expected else {
            Issue.record("\(order) ends in \(String(describing: record)), not \(String(describing: expected))")
            return
        }
        guard tieFree, order.first?.intent == .create else { continue }
        if let keptAll, keptAll != record {
            Issue.record("\(order) ends in \(String(describing: record)), another order in \(String(describing: keptAll))")
            return
        }
        keptAll = record
    }
}

/// Every order of `elements` (n! arrays).
private func permutations<Element>(of elements: [Element]) -> [[Element]] {
    guard elements.count > 1 else { return [elements] }
    var all: [[Element]] = []
    for index in elements.indices {
        var rest = elements
        let first = rest.remove(at: index)
        all += permutations(of: rest).map { [first] + $0 }
    }
    return all
}
