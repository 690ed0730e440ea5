import Foundation
import LocifyRules
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

/// The oracle of the multi-device soak (issue 22 item 2, per field since issue 36): a model of
/// the server's rules, written from openapi.yaml ("Writes in any order") and docs/ARCHITECTURE.md
/// ("Field-level last write wins"), independently of the server's code and of `FieldLastWriteWins`.
///
/// It replays every change the devices pushed, in the order the server applied them. Each field
/// of a record (a category's name and icon; a location's category, name, address, description,
/// coordinates, favourite and photos) keeps the value of the newest write that carried it, by
/// each write's own time (a future time clamped to the server's clock; at one time, the first to
/// arrive stays); the newest delete hides the record while no field is newer (a delete wins a
/// tie); a write of an id never created, or naming a category never created, is not kept; a
/// location is shown where the category its category field names shows it (live: in it; deleted
/// with a reassign: in the target, followed; else hidden). At the end, every field of every
/// record the server holds must be its newest write, and every record shown or hidden as the
/// rules say; each device's writes must have reached the server (or been superseded on the
/// device by its own later write of the record). Nothing is excused.
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
            let values = WriteHistoryOracle.values(of: change)
            if !values.isEmpty, change.action == .patch {
                text += " {" + values.keys.sorted().map { WriteHistoryOracle.fieldName(change.kind, $0) }.joined(separator: ",") + "}"
            }
            if let category = values[LocationField.categoryID.rawValue], change.kind == .location { text += " in \(category.prefix(4))" }
            return text
        }
    }

    /// One field as the server keeps it: its value, the time of the write that set it, that write.
    struct FieldState {
        var value: String
        var at: StampRange
        var by: WriteRef
    }

    /// A record as the server keeps it.
    struct RecordModel {
        var fields: [Int: FieldState] = [:]
        /// The newest kept delete.
        var delete: (at: StampRange, reassignTo: UUID?, by: WriteRef)?
        /// Fields whose newest write the replay could not tell (clamped times that overlap).
        var ambiguous: Set<Int> = []

        /// The newest field's time (its upper bound).
        var newestField: StampRange? {
            fields.values.map(\.at).max { $0.high < $1.high }
        }

        /// Whether the newest delete hides the record (a delete wins a tie).
        var isDeleted: Bool {
            guard let delete else { return false }
            guard let newest = newestField else { return true }
            return delete.at.low >= newest.high
        }
    }

    /// How the replay and the final check went.
    struct Tally: CustomStringConvertible {
        /// Fields of live records checked against their newest write.
        var fields = 0
        /// Live records whose fields were last set by more than one device (merged field by field).
        var merged = 0
        /// Fields whose newest write depended on when the server read its clock (overlapping
        /// clamped times): any of the candidates' values is accepted.
        var clampedAmbiguous = 0
        var unexplained: [String] = []

        var description: String {
            "fields \(fields) merged \(merged) clamp-ambiguous \(clampedAmbiguous) unexplained \(unexplained.count)"
        }
    }

    private(set) var records: [RecordKey: RecordModel] = [:]
    private(set) var steps: [RecordKey: [String]] = [:]
    /// Answers the rules do not allow (a server departing from the contract), with the record's history.
    private(set) var departures: [String] = []

    /// The replay of `observations`, starting from the records the account held before (`initial`:
    /// the default categories the server provisions).
    init(initial: [RecordState], _ observations: [PushObserver.Observation]) {
        for record in initial {
            let key = RecordKey(kind: record.kind, id: record.id)
            let at = StampRange(record.updatedAt.locifyMilliseconds)
            let by = WriteRef(sequence: -1, device: "server", change: .deleteCategory(DeleteWrite(id: record.id)))
            var model = RecordModel()
            for (field, value) in Self.values(of: record) { model.fields[field] = FieldState(value: value, at: at, by: by) }
            if case .tombstone = record { model.delete = (at, nil, by) }
            records[key] = model
        }
        for observation in observations.sorted(by: { $0.sequence < $1.sequence }) { replay(observation) }
    }

    // MARK: Field values

    /// The fields a change carries, by `CategoryField`/`LocationField` index, as comparable text.
    static func values(of change: PushChange) -> [Int: String] {
        switch change {
        case .createCategory(let write), .updateCategory(let write):
            return categoryValues(name: write.name, icon: write.icon, only: Set(CategoryField.allCases))
        case .patchCategory(let patch):
            return categoryValues(name: patch.values.name, icon: patch.values.icon, only: patch.fields)
        case .createLocation(let write), .updateLocation(let write):
            return locationValues(write, only: Set(LocationField.allCases))
        case .patchLocation(let patch):
            return locationValues(patch.values, only: patch.fields)
        case .deleteCategory, .deleteLocation:
            return [:]
        }
    }

    /// The fields of a record as the server reports it (none for a tombstone).
    static func values(of record: RecordState) -> [Int: String] {
        switch record {
        case .category(let category): return categoryValues(name: category.name, icon: category.icon, only: Set(CategoryField.allCases))
        case .location(let location): return locationValues(LocationWrite(location, at: nil), only: Set(LocationField.allCases))
        case .tombstone: return [:]
        }
    }

    private static func categoryValues(name: String, icon: String?, only fields: Set<CategoryField>) -> [Int: String] {
        var values: [Int: String] = [:]
        for field in fields {
            switch field {
            case .name: values[field.rawValue] = name
            case .icon: values[field.rawValue] = icon ?? "(none)"
            }
        }
        return values
    }

    private static func locationValues(_ write: LocationWrite, only fields: Set<LocationField>) -> [Int: String] {
        var values: [Int: String] = [:]
        for field in fields {
            switch field {
            case .categoryID: values[field.rawValue] = write.categoryID.uuidString
            case .name: values[field.rawValue] = write.name
            case .address: values[field.rawValue] = write.address ?? "(none)"
            case .description: values[field.rawValue] = write.description ?? "(none)"
            case .coordinates: values[field.rawValue] = "\(write.latitude),\(write.longitude)"
            case .isFavorite: values[field.rawValue] = "\(write.isFavorite)"
            case .imageURLs: values[field.rawValue] = write.imageURLs.joined(separator: " ")
            }
        }
        return values
    }

    static func fieldName(_ kind: RecordKind, _ index: Int) -> String {
        switch kind {
        case .category: return CategoryField(rawValue: index).map { "\($0)" } ?? "\(index)"
        case .location: return LocationField(rawValue: index).map { "\($0)" } ?? "\(index)"
        }
    }

    // MARK: Replay

    /// Whether the server has record `key` (it was created, or provisioned).
    private func exists(_ key: RecordKey) -> Bool { records[key] != nil }

    private mutating func replay(_ observation: PushObserver.Observation) {
        let change = observation.change
        let key = RecordKey(kind: change.kind, id: change.recordID)
        let write = WriteRef(sequence: observation.sequence, device: observation.device, change: change)
        let answer = Self.outcome(observation.result)
        steps[key, default: []].append("\(write) -> \(answer)")
        guard let requested = change.updatedAt?.locifyMilliseconds else {
            departures.append("\(write): the engine sent a change without updated_at")
            return
        }
        observedWrites[key, default: []].append(ObservedWrite(device: observation.device, stamp: requested))
        sentFields[ObservedWrite(device: observation.device, stamp: requested), default: []].formUnion(change.fieldIndexes)
        if change.action == .create { sentCreates.insert(ObservedWrite(device: observation.device, stamp: requested)) }
        // The time the server gave the write: its own, or its clock's within the round trip when
        // the device's was ahead; an applied answer's record pins it (a clamped write is the
        // record's newest).
        var at = StampRange(low: min(requested, observation.sent), high: min(requested, observation.received))
        if at.low != at.high, observation.result.status == .applied, let record = observation.result.record,
            at.contains(record.updatedAt.locifyMilliseconds)
        {
            at = StampRange(record.updatedAt.locifyMilliseconds)
        }
        let values = Self.values(of: change)
        // Not kept: an edit or delete of an id never created, a location in a category never
        // created, a reassign to a category never created (404 E007).
        if change.action != .create && !exists(key) { return expect(answer, "E007", write, key) }
        if let category = values[LocationField.categoryID.rawValue].flatMap(UUID.init(uuidString:)), change.kind == .location,
            !exists(RecordKey(kind: .category, id: category))
        {
            return expect(answer, "E007", write, key)
        }
        if case .deleteCategory(let delete) = change, let target = delete.reassignCategoryID,
            !exists(RecordKey(kind: .category, id: target))
        {
            return expect(answer, "E007", write, key)
        }
        var model = records[key] ?? RecordModel()
        defer { records[key] = model }
        if change.isDelete {
            if !model.isDeleted, let newest = model.newestField, at.high < newest.low {
                return expect(answer, "conflict", write, key)  // older than a field of the live record: E008
            }
            if model.delete.map({ at.low > $0.at.high }) ?? true { model.delete = (at, change.reassignTarget, write) }
            return
        }
        var setAny = false
        for (field, value) in values {
            guard let stored = model.fields[field] else {
                model.fields[field] = FieldState(value: value, at: at, by: write)
                setAny = true
                continue
            }
            if at.low > stored.at.high {
                model.fields[field] = FieldState(value: value, at: at, by: write)
                model.ambiguous.remove(field)
                setAny = true
            } else if at.high > stored.at.low && stored.value != value {
                // Clamped times that overlap: either may be the newer one.
                model.ambiguous.insert(field)
                if at.high > stored.at.high { model.fields[field] = FieldState(value: value, at: at, by: write) }
            }
        }
        // A write that sets a field of a live record is no conflict (one kept hidden behind a
        // tombstone is).
        if setAny && answer == "conflict" && model.ambiguous.isEmpty && !model.isDeleted {
            departures.append("\(write): the server answered conflict, but the write sets a field; history: \(history(key))")
        }
    }

    /// Records a departure when the server's `answer` is not `expected`.
    private mutating func expect(_ answer: String, _ expected: String, _ write: WriteRef, _ key: RecordKey) {
        if answer != expected && !(expected == "E007" && write.change.isDelete && answer == "applied") {
            departures.append("\(write): the server answered \(answer), the rules say \(expected); history: \(history(key))")
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

    // MARK: What the server shows

    /// Where locations whose category field names `category` are shown: in the live category
    /// reached by following reassigns, or nowhere (a cascade, a loop, a category never had).
    func placement(of category: UUID) -> UUID? {
        var current = category
        var visited: Set<UUID> = []
        while let model = records[RecordKey(kind: .category, id: current)] {
            if !model.isDeleted { return current }
            guard let target = model.delete?.reassignTo, visited.insert(current).inserted else { return nil }
            current = target
        }
        return nil
    }

    /// A record's observed changes, for messages; a location's with those of its categories.
    func history(_ kind: RecordKind, _ id: UUID) -> String {
        history(RecordKey(kind: kind, id: id))
    }

    func history(_ key: RecordKey) -> String {
        var text = (steps[key] ?? []).joined(separator: ", ")
        if key.kind == .location, let category = records[key]?.fields[LocationField.categoryID.rawValue].flatMap({ UUID(uuidString: $0.value) }) {
            text += "; category \(category.uuidString.prefix(4)): " + (steps[RecordKey(kind: .category, id: category)] ?? []).joined(separator: ", ")
        }
        return text
    }

    // MARK: Accounting

    /// Checks every record against the server's `final` state (from the feed, or from the
    /// listings when tombstones may have been purged: `purged`, absent and deleted are then one),
    /// and that each device write reached the server or was superseded on its device.
    func account(final: [RecordKey: RecordState], purged: Bool, deviceWrites: [RecordKey: [WriteOracle.Write]], into tally: inout Tally) {
        for key in Set(records.keys).union(final.keys) {
            let name = "\(key.kind) \(key.id.uuidString.prefix(8))"
            let model = records[key]
            let server = final[key]
            var expectedCategory: UUID?
            var shown = model != nil && !(model?.isDeleted ?? true)
            if shown, key.kind == .location, let category = model?.fields[LocationField.categoryID.rawValue].flatMap({ UUID(uuidString: $0.value) }) {
                expectedCategory = placement(of: category)
                shown = expectedCategory != nil
            }
            switch server {
            case .category?, .location?:
                guard shown, let model else {
                    tally.unexplained.append("\(name): the server shows it, the rules \(model == nil ? "never had it" : "hide it"); history: \(history(key))")
                    continue
                }
                var serverValues = server.map(Self.values(of:)) ?? [:]
                if let expectedCategory {
                    // Its category field is checked through where it is shown (reassigns followed).
                    let categoryField = LocationField.categoryID.rawValue
                    if serverValues[categoryField] != expectedCategory.uuidString {
                        tally.unexplained.append(
                            "\(name): shown in \(serverValues[categoryField] ?? "?"), the rules show it in \(expectedCategory.uuidString); history: \(history(key))"
                        )
                    }
                    serverValues[categoryField] = model.fields[categoryField]?.value
                }
                for (field, state) in model.fields.sorted(by: { $0.key < $1.key }) {
                    tally.fields += 1
                    if model.ambiguous.contains(field) {
                        tally.clampedAmbiguous += 1
                        continue
                    }
                    if serverValues[field] != state.value {
                        tally.unexplained.append(
                            "\(name): \(Self.fieldName(key.kind, field)) is \(serverValues[field] ?? "missing"), its newest write \(state.by) set \(state.value); history: \(history(key))"
                        )
                    }
                }
                if Set(model.fields.values.map(\.by.device)).subtracting(["server"]).count > 1 { tally.merged += 1 }
            case .tombstone?, nil:
                if shown {
                    tally.unexplained.append(
                        "\(name): the server \(server == nil ? "has nothing" : "holds a tombstone"), the rules show it; history: \(history(key))")
                } else if server == nil && model != nil && !purged {
                    tally.unexplained.append("\(name): the feed never reported its end state; history: \(history(key))")
                }
            }
        }
        for (key, writes) in deviceWrites {
            // A place's edit sends the fields the user changed, no more (an edit form's, or every
            // field of a whole draft), so that it never overwrites another device's edit of another.
            for write in writes where key.kind == .location && !write.isDelete {
                let mine = ObservedWrite(device: write.device, stamp: write.stamp)
                let extra = sentCreates.contains(mine) ? [] : (sentFields[mine] ?? []).subtracting(write.fields)
                if !extra.isEmpty {
                    tally.unexplained.append(
                        "\(key.kind) \(key.id.uuidString.prefix(8)): \(write.device)'s edit @\(write.stamp) sent fields it did not change: \(extra.sorted().map { Self.fieldName(key.kind, $0) }); history: \(history(key))"
                    )
                }
            }
            let sent = Set(observedWrites[key] ?? [])
            for write in writes where !sent.contains(ObservedWrite(device: write.device, stamp: write.stamp)) {
                // Never sent: superseded on the device by its own later writes of the record (folded
                // into a create, or each of its fields set again), or a record gone (made and deleted
                // before it was sent).
                let later = writes.filter { $0.device == write.device && $0.stamp > write.stamp }
                var laterFields = later.reduce(into: Set<Int>()) { $0.formUnion($1.fields) }
                for observed in sent where observed.device == write.device && observed.stamp > write.stamp {
                    laterFields.formUnion(sentFields[observed] ?? [])
                }
                let superseded = later.contains(where: \.isDelete) || write.fields.isSubset(of: laterFields)
                let gone = final[key].map { if case .tombstone = $0 { true } else { false } } ?? true
                if !superseded && !gone {
                    tally.unexplained.append(
                        "\(key.kind) \(key.id.uuidString.prefix(8)): \(write.device)'s write @\(write.stamp) never reached the server; history: \(history(key))"
                    )
                }
            }
        }
    }

    /// A device's write as observed at the server.
    struct ObservedWrite: Hashable {
        var device: String
        var stamp: Int64
    }

    /// The writes each record received, by device and requested time.
    private(set) var observedWrites: [RecordKey: [ObservedWrite]] = [:]
    /// The fields each write carried as sent.
    private(set) var sentFields: [ObservedWrite: Set<Int>] = [:]
    /// The creates sent (a create carries the later edits folded into it: every field).
    private(set) var sentCreates: Set<ObservedWrite> = []
}

extension PushChange {
    var isDelete: Bool { action == .delete }

    /// For a category delete, where its locations go.
    var reassignTarget: UUID? {
        if case .deleteCategory(let delete) = self { return delete.reassignCategoryID }
        return nil
    }
}
