import Foundation
import Locify
import LocifyRules
import Postgres
import Primitives
import Testing
import TestSupport
import TestSupportDatabase

@Suite("Migration 0009: the field stamps of rows written before it (issue 36)")
struct FieldStampsMigrationTests {
    let user = "migrated-user"
    let food = UUID(uuidString: "0a000000-0000-4000-8000-00000000000a") ?? UUID()
    let gone = UUID(uuidString: "0b000000-0000-4000-8000-00000000000b") ?? UUID()
    let place = UUID(uuidString: "01000000-0000-4000-8000-000000000001") ?? UUID()
    let created = Timestamp(milliseconds: 1_740_830_400_123)  // 2025-03-01T12:00:00.123Z
    let edited = Timestamp(milliseconds: 1_740_830_460_456)  // 2025-03-01T12:01:00.456Z
    let deleted = Timestamp(milliseconds: 1_740_830_700_000)  // 2025-03-01T12:05:00.000Z

    /// A folder with the migrations before 0009, applied to a database that then gets rows as the
    /// previous schema's statements wrote them; then every migration is applied.
    @Test("every field of every existing row starts at the row's updated_at, and writes are decided against them")
    func existingRows() throws {
        let before = try MigrationsBefore("0009")
        try TestDatabase.with { database in
            let applied = try before.upgrade(database) { connection in
                try connection.query("INSERT INTO users (id, change_seq, created_at, updated_at) VALUES (\(user), 3, now(), now())")
                try connection.query(
                    """
                    INSERT INTO categories (user_id, id, name, name_key, version, created_at, updated_at, deleted_at, change_seq)
                    VALUES (\(user), \(food), 'Food', 'food', 1, \(created), \(created), NULL, 1),
                           (\(user), \(gone), 'Gone', 'gone', 2, \(created), \(deleted), \(deleted), 2)
                    """)
                try connection.query(
                    """
                    INSERT INTO locations (user_id, id, category_id, name, name_key, search_text, latitude, longitude, version,
                                           created_at, updated_at, change_seq)
                    VALUES (\(user), \(place), \(food), 'Place', 'place', 'place', 1, 2, 2, \(created), \(edited), 3)
                    """)
            }
            #expect(applied == before.remaining)
            #expect(before.remaining.first == "0009_field_stamps.sql")

            // No row is rewritten: NULL stands for every field at the row's updated_at.
            let stamps = try database.pool.withConnection { connection in
                try connection.query("SELECT field_stamps FROM categories UNION ALL SELECT field_stamps FROM locations").map {
                    row in try row.decode(0, as: [Int64]?.self)
                }
            }
            #expect(stamps.count == 3 && stamps.allSatisfy { $0 == nil })

            // The migrated clocks decide: a patch older than the row's last write sets nothing, a
            // newer one sets its field alone; a write not newer than the tombstone does not bring
            // the category back.
            let services = LocifyServices(pool: database.pool, settings: LocifySettings(storageBucket: TestConstants.bucket))
            let caller = Caller(userID: user, email: nil, name: nil, tokenIssuedAt: Int64(Date().timeIntervalSince1970))
            let migrated = try services.locations.get(caller, id: place)
            #expect(migrated.fieldClock == FieldLastWriteWins<LocationField>.Clock(writtenWhole: edited))
            #expect(throws: LocifyError.self) {
                try services.locations.patch(caller, LocationPatch(id: place, name: "Older", updatedAt: edited.adding(milliseconds: -1)))
            }
            let renamed = try services.locations.patch(caller, LocationPatch(id: place, name: "Renamed", updatedAt: edited.adding(milliseconds: 1)))
            #expect(renamed.record.name == "Renamed" && renamed.record.version == 3)
            #expect(renamed.record.fieldClock[.name] == edited.adding(milliseconds: 1))
            #expect(renamed.record.fieldClock[.isFavorite] == edited)
            #expect(throws: LocifyError.self) {
                try services.categories.patch(caller, CategoryPatch(id: gone, name: "Back?", updatedAt: deleted))
            }
            // A delete keeps each field's stamp under the tombstone (no longer the row's updated_at).
            let tombstone = try services.locations.delete(caller, id: place, updatedAt: deleted)
            #expect(tombstone.deletedAt == deleted && tombstone.updatedAt == deleted)
            #expect(tombstone.fieldClock[.name] == edited.adding(milliseconds: 1) && tombstone.fieldClock[.address] == edited)
            #expect(tombstone.fieldClock.deletedAt == deleted)
        }
    }
}
