import FoundationEssentials
import LocifyRules
import Postgres
import Primitives

/// The SQL of categories. Write functions run inside a transaction that began with
/// `Accounts.write`, whose change stamp they put on every row they touch.
enum CategoryStore: RecordTable {
    typealias Draft = CategoryDraft
    typealias Clock = FieldLastWriteWins<CategoryField>.Clock

    /// Every statement's record columns, `Category.columns` under the alias `c`.
    static let columns = Category.columns("c")

    static func findQuery(userID: String, id: UUID) -> PostgresQuery {
        "SELECT \(unsafeSQL: columns.sql) FROM categories c WHERE c.user_id = \(userID) AND c.id = \(id)"
    }

    /// `find`, for a write: a category write settles no cascade ahead; one that moves the
    /// locations of a tombstone settles what it moves (`CategoryService`, `PendingCascades.settle`).
    static func findForWrite(_ connection: PostgresConnection, userID: String, id: UUID, cascades: PendingCascades) throws -> Category? {
        try find(connection, userID: userID, id: id)
    }

    /// Whether the user has, or had, a category with this id (live or a tombstone).
    static func isKnown(_ connection: PostgresConnection, userID: String, id: UUID) throws -> Bool {
        !(try connection.query("SELECT 1 FROM categories WHERE user_id = \(userID) AND id = \(id)").isEmpty)
    }

    /// Whether the user's category `id` is live; nil when the user never had it.
    static func isLive(_ connection: PostgresConnection, userID: String, id: UUID) throws -> Bool? {
        let isLive = ColumnSet<Bool>(expression: "deleted_at IS NULL")
        return try connection.query("SELECT \(unsafeSQL: isLive.sql) FROM categories WHERE user_id = \(userID) AND id = \(id)").first.map(
            isLive.decode)
    }

    /// The categories of the user's pending cascades (`PendingCascades`), each with the stamp of
    /// the delete that recorded it, oldest first.
    static func pendingCascades(_ connection: PostgresConnection, userID: String) throws -> [(category: UUID, stamp: Int64)] {
        try connection.query(
            """
            SELECT h.category, h.stamp FROM users u, unnest(u.hiding, u.hiding_stamps) WITH ORDINALITY AS h(category, stamp, position)
            WHERE u.id = \(userID)
            ORDER BY h.position
            """
        ).map { row throws(PostgresError) in
            var column = ColumnReader(row)
            return (try column.next(), try column.next())
        }
    }

    /// Each of the user's categories, live and deleted, with where a deleted one's locations are
    /// shown: what `CategoryGraph` is built from.
    static func graphNodes(
        _ connection: PostgresConnection, userID: String
    ) throws -> [(id: UUID, isDeleted: Bool, reassignedTo: UUID?)] {
        try connection.query("SELECT id, deleted_at IS NOT NULL, reassigned_to FROM categories WHERE user_id = \(userID)").map {
            row throws(PostgresError) in
            var column = ColumnReader(row)
            return (try column.next(), try column.next(), try column.next())
        }
    }

    /// Deletes every category of the user (the account's deletion).
    static func deleteAll(_ connection: PostgresConnection, userID: String) throws {
        try connection.query("DELETE FROM categories WHERE user_id = \(userID)")
    }

    /// Records where a deleted category's locations are shown: `target` for a reassign delete,
    /// nowhere (nil) for a cascade. A category that comes back forgets it (`update`).
    static func setReassignTarget(_ connection: PostgresConnection, userID: String, id: UUID, target: UUID?) throws {
        try connection.query("UPDATE categories SET reassigned_to = \(target) WHERE user_id = \(userID) AND id = \(id)")
    }

    static func insertQuery(
        userID: String, _ draft: CategoryDraft, _ placement: Void, at: Timestamp, createdAt: Timestamp, stamp: Int64
    ) -> PostgresQuery {
        """
        INSERT INTO categories AS c (user_id, id, name, name_key, icon, version, created_at, updated_at, change_seq, changed_at)
        VALUES (\(userID), \(draft.id), \(draft.name), \(TextRules.sortKey(draft.name)), \(draft.icon), 1,
                \(createdAt), \(at), \(stamp), clock_timestamp())
        RETURNING \(unsafeSQL: columns.sql)
        """
    }

    static func insertIfNewQuery(_ caller: Caller, _ draft: CategoryDraft, at: Timestamp, createdAt: Timestamp) -> PostgresQuery {
        """
        WITH account AS (\(UserStore.nextStampIfAdmitted(caller)))
        INSERT INTO categories AS c (user_id, id, name, name_key, icon, version, created_at, updated_at, change_seq, changed_at)
        SELECT \(caller.userID), \(draft.id), \(draft.name), \(TextRules.sortKey(draft.name)), \(draft.icon), 1,
               \(createdAt), \(at), account.change_seq, clock_timestamp()
        FROM account
        ON CONFLICT (user_id, id) DO NOTHING
        RETURNING \(unsafeSQL: columns.sql)
        """
    }

    static func update(
        _ connection: PostgresConnection, userID: String, _ patch: CategoryPatch, setting: Set<CategoryField>, clock: Clock,
        over stored: Category, stamp: Int64
    ) throws -> Category {
        let (setsName, setsIcon, isLive) = (setting.contains(.name), setting.contains(.icon), !clock.isDeleted)
        // A category that comes back (or stays live) forgets where a delete showed its locations.
        return try single(
            connection.query(
                """
                UPDATE categories c SET
                       name = CASE WHEN \(setsName) THEN \(patch.name) ELSE c.name END,
                       name_key = CASE WHEN \(setsName) THEN \(patch.name.map(TextRules.sortKey)) ELSE c.name_key END,
                       icon = CASE WHEN \(setsIcon) THEN \(patch.icon) ELSE c.icon END,
                       reassigned_to = CASE WHEN \(isLive) THEN NULL ELSE c.reassigned_to END,
                       \(clockAssignments("c", clock, deletedAt: clock.deletedAt, stamp: stamp))
                WHERE c.user_id = \(userID) AND c.id = \(patch.id)
                RETURNING \(unsafeSQL: columns.sql)
                """))
    }

    static func tombstoneQuery(userID: String, id: UUID, clock: Clock, stamp: Int64) -> PostgresQuery {
        """
        UPDATE categories c SET deleted_at = \(clock.deletedAt), updated_at = \(clock.updatedAt),
               field_stamps = \(clock.storedStamps), version = version + 1,
               change_seq = \(stamp), changed_at = clock_timestamp()
        WHERE c.user_id = \(userID) AND c.id = \(id)
        RETURNING \(unsafeSQL: columns.sql)
        """
    }

    /// One page of live categories by name (case-insensitive), then id, with the total from the
    /// maintained counter, gated.
    static func listQuery(_ caller: Caller, page: PageRequest) -> GatedRead<ListingRow<Category>> {
        GatedRead(
            caller, columns.listing(total: "u.category_count"),
            """
            FROM users u
            LEFT JOIN LATERAL (
                SELECT * FROM categories
                WHERE user_id = u.id AND deleted_at IS NULL
                ORDER BY name_key, id
                LIMIT \(Int64(page.size)) OFFSET \(page.offset)
            ) c ON true
            WHERE u.id = \(caller.userID)
            """)
    }

    static func getQuery(_ caller: Caller, id: UUID) -> GatedRead<Category?> {
        GatedRead(
            caller, columns.orNil,
            """
            FROM users u
            LEFT JOIN categories c ON c.user_id = u.id AND c.id = \(id) AND c.deleted_at IS NULL
            WHERE u.id = \(caller.userID)
            """)
    }
}
