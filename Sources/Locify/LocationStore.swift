import Foundation
import Postgres

/// The SQL of locations. Write functions run inside a transaction that began with
/// `AccountGate.beginWrite`, whose change stamp they put on every row they touch.
enum LocationStore {
    /// The stored record or tombstone, if the id was ever used by this user.
    static func find(_ connection: PostgresConnection, userID: String, id: UUID) throws -> Location? {
        try connection.query(
            "SELECT \(unsafeSQL: Location.columns("l")) FROM locations l WHERE l.user_id = \(userID) AND l.id = \(id)"
        ).first.map { row throws(PostgresError) in try Location(row: row) }
    }

    static func insert(
        _ connection: PostgresConnection, userID: String, _ draft: LocationDraft, at: Timestamp,
        createdAt: Timestamp, stamp: Int64
    ) throws -> Location {
        try single(
            connection.query(
                """
                INSERT INTO locations AS l (user_id, id, category_id, name, name_key, address, description, search_text,
                                            latitude, longitude, is_favorite, image_urls, version, created_at, updated_at,
                                            change_seq, changed_at)
                VALUES (\(userID), \(draft.id), \(draft.categoryID), \(draft.name), \(TextRules.sortKey(draft.name)),
                        \(draft.address), \(draft.description), \(draft.searchText), \(draft.latitude), \(draft.longitude),
                        \(draft.isFavorite), \(draft.imageURLs), 1, \(createdAt), \(at), \(stamp), clock_timestamp())
                RETURNING \(unsafeSQL: Location.columns("l"))
                """))
    }

    /// The create fast path, one statement: takes the user's write lock and stamp (unless the
    /// account is missing or the token revoked) and inserts the record when its id is new. Returns
    /// nil when it inserted nothing; throws `CategoryGuard.sqlState` when the category is not live.
    static func insertIfNew(
        _ connection: PostgresConnection, _ caller: Caller, _ draft: LocationDraft, at: Timestamp, createdAt: Timestamp
    ) throws -> Location? {
        try connection.query(
            """
            WITH account AS (
                UPDATE users SET change_seq = change_seq + 1
                WHERE id = \(caller.userID) AND tokens_valid_after < \(caller.tokenIssuedAt)
                RETURNING change_seq
            )
            INSERT INTO locations AS l (user_id, id, category_id, name, name_key, address, description, search_text,
                                        latitude, longitude, is_favorite, image_urls, version, created_at, updated_at,
                                        change_seq, changed_at)
            SELECT \(caller.userID), \(draft.id), \(draft.categoryID), \(draft.name), \(TextRules.sortKey(draft.name)),
                   \(draft.address), \(draft.description), \(draft.searchText), \(draft.latitude), \(draft.longitude),
                   \(draft.isFavorite), \(draft.imageURLs), 1, \(createdAt), \(at), account.change_seq, clock_timestamp()
            FROM account
            ON CONFLICT (user_id, id) DO NOTHING
            RETURNING \(unsafeSQL: Location.columns("l"))
            """
        ).first.map { row throws(PostgresError) in try Location(row: row) }
    }

    /// Replaces the editable fields (and revives a tombstone): version + 1.
    static func overwrite(
        _ connection: PostgresConnection, userID: String, _ draft: LocationDraft, at: Timestamp, stamp: Int64
    ) throws -> Location {
        try single(
            connection.query(
                """
                UPDATE locations l SET category_id = \(draft.categoryID), name = \(draft.name),
                       name_key = \(TextRules.sortKey(draft.name)), address = \(draft.address),
                       description = \(draft.description), search_text = \(draft.searchText),
                       latitude = \(draft.latitude), longitude = \(draft.longitude), is_favorite = \(draft.isFavorite),
                       image_urls = \(draft.imageURLs), version = version + 1, updated_at = \(at), deleted_at = NULL,
                       change_seq = \(stamp), changed_at = clock_timestamp()
                WHERE l.user_id = \(userID) AND l.id = \(draft.id)
                RETURNING \(unsafeSQL: Location.columns("l"))
                """))
    }

    /// Turns the record into a tombstone deleted at `at`: version + 1.
    static func tombstone(
        _ connection: PostgresConnection, userID: String, id: UUID, at: Timestamp, stamp: Int64
    ) throws -> Location {
        try single(
            connection.query(
                """
                UPDATE locations l SET deleted_at = \(at), updated_at = \(at), version = version + 1,
                       change_seq = \(stamp), changed_at = clock_timestamp()
                WHERE l.user_id = \(userID) AND l.id = \(id)
                RETURNING \(unsafeSQL: Location.columns("l"))
                """))
    }

    /// Moves every live location of a deleted category to `target`, each stamped with the later of
    /// the delete's time and its own `updated_at` (API.md section 11); version + 1.
    static func moveAll(
        _ connection: PostgresConnection, userID: String, from category: UUID, to target: UUID, at: Timestamp,
        stamp: Int64
    ) throws {
        try connection.query(
            """
            UPDATE locations SET category_id = \(target), updated_at = GREATEST(updated_at, \(at)),
                   version = version + 1, change_seq = \(stamp), changed_at = clock_timestamp()
            WHERE user_id = \(userID) AND category_id = \(category) AND deleted_at IS NULL
            """)
    }

