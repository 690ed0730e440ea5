import FoundationEssentials
import LocifyRules
import Postgres
import Primitives

/// A location a cascade hid, with its image URLs when one may name an object outside its own
/// folder (`images_outside_folder`, migrations/0007; the folder's job covers the others): what its
/// Storage clean-up needs (`StorageScope.queueCleanup`).
typealias HiddenLocation = (id: UUID, imageURLsOutsideFolder: [String])

/// The SQL of locations. Write functions run inside a transaction that began with
/// `Accounts.write`, whose change stamp they put on every row they touch.
enum LocationStore: RecordTable {
    typealias Draft = LocationDraft
    typealias Placement = CategoryGraph.Placement
    typealias Clock = FieldLastWriteWins<LocationField>.Clock

    /// Every statement's record columns, `Location.columns` under the alias `l`.
    static let columns = Location.columns("l")

    static func findQuery(userID: String, id: UUID) -> PostgresQuery {
        "SELECT \(unsafeSQL: columns.sql) FROM locations l WHERE l.user_id = \(userID) AND l.id = \(id)"
    }

    /// `find`, for a write: a location still shown in a category whose cascade is pending is hidden
    /// first, at the cascade's stamp, as settling would hide it, its clean-up queued with it
    /// (`PendingCascades`), so the write meets the tombstone every read already shows.
    static func findForWrite(_ connection: PostgresConnection, userID: String, id: UUID, cascades: PendingCascades) throws -> Location? {
        let row = try connection.query(
            """
            WITH target AS (
                SELECT l.user_id, l.id, l.category_id, h.stamp AS change_seq FROM users u
                CROSS JOIN unnest(u.hiding, u.hiding_stamps) AS h(category, stamp)
                JOIN locations l ON l.user_id = u.id AND l.id = \(id) AND l.deleted_at IS NULL AND l.category_id = h.category
                WHERE u.id = \(userID)
            ), hidden AS (
                UPDATE locations l SET \(unsafeSQL: hidingAssignments), change_seq = target.change_seq
                FROM target WHERE l.user_id = target.user_id AND l.id = target.id
                RETURNING \(unsafeSQL: columns.sql), target.category_id
            )
            SELECT * FROM hidden
            UNION ALL
            SELECT \(unsafeSQL: columns.sql), NULL FROM locations l
            WHERE l.user_id = \(userID) AND l.id = \(id) AND NOT EXISTS (SELECT 1 FROM hidden)
            """
        ).first
        guard let row else { return nil }
        var column = ColumnReader(row)
        let location = try columns.decode(&column)
        if let cascade = try column.next(UUID?.self) {
            // Its URLs in its own folder are left to the folder's job, as `images_outside_folder` would.
            try cascades.queueCleanup(connection, userID: userID, of: [(location.id, location.imageURLs)], shownIn: cascade)
        }
        return location
    }

