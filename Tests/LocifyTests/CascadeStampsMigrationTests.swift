import Foundation
import Locify
import LocifyRules
import Postgres
import Primitives
import Testing
import TestSupport
import TestSupportDatabase

@Suite("Migration 0010: each pending cascade keeps its stamp (issue 35, item 3)")
struct CascadeStampsMigrationTests {
    let user = "cascading-user"
    let idle = "idle-user"
    let gone = UUID(uuidString: "0a000000-0000-4000-8000-00000000000a") ?? UUID()
    let lost = UUID(uuidString: "0b000000-0000-4000-8000-00000000000b") ?? UUID()
    let place = UUID(uuidString: "01000000-0000-4000-8000-000000000001") ?? UUID()
    let created = Timestamp(milliseconds: 1_740_830_400_123)

    /// Cascades pending when the schema was 0009's, each then read at its tombstone's stamp, are
    /// settled at that stamp after the migration; a user with none gets an empty list.
    @Test("cascades pending before it get their tombstone's stamp, in the list's order, and settle at it")
    func pendingCascadesKeepTheirStamps() throws {
        let before = try MigrationsBefore("0010")
        try TestDatabase.with { database in
            let applied = try before.upgrade(database) { connection in
                try connection.query(
                    """
                    INSERT INTO users (id, change_seq, created_at, updated_at)
                    VALUES (\(user), 9, now(), now()), (\(idle), 1, now(), now())
                    """)
                try connection.query(
                    """
                    INSERT INTO categories (user_id, id, name, name_key, version, created_at, updated_at, deleted_at, change_seq)
                    VALUES (\(user), \(gone), 'Gone', 'gone', 1, \(created), \(created), NULL, 1),
                           (\(user), \(lost), 'Lost', 'lost', 1, \(created), \(created), NULL, 2)
                    """)
                try connection.query(
                    """
                    INSERT INTO locations (user_id, id, category_id, name, name_key, search_text, latitude, longitude, version,
                                           created_at, updated_at, change_seq)
                    VALUES (\(user), \(place), \(lost), 'Place', 'place', 'place', 1, 2, 1, \(created), \(created), 3)
                    """)
                // Both deleted with a cascade, `lost` first, `gone` later deleted again (stamp 9).
                try connection.query(
                    """
                    UPDATE categories SET deleted_at = updated_at, version = 2, change_seq = CASE WHEN id = \(lost) THEN 7 ELSE 9 END
                    WHERE user_id = \(user)
                    """)
                try connection.query("UPDATE users SET hiding = ARRAY[\(lost), \(gone)]::uuid[] WHERE id = \(user)")
            }
            #expect(applied == before.remaining)
            #expect(before.remaining.first == "0010_cascade_stamps.sql")

            let stamps = { (user: String) in
                try database.pool.withConnection { connection in
                    try connection.query("SELECT hiding_stamps FROM users WHERE id = \(user)").first?.decode(0, as: [Int64].self)
                }
            }
            #expect(try stamps(user) == [7, 9])
            #expect(try stamps(idle) == [])
            #expect(throws: PostgresError.self, "the list and its stamps keep one length") {
                try database.pool.withConnection { connection in
                    try connection.query("UPDATE users SET hiding_stamps = '{}' WHERE id = \(user)")
                }
            }

            // The first cascade settles at its stamp and leaves the list, with its stamp.
            let services = LocifyServices(pool: database.pool, settings: LocifySettings(storageBucket: TestConstants.bucket))
            let settled = try database.pool.withTransaction { connection in
                try services.cascades.settleBatch(connection, userID: user, limit: 10)
            }
            #expect(!settled.listEmpty && settled.position == nil)
            #expect(try stamps(user) == [9])
            let placeStamp = try database.pool.withConnection { connection in
                try connection.query("SELECT change_seq FROM locations WHERE id = \(place) AND deleted_at IS NOT NULL").first?.decode(
                    0, as: Int64.self)
            }
            #expect(placeStamp == 7)
        }
    }
}
