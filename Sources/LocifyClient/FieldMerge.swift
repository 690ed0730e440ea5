import Foundation
import LocifyRules

/// When each field of a category was last written (issue 36): the field clock the store keeps
/// beside each record, decided by the server's own rule, `FieldLastWriteWins`.
typealias CategoryClock = FieldLastWriteWins<CategoryField>.Clock
/// When each field of a location was last written (issue 36).
typealias LocationClock = FieldLastWriteWins<LocationField>.Clock

/// A record whose fields last write wins merges one by one: what the device shows is the record
/// as pulled with its pending writes decided on top, field by field, by `FieldLastWriteWins`.
protocol FieldMergedRecord {
    associatedtype Field: RecordField
    associatedtype Write
    /// The record's `updated_at`.
    var updatedAt: Date { get set }
    /// Sets `field` to `write`'s value of it.
    mutating func take(_ field: Field, from write: Write)
    /// Whether the record holds `write`'s value of `field`.
    func holds(_ field: Field, of write: Write) -> Bool
    /// What a pending `change` of this kind of record writes, and which fields (nil for a delete).
    static func write(of change: PushChange) -> (FieldLastWriteWins<Field>.Intent, Write)?
}

extension FieldMergedRecord {
    typealias Clock = FieldLastWriteWins<Field>.Clock

    /// The clock of this record as the server sent it: `field_updated_at` (RFC 3339 times by
    /// field), each field it omits (all of them from a server without it) at the record's
    /// `updated_at`.
    func clock(fieldUpdatedAt: [String: Date]?) -> Clock {
        let whole = updatedAt.timestamp
        guard let fieldUpdatedAt, !fieldUpdatedAt.isEmpty else { return Clock(writtenWhole: whole) }
        let stamps = Field.allCases.sorted { $0.rawValue < $1.rawValue }.map { fieldUpdatedAt[$0.wireName]?.timestamp ?? whole }
        return Clock(stamps: stamps, deletedAt: nil) ?? Clock(writtenWhole: whole)
    }

    /// The clock of stored stamps (milliseconds in field order), or every field at `updated_at`.
    func clock(stored milliseconds: [Int64]?) -> Clock {
        milliseconds.flatMap { Clock(milliseconds: $0, deletedAt: nil) } ?? Clock(writtenWhole: updatedAt.timestamp)
    }

    /// Decides `write` (carrying `intent`'s fields, made at `at`) on top of this record, whose
    /// clock is `clock`, as the server will: each carried field whose stamp is older takes the
    /// write's value and its time.
    mutating func decide(_ intent: FieldLastWriteWins<Field>.Intent, _ write: Write, at: Date, clock: inout Clock) {
        let record = self
        let decision = FieldLastWriteWins<Field>.decide(
            intent, stored: clock, requested: at.timestamp, now: at.timestamp, sameValue: { record.holds($0, of: write) })
        guard decision.changesRecord, let after = decision.clock else { return }
        for field in decision.setting { take(field, from: write) }
        clock = after
        updatedAt = Date(locifyMilliseconds: after.updatedAt.milliseconds)
    }

    /// Decides a pending `change` of this record on top of it (nothing for a delete).
    mutating func decide(_ change: PushChange, clock: inout Clock) {
        guard let at = change.updatedAt, let (intent, write) = Self.write(of: change) else { return }
        decide(intent, write, at: at, clock: &clock)
    }
}

extension Category: FieldMergedRecord {
    func holds(_ field: CategoryField, of write: CategoryWrite) -> Bool {
        switch field {
        case .name: name == write.name
        case .icon: icon == write.icon
        }
    }

    static func write(of change: PushChange) -> (FieldLastWriteWins<CategoryField>.Intent, CategoryWrite)? {
        switch change {
        case .createCategory(let write): (.create, write)
        case .updateCategory(let write): (.replace, write)
        case .patchCategory(let patch): (.patch(patch.fields), patch.values)
        default: nil
        }
    }
}

extension Location: FieldMergedRecord {
    func holds(_ field: LocationField, of write: LocationWrite) -> Bool {
        switch field {
        case .categoryID: categoryID == write.categoryID
        case .name: name == write.name
        case .address: address == write.address
        case .description: description == write.description
        case .coordinates: latitude == write.latitude && longitude == write.longitude
        case .isFavorite: isFavorite == write.isFavorite
        case .imageURLs: imageURLs == write.imageURLs
        }
    }

    static func write(of change: PushChange) -> (FieldLastWriteWins<LocationField>.Intent, LocationWrite)? {
        switch change {
        case .createLocation(let write): (.create, write)
        case .updateLocation(let write): (.replace, write)
        case .patchLocation(let patch): (.patch(patch.fields), patch.values)
        default: nil
        }
    }
}

extension FieldLastWriteWins.Clock {
    /// This clock with `field` stamped `at` when that is newer (a local move of a location by
    /// its category's delete).
    func stamping(_ field: Field, at: Timestamp) -> Self {
        var stamps = stamps
        stamps[field.rawValue] = Swift.max(stamps[field.rawValue], at)
        return Self(stamps: stamps, deletedAt: nil) ?? self
    }
}

/// A category or a category write: the merged fields a write sets one by one.
protocol CategoryFieldValues {
    var name: String { get set }
    var icon: String? { get set }
}

extension CategoryFieldValues {
    /// Sets `field` to `write`'s value of it.
    mutating func take(_ field: CategoryField, from write: CategoryWrite) {
        switch field {
        case .name: name = write.name
        case .icon: icon = write.icon
        }
    }
}

/// A location or a location write: the merged fields a write sets one by one.
protocol LocationFieldValues {
    var categoryID: UUID { get set }
    var name: String { get set }
    var address: String? { get set }
    var description: String? { get set }
    var latitude: Double { get set }
    var longitude: Double { get set }
    var isFavorite: Bool { get set }
    var imageURLs: [String] { get set }
}

extension LocationFieldValues {
    /// Sets `field` to `write`'s value of it.
    mutating func take(_ field: LocationField, from write: LocationWrite) {
        switch field {
        case .categoryID: categoryID = write.categoryID
        case .name: name = write.name
        case .address: address = write.address
        case .description: description = write.description
        case .coordinates: (latitude, longitude) = (write.latitude, write.longitude)
        case .isFavorite: isFavorite = write.isFavorite
        case .imageURLs: imageURLs = write.imageURLs
        }
    }
}

extension Category: CategoryFieldValues {}
extension CategoryWrite: CategoryFieldValues {}
extension Location: LocationFieldValues {}
extension LocationWrite: LocationFieldValues {}