    /// Hides up to `limit` live locations shown in `category`, whose cascade is pending, at its
    /// `stamp` (`PendingCascades.settleBatch`): the first in the order of an index of live rows
    /// (newest first, then by id) after `after` (the last one an earlier batch hid; nil: from
    /// the first). Returns them, for their clean-up (as `follow` does), and the last of them in
    /// that order. The category's counters drop by the rows hidden, in the same statement, instead
    /// of once per row (`skipCounters`).
    static func hideBatch(
        _ connection: PostgresConnection, userID: String, category: UUID, stamp: Int64, limit: Int,
        after: (createdAt: String, id: UUID)?
    ) throws -> (hidden: [HiddenLocation], last: (createdAt: String, id: UUID)?) {
        // The ids are read through an index of live rows, and a hidden row's entry stays there
        // (dead) until a vacuum: read from the first, each batch walked past every row hidden
        // before it (45 ms of the batch at 210,000 hidden, growing with them). So a batch starts
        // after the last row the previous one hid (the same `created_at` with a greater id, then
        // older rows: two index ranges).
        // The ids are passed as one array: a join with `LIMIT` bound as a parameter made the
        // generic plan expect a tenth of the table and hash-join all of it (5 s a batch).
        let (createdAt, id) = after ?? ("infinity", UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)))
        let rows = try hide(
            connection, userID: userID, shownIn: category, stamp: stamp,
            rows: """
                l.id = ANY (ARRAY(
                    SELECT p.id FROM (
                        (SELECT t.id, t.created_at FROM locations t
                         WHERE t.user_id = \(userID) AND t.category_id = \(category) AND t.deleted_at IS NULL
                           AND t.created_at = \(createdAt)::timestamptz AND t.id > \(id)
                         ORDER BY t.id LIMIT \(Int64(limit)))
                        UNION ALL
                        (SELECT t.id, t.created_at FROM locations t
                         WHERE t.user_id = \(userID) AND t.category_id = \(category) AND t.deleted_at IS NULL
                           AND t.created_at < \(createdAt)::timestamptz
                         ORDER BY t.created_at DESC, t.id LIMIT \(Int64(limit)))
                    ) p
                    ORDER BY p.created_at DESC, p.id
                    LIMIT \(Int64(limit))))
                """,
            selecting: """
                , (SELECT created_at::text FROM hidden ORDER BY created_at, id DESC LIMIT 1),
                  (SELECT id FROM hidden ORDER BY created_at, id DESC LIMIT 1)
                """)
        var hidden: [HiddenLocation] = []
        var last: (createdAt: String, id: UUID)?
        for row in rows {
            var column = ColumnReader(row)
            hidden.append((try column.next(), try column.next([String]?.self) ?? []))
            last = (try column.next(), try column.next())
        }
        return (hidden, last)
    }

    /// Hides the live locations shown in `category`, whose cascade is pending, at its `stamp`, as
    /// settling would, ahead of a write to a category tombstone (`PendingCascades.settle`): every
    /// one (`placedIn` nil), or those placed, by their own last write, in one of `placedIn` and
    /// shown in `category` by a reassign (through `own_category_id`'s index). Returns them for their
    /// clean-up; the category's counters drop by the rows hidden, as in `hideBatch`.
    static func hidePending(
        _ connection: PostgresConnection, userID: String, shownIn category: UUID, stamp: Int64, placedIn owners: [UUID]?
    ) throws -> [HiddenLocation] {
        var placed: PostgresQuery = ""
        if let owners { placed = " AND l.own_category_id = ANY (\(owners))" }
        let rows = try hide(
            connection, userID: userID, shownIn: category, stamp: stamp,
            rows: "l.category_id = \(category) AND l.deleted_at IS NULL\(placed)", selecting: "")
        return try rows.map(decodeHidden)
    }

    /// Hides `rows` (a condition on `locations l`), live locations shown in `category` whose
    /// cascade is pending, at its `stamp`, and drops the category's counters by the rows hidden in
    /// the same statement (the per-row counting skipped, `skipCounters`); selects each one's id and
    /// image URLs that may name an object outside its folder, then `selecting` (more columns over
    /// `hidden`).
    private static func hide(
        _ connection: PostgresConnection, userID: String, shownIn category: UUID, stamp: Int64, rows: PostgresQuery,
        selecting: PostgresQuery
    ) throws -> PostgresRows {
        try skipCounters(connection, true)
        let hidden = try connection.query(
            """
            WITH hidden AS (
                UPDATE locations l SET \(unsafeSQL: hidingAssignments), change_seq = \(stamp)
                WHERE l.user_id = \(userID) AND \(rows)
                RETURNING l.id, l.is_favorite, l.created_at, CASE WHEN l.images_outside_folder IS NOT FALSE THEN l.image_urls END AS urls
            ), counted AS (
                UPDATE categories c SET location_count = c.location_count - (SELECT count(*) FROM hidden),
                       favorite_count = c.favorite_count - (SELECT count(*) FROM hidden WHERE is_favorite)
                WHERE c.user_id = \(userID) AND c.id = \(category)
            )
            SELECT id, urls\(selecting) FROM hidden
            """)
        try skipCounters(connection, false)
        return hidden
    }

    /// How a live location of a cascade's category is hidden, as `follow` hides it: under its own
    /// category (the one its last write named), deleted at its own clock; the stamp is set beside.
    private static let hidingAssignments = """
        category_id = COALESCE(l.own_category_id, l.category_id), own_category_id = NULL, hidden = true,
        deleted_at = l.updated_at, version = l.version + 1, changed_at = clock_timestamp()
        """

    /// Where the draft's category shows it: the category named when it is live, else what its
    /// state says (`CategoryGraph`); E007 when the user never had that category. A write that keeps
    /// a live location in the category it is shown in reads no category: a live location's
    /// category is live, and the user's write lock keeps it so.
    static func placement(_ connection: PostgresConnection, userID: String, of draft: LocationDraft) throws -> Placement {
        try placement(connection, userID: userID, category: draft.categoryID, stored: nil)
    }

    /// Where a location whose `category_id` field is `category` is shown (`stored`: the record a
    /// write changes, if any).
    private static func placement(
        _ connection: PostgresConnection, userID: String, category: UUID, stored: Location?
    ) throws -> Placement {
        if let stored, stored.deletedAt == nil, stored.categoryID == category { return .shown(in: category) }
        guard let isLive = try CategoryStore.isLive(connection, userID: userID, id: category) else {
            throw LocifyError(.unknownCategory)
        }
        if isLive { return .shown(in: category) }
        guard let placement = try CategoryGraph.load(connection, userID: userID).placement(of: category) else {
            throw LocifyError(.unknownCategory)
        }
        return placement
    }

    static func insertQuery(
        userID: String, _ draft: LocationDraft, _ placement: Placement, at: Timestamp, createdAt: Timestamp, stamp: Int64
    ) -> PostgresQuery {
        """
        INSERT INTO locations AS l (user_id, id, category_id, own_category_id, hidden, name, name_key, address, description,
                                    search_text, latitude, longitude, is_favorite, image_urls, images_outside_folder,
                                    version, created_at, updated_at, deleted_at, change_seq, changed_at)
        VALUES (\(userID), \(draft.id), \(placement.shownCategory(draft)), \(placement.ownCategory(draft)), \(placement == .hidden),
                \(draft.name), \(TextRules.sortKey(draft.name)), \(draft.address), \(draft.description), \(draft.searchText),
                \(draft.latitude), \(draft.longitude), \(draft.isFavorite), \(draft.imageURLs),
                \(imagesOutsideFolder(draft.imageURLs, userID: userID, id: draft.id)), 1, \(createdAt), \(at),
                \(placement == .hidden ? at : nil), \(stamp), clock_timestamp())
        RETURNING \(unsafeSQL: columns.sql)
        """
    }

    /// The create fast path of `RecordTable`; fails with `CategoryGuard.sqlState` when the
    /// category is not live.
    static func insertIfNewQuery(_ caller: Caller, _ draft: LocationDraft, at: Timestamp, createdAt: Timestamp) -> PostgresQuery {
        """
        WITH account AS (\(UserStore.nextStampIfAdmitted(caller)))
        INSERT INTO locations AS l (user_id, id, category_id, name, name_key, address, description, search_text,
                                    latitude, longitude, is_favorite, image_urls, images_outside_folder, version,
                                    created_at, updated_at, change_seq, changed_at)
        SELECT \(caller.userID), \(draft.id), \(draft.categoryID), \(draft.name), \(TextRules.sortKey(draft.name)),
               \(draft.address), \(draft.description), \(draft.searchText), \(draft.latitude), \(draft.longitude),
               \(draft.isFavorite), \(draft.imageURLs), \(imagesOutsideFolder(draft.imageURLs, userID: caller.userID, id: draft.id)), 1,
               \(createdAt), \(at), account.change_seq, clock_timestamp()
        FROM account
        ON CONFLICT (user_id, id) DO NOTHING
        RETURNING \(unsafeSQL: columns.sql)
        """
    }

    /// The `images_outside_folder` of a row whose photos are `urls` (migrations/0007).
    private static func imagesOutsideFolder(_ urls: [String], userID: String, id: UUID) -> Bool {
        StorageScope.imagesOutsideFolder(urls, userID: userID, id: id)
    }

    static func update(
        _ connection: PostgresConnection, userID: String, _ patch: LocationPatch, setting: Set<LocationField>, clock: Clock,
        over stored: Location, stamp: Int64
    ) throws -> Location {
        let sets = { (field: LocationField) in setting.contains(field) }
        let ownCategory = sets(.categoryID) ? patch.categoryID ?? stored.ownCategoryID : stored.ownCategoryID
        // Where it is shown follows the newest write of its category field: worked out again when
        // that field is set to another category or the record comes back (or is hidden with its
        // category), else kept: a live row's placement is current (a category's delete moves or
        // hides its rows, and `findForWrite` settles a pending cascade first), so a whole write in
        // the same category reads no category row.
        var (shownIn, placedIn, hidden, deletedAt) = (stored.categoryID, stored.placedCategoryID, false, clock.deletedAt)
        let movesCategory = sets(.categoryID) && ownCategory != stored.ownCategoryID
        if clock.isDeleted {
            if sets(.categoryID) { (shownIn, placedIn) = (ownCategory, nil) }
        } else if movesCategory || stored.deletedAt != nil {
            let placement = try placement(connection, userID: userID, category: ownCategory, stored: stored)
            (shownIn, placedIn, hidden) = (placement.shownCategory(ownCategory), placement.ownCategory(ownCategory), placement == .hidden)
            if hidden { deletedAt = clock.updatedAt }
        }
        let setsText = sets(.name) || sets(.address) || sets(.description)
        let searchText = ListingRules.searchText(
            name: sets(.name) ? patch.name ?? stored.name : stored.name,
            address: sets(.address) ? patch.address : stored.address,
            description: sets(.description) ? patch.description : stored.description)
        let imageURLs = patch.imageURLs ?? []
        return try single(
            connection.query(
                """
                UPDATE locations l SET category_id = \(shownIn), own_category_id = \(placedIn), hidden = \(hidden),
                       name = CASE WHEN \(sets(.name)) THEN \(patch.name) ELSE l.name END,
                       name_key = CASE WHEN \(sets(.name)) THEN \(patch.name.map(TextRules.sortKey)) ELSE l.name_key END,
                       address = CASE WHEN \(sets(.address)) THEN \(patch.address) ELSE l.address END,
                       description = CASE WHEN \(sets(.description)) THEN \(patch.description) ELSE l.description END,
                       search_text = CASE WHEN \(setsText) THEN \(searchText) ELSE l.search_text END,
                       latitude = CASE WHEN \(sets(.coordinates)) THEN \(patch.latitude) ELSE l.latitude END,
                       longitude = CASE WHEN \(sets(.coordinates)) THEN \(patch.longitude) ELSE l.longitude END,
                       is_favorite = CASE WHEN \(sets(.isFavorite)) THEN \(patch.isFavorite) ELSE l.is_favorite END,
                       image_urls = CASE WHEN \(sets(.imageURLs)) THEN \(imageURLs) ELSE l.image_urls END,
                       images_outside_folder = CASE WHEN \(sets(.imageURLs))
                           THEN \(imagesOutsideFolder(imageURLs, userID: userID, id: patch.id)) ELSE l.images_outside_folder END,
                       \(clockAssignments("l", clock, deletedAt: deletedAt, stamp: stamp))
                WHERE l.user_id = \(userID) AND l.id = \(patch.id)
                RETURNING \(unsafeSQL: columns.sql)
                """))
    }

    static func tombstoneQuery(userID: String, id: UUID, clock: Clock, stamp: Int64) -> PostgresQuery {
        """
        UPDATE locations l SET deleted_at = \(clock.deletedAt), updated_at = \(clock.updatedAt),
               field_stamps = \(clock.storedStamps), hidden = false, version = version + 1,
               change_seq = \(stamp), changed_at = clock_timestamp()
        WHERE l.user_id = \(userID) AND l.id = \(id)
        RETURNING \(unsafeSQL: columns.sql)
        """
    }

    /// Shows the locations placed in `category`, and in every deleted category whose reassign chain
    /// passes through it, where its new state says (`CategoryGraph`): after it was deleted, deleted
    /// again or came back. Each location that moves, hides or comes back gets version + 1 and the
    /// stamp; its own clock (`updated_at`) stays. A location still shown in a category whose
    /// cascade is pending is left as the tombstone it reads as (the worker hides it at that
    /// cascade's stamp; a write that moves it settles it first, `PendingCascades.settle`). Returns the locations it hid, for the Storage clean-up,
    /// with their image URLs when one may name an object outside the location's own folder
    /// (`images_outside_folder`, migrations/0007); the folder's job covers the others. Counters are kept without the per-row trigger: one recount
    /// of the categories involved (`locify_recount_location_counters`), linear in their locations.
    static func follow(
        _ connection: PostgresConnection, userID: String, category: UUID, stamp: Int64
    ) throws -> [HiddenLocation] {
        let graph = try CategoryGraph.load(connection, userID: userID)
        let owners = graph.dependents(of: category)
        // The categories whose counts can change: the owners, where they show their locations,
        // and where their locations are shown now.
        var involved = Set(owners.map { (graph.placement(of: $0) ?? .hidden).shownCategory($0) } + owners)
        let pending = try CategoryStore.pendingCascades(connection, userID: userID).map(\.category)
        let shownIn = ColumnSet<UUID>(expression: "l.category_id")
        involved.formUnion(
            try connection.query(
                """
                SELECT DISTINCT \(unsafeSQL: shownIn.sql) FROM locations l
                WHERE l.user_id = \(userID) AND l.own_category_id = ANY (\(owners)) AND l.deleted_at IS NULL
                  AND l.category_id <> ALL (\(pending))
                """
            ).map(shownIn.decode))
        var hidden: [HiddenLocation] = []
        var changed = false
        try skipCounters(connection, true)
        for owner in owners {
            let placement = graph.placement(of: owner) ?? .hidden
            let shown = placement.shownCategory(owner)
            let isHidden = placement == .hidden
            // The locations whose own last write named `owner`: live ones shown in it, live ones
            // shown elsewhere, hidden ones (each through its index); those not already so.
            let rows = try connection.query(
                """
                UPDATE locations l SET category_id = \(shown), own_category_id = \(placement.ownCategory(owner)),
                       hidden = \(isHidden), deleted_at = CASE WHEN \(isHidden) THEN l.updated_at END,
                       version = l.version + 1, change_seq = \(stamp), changed_at = clock_timestamp()
                WHERE l.user_id = \(userID)
                  AND ((l.deleted_at IS NULL AND l.own_category_id IS NULL AND l.category_id = \(owner) AND l.category_id <> ALL (\(pending)))
                       OR (l.deleted_at IS NULL AND l.own_category_id = \(owner) AND l.category_id <> ALL (\(pending)))
                       OR (l.hidden AND l.category_id = \(owner)))
                  AND (l.hidden <> \(isHidden) OR l.category_id <> \(shown))
                RETURNING l.id, CASE WHEN l.images_outside_folder IS NOT FALSE THEN l.image_urls END
                """)
            changed = changed || rows.count > 0
            guard isHidden else { continue }
            hidden += try rows.map(decodeHidden)
        }
        // The per-row counter trigger updated a category's row once per location, and each update
        // walks the row's versions made earlier in the transaction: quadratic (20,000 locations:
        // 41 s). Skipped above; the counts are set once from the rows (migrations/0006).
        try skipCounters(connection, false)
        if changed {
            try connection.query("SELECT locify_recount_location_counters(\(userID), \(Array(involved)))")
        }
        return hidden
    }

    /// Whether a live location is shown in `category`: whether a cascade of the live category has
    /// anything to hide (`PendingCascades`).
    static func anyShown(_ connection: PostgresConnection, userID: String, in category: UUID) throws -> Bool {
        !(try connection.query(
            "SELECT 1 FROM locations l WHERE l.user_id = \(userID) AND l.category_id = \(category) AND l.deleted_at IS NULL LIMIT 1"
        ).isEmpty)
    }

    /// A hidden location's id and its image URLs when one may name an object outside its own folder.
    private static func decodeHidden(_ row: PostgresRow) throws(PostgresError) -> HiddenLocation {
        var column = ColumnReader(row)
        return (try column.next(), try column.next([String]?.self) ?? [])
    }

    /// Turns the per-row counter triggers (migrations/0006) off or back on for the rest of the
    /// transaction, for a statement that recounts, or deletes every row, itself.
    static func skipCounters(_ connection: PostgresConnection, _ skip: Bool) throws {
        try connection.query("SELECT set_config('locify.skip_counters', \(skip ? "on" : ""), true)")
    }

    /// Deletes every location of the user (the account's deletion).
    static func deleteAll(_ connection: PostgresConnection, userID: String) throws {
        try connection.query("DELETE FROM locations WHERE user_id = \(userID)")
    }

    /// How a deep page (offset at or beyond `deepOffset`, no text search) is read; such pages also
    /// return the user's stamp, so their boundaries can be remembered (`PageBoundaries`).
    enum DeepRead: Equatable {
        /// With OFFSET from the start of the listing.
        case byOffset
        /// After a remembered boundary row, when the user's stamp is still the one given.
        case from(PageBoundaries.Start)
    }

    /// Makes the transaction's statements planned for their values rather than by a generic plan
    /// of the session (a search's listing, `LocationService.list`).
    static func planForValues(_ connection: PostgresConnection) throws {
        try connection.execute(unsafeSQL: "SET LOCAL plan_cache_mode = force_custom_plan")
    }

    /// Pages from this offset on are read through `PageBoundaries`; shallower ones skip their
    /// offset in the index in microseconds.
    static let deepOffset: Int64 = 400

    /// One page of live locations with its total, gated. Each filter combination is its own
    /// statement text (so each gets its own plan and index); values are bound by interpolation.
    ///
    /// The page is found on ids alone (an index-only scan of the sort's partial index skips the
    /// offset without touching the table) and only its rows are then read. The total does not
    /// depend on the page row, so it is computed once, in an uncorrelated subquery
    /// (bench/RESULTS.md, "Resources at scale").
    static func listQuery(_ caller: Caller, _ query: LocationQuery) -> GatedRead<ListingRow<Location>> {
        let row = listing
        return GatedRead(caller, row, selecting: listStatement(userID: caller.userID, query, deep: nil, selecting: row.sql))
    }

    /// A deep page (`listQuery`) with the user's change stamp and account time
    /// (`PageBoundaries.Stamp`); `.from` reads the page after the boundary row (skipping
    /// `start.skip` rows counted from it) and only when the stamp is still the one remembered,
    /// checked in the same snapshot (else the page is empty).
    static func deepListQuery(
        _ caller: Caller, _ query: LocationQuery, _ deep: DeepRead
    ) -> GatedRead<(stamp: PageBoundaries.Stamp, listing: ListingRow<Location>)> {
        let row = stampColumns.then(listing).map { (stamp: $0.0, listing: $0.1) }
        return GatedRead(caller, row, selecting: listStatement(userID: caller.userID, query, deep: deep, selecting: row.sql))
    }

    /// A deep read's `PageBoundaries.Stamp` of the user row `u`.
    private static let stampColumns = ColumnSet(["u.change_seq", "(extract(epoch FROM u.created_at) * 1000000)::bigint"]) {
        column throws(PostgresError) in
        PageBoundaries.Stamp(changeSeq: try column.next(), account: try column.next())
    }

    /// A listing's row: its total (the subquery `total`) and the location columns.
    private static let listing = columns.listing(total: "total.n")

    /// The filters of a listing on the table's columns.
    private static func filters(_ query: LocationQuery, search: String?) -> PostgresQuery {
        var filters: PostgresQuery = ""
        if let category = query.categoryID { filters = "\(filters) AND category_id = \(category)" }
        if let favorite = query.isFavorite { filters = "\(filters) AND is_favorite = \(favorite)" }
        if let search { filters = "\(filters) AND search_text LIKE \(search)" }
        return filters
    }

    /// The listing statement from its select list on (`selection`, trusted text without binds).
    private static func listStatement(
        userID: String, _ query: LocationQuery, deep: DeepRead?, selecting selection: String
    ) -> PostgresQuery {
        let search = query.search.map { substringPattern(ListingRules.searchKey($0)) }
        let filters = filters(query, search: search)
        var pageFilters = filters
        var offset = query.page.offset
        let order: (String) -> String
        switch query.sort {
        case .createdAt: order = { "\($0)created_at DESC, \($0)id" }
        case .updatedAt: order = { "\($0)updated_at DESC, \($0)id" }
        case .name: order = { "\($0)name_key, \($0)id" }
        }
        if case .from(let start) = deep {
            // The boundary row's sort key, read by primary key in the page's own snapshot.
            let boundary = { (column: String) -> PostgresQuery in
                "(SELECT b.\(unsafeSQL: column) FROM locations b WHERE b.user_id = me.user_id AND b.id = \(start.boundaryID))"
            }
            let after: PostgresQuery
            switch query.sort {
            case .createdAt:
                after =
                    " AND created_at <= \(boundary("created_at")) AND (created_at < \(boundary("created_at")) OR id >= \(start.boundaryID))"
            case .updatedAt:
                after =
                    " AND updated_at <= \(boundary("updated_at")) AND (updated_at < \(boundary("updated_at")) OR id >= \(start.boundaryID))"
            case .name:
                after = " AND (name_key, id) >= (\(boundary("name_key")), \(start.boundaryID))"
            }
            // Refers only to the user row: a one-time filter that skips the page read at once
            // when the stamp has moved on.
            let stamp: PostgresQuery =
                " AND u.change_seq = \(start.stamp.changeSeq) AND (extract(epoch FROM u.created_at) * 1000000)::bigint = \(start.stamp.account)"
            pageFilters = "\(pageFilters)\(after)\(stamp)"
            offset = start.skip
        }
        // A search is planned for its values (LocationService.list), so its page names the user
        // by value (`me.user_id`): the planner then knows how many rows that user has and whether
        // the trigram index or the sort's index finds the page sooner.
        let pageUser = search != nil ? "me.user_id" : "u.id"
        // The user id is bound once, as `me.user_id`. PostgreSQL pulls `me` up, so every
        // `me.user_id` is that one parameter: the total, which names no column of the joined rows,
        // is computed once (an InitPlan), and the plan needs no check that several binds of the id
        // are equal (bench/RESULTS.md, "The one door (issue 37)").
        return """
            \(unsafeSQL: selection)
            FROM (SELECT \(userID)::text AS user_id) me
            JOIN users u ON u.id = me.user_id
            CROSS JOIN LATERAL (SELECT \(totalExpression(query, filters: filters)) AS n) total
            LEFT JOIN LATERAL (
                SELECT loc.* FROM (
                    SELECT id FROM locations
                    WHERE user_id = \(unsafeSQL: pageUser) AND deleted_at IS NULL\(pageFilters) AND \(unsafeSQL: notHiding("u.hiding"))
                    ORDER BY \(unsafeSQL: order(""))
                    LIMIT \(Int64(query.page.size)) OFFSET \(offset)
                ) page
                -- One primary-key lookup per id of the page; OFFSET 0 keeps the planner from
                -- turning it into a join, so even the generic plan never scans the table.
                CROSS JOIN LATERAL (
                    SELECT * FROM locations r WHERE r.user_id = u.id AND r.id = page.id OFFSET 0
                ) loc
            ) l ON true
            ORDER BY \(unsafeSQL: order("l."))
            """
    }

    /// The total of a listing: read from the per-category counters the triggers maintain, except
    /// for a text search, which has to count. Names the user as `me.user_id` (the bound id) rather
    /// than through the joined user row, so it is an uncorrelated subquery that PostgreSQL evaluates
    /// once, not once per row of the page.
    private static func totalExpression(_ query: LocationQuery, filters: PostgresQuery) -> PostgresQuery {
        if query.search != nil {
            return """
                (SELECT count(*) FROM locations JOIN users h ON h.id = locations.user_id
                 WHERE user_id = me.user_id AND deleted_at IS NULL\(filters) AND \(unsafeSQL: notHiding("h.hiding")))
                """
        }
        let counter: String
        switch query.isFavorite {
        case nil: counter = "c.location_count"
        case true?: counter = "c.favorite_count"
        case false?: counter = "c.location_count - c.favorite_count"
        }
        guard let category = query.categoryID else {
            // A user's total is the sum over their live categories (every live location is in one).
            return """
                (SELECT COALESCE(sum(\(unsafeSQL: counter)), 0)::bigint FROM categories c
                 WHERE c.user_id = me.user_id AND c.deleted_at IS NULL)
                """
        }
        return """
            COALESCE((SELECT \(unsafeSQL: counter) FROM categories c
                      WHERE c.user_id = me.user_id AND c.id = \(category) AND c.deleted_at IS NULL), 0)
            """
    }

    /// The condition that a location row is not shown in a category whose cascade is pending
    /// (`PendingCascades`), given the user's list (`hiding`, the column of a joined user row): such
    /// locations read as deleted. The listing's indexes include `category_id`, so the index-only
    /// scan that finds a page evaluates it.
    static func notHiding(_ hiding: String) -> String { "category_id <> ALL (\(hiding))" }

    /// A LIKE pattern matching any text that contains `text` literally: `%`, `_` and the escape
    /// character `\` (LIKE's default) are escaped, then the whole is wrapped in `%...%`. Matching
    /// the lower-cased `search_text` with it is the substring test `q` means (openapi.yaml),
    /// and the form the trigram index `locations_live_search` serves.
    static func substringPattern(_ text: String) -> String {
        var pattern = "%"
        pattern.unicodeScalars.reserveCapacity(text.unicodeScalars.count + 2)
        for scalar in text.unicodeScalars {
            if scalar == "%" || scalar == "_" || scalar == "\\" { pattern.unicodeScalars.append("\\") }
            pattern.unicodeScalars.append(scalar)
        }
        pattern.unicodeScalars.append("%")
        return pattern
    }

    static func getQuery(_ caller: Caller, id: UUID) -> GatedRead<Location?> {
        GatedRead(
            caller, columns.orNil,
            """
            FROM users u
            LEFT JOIN locations l ON l.user_id = u.id AND l.id = \(id) AND l.deleted_at IS NULL AND l.\(unsafeSQL: notHiding("u.hiding"))
            WHERE u.id = \(caller.userID)
            """)
    }
}

extension LocationDraft {
    /// Lower-cased name, address and description for the `q` filter (`ListingRules`, shared with
    /// LocifyClient's offline search).
    var searchText: String { ListingRules.searchText(name: name, address: address, description: description) }
}