    /// Tombstones every live location of a deleted category (stamped as in `moveAll`) and returns
    /// their ids and image URLs, for the Storage clean-up.
    static func tombstoneAll(
        _ connection: PostgresConnection, userID: String, in category: UUID, at: Timestamp, stamp: Int64
    ) throws -> [(id: UUID, imageURLs: [String])] {
        try connection.query(
            """
            UPDATE locations SET deleted_at = GREATEST(updated_at, \(at)), updated_at = GREATEST(updated_at, \(at)),
                   version = version + 1, change_seq = \(stamp), changed_at = clock_timestamp()
            WHERE user_id = \(userID) AND category_id = \(category) AND deleted_at IS NULL
            RETURNING id, image_urls
            """
        ).map { row throws(PostgresError) in (try row.decode(0), try row.decode(1)) }
    }

    /// One page of live locations with its total; the first column is the account gate's
    /// `tokens_valid_after`, the second the total, then the location columns (NULL when the page
    /// is empty). Each filter combination is its own statement text (so each gets its own plan and
    /// index) but binds are always `$1` user, `$2` category, `$3` favorite, `$4` search, `$5`
    /// limit, `$6` offset; the SQL text is built only from the constant fragments below.
    ///
    /// The page is found on ids alone (an index-only scan of the sort's partial index skips the
    /// offset without touching the table, so page 500 costs about what page 1 does) and only its
    /// rows are then read. The total does not depend on the page row, so it is computed once
    /// (bench/RESULTS.md, "Resources at scale").
    static func listQuery(userID: String, _ query: LocationQuery) -> PostgresQuery {
        var filters = ""
        if query.categoryID != nil { filters += " AND category_id = $2" }
        if query.isFavorite != nil { filters += " AND is_favorite = $3" }
        let search = query.search.map(TextRules.sortKey)
        if search != nil { filters += " AND strpos(search_text, $4) > 0" }
        let order: (String) -> String
        switch query.sort {
        case .createdAt: order = { "\($0)created_at DESC, \($0)id" }
        case .updatedAt: order = { "\($0)updated_at DESC, \($0)id" }
        case .name: order = { "\($0)name_key, \($0)id" }
        }
        let sql = """
            SELECT u.tokens_valid_after, \(totalExpression(query, filters: filters)), \(Location.columns("l"))
            FROM users u
            LEFT JOIN LATERAL (
                SELECT loc.* FROM (
                    SELECT id FROM locations
                    WHERE user_id = u.id AND deleted_at IS NULL\(filters)
                    ORDER BY \(order(""))
                    LIMIT $5 OFFSET $6
                ) page
                -- One primary-key lookup per id of the page; OFFSET 0 keeps the planner from
                -- turning it into a join, so even the generic plan never scans the table.
                CROSS JOIN LATERAL (
                    SELECT * FROM locations r WHERE r.user_id = u.id AND r.id = page.id OFFSET 0
                ) loc
            ) l ON true
            WHERE u.id = $1
            ORDER BY \(order("l."))
            """
        return PostgresQuery(
            unsafeSQL: sql,
            binds: [
                PostgresBind(userID), PostgresBind(query.categoryID), PostgresBind(query.isFavorite), PostgresBind(search),
                PostgresBind(Int64(query.page.size)), PostgresBind(query.page.offset),
            ])
    }

    /// The total of a listing: read from the per-category counters the triggers maintain, except
    /// for a text search, which has to count. Written against `$1` rather than the joined user row, so it is
    /// an uncorrelated subquery that PostgreSQL evaluates once, not once per row of the page.
    private static func totalExpression(_ query: LocationQuery, filters: String) -> String {
        if query.search != nil {
            return "(SELECT count(*) FROM locations WHERE user_id = $1 AND deleted_at IS NULL\(filters))"
        }
        let counter: (String) -> String = { table in
            switch query.isFavorite {
            case nil: return "\(table).location_count"
            case true?: return "\(table).favorite_count"
            case false?: return "\(table).location_count - \(table).favorite_count"
            }
        }
        guard query.categoryID != nil else {
            // A user's total is the sum over their live categories (every live location is in one).
            return "(SELECT COALESCE(sum(\(counter("c"))), 0)::bigint FROM categories c WHERE c.user_id = $1 AND c.deleted_at IS NULL)"
        }
        return """
            COALESCE((SELECT \(counter("c")) FROM categories c
                      WHERE c.user_id = $1 AND c.id = $2 AND c.deleted_at IS NULL), 0)
            """
    }

    /// One live location; first column as in `listQuery`.
    static func getQuery(userID: String, id: UUID) -> PostgresQuery {
        """
        SELECT u.tokens_valid_after, \(unsafeSQL: Location.columns("l"))
        FROM users u
        LEFT JOIN locations l ON l.user_id = u.id AND l.id = \(id) AND l.deleted_at IS NULL
        WHERE u.id = \(userID)
        """
    }

    static func single(_ rows: PostgresRows) throws -> Location {
        guard let row = rows.first else {
            throw PostgresError(kind: .server, message: "a write returned no row")
        }
        return try Location(row: row)
    }
}

extension LocationDraft {
    /// Lower-cased name, address and description for the `q` filter, one per line (a search
    /// term cannot contain a line break, so it never matches across fields).
    var searchText: String {
        [name, address ?? "", description ?? ""].map(TextRules.sortKey).joined(separator: "\n")
    }
}
