import LocifyRules
import Logging
import Postgres
import Primitives

/// The domain's settings that come from the server configuration.
public struct LocifySettings: Sendable {
    /// The Storage bucket clean-up jobs may delete from.
    public var storageBucket: String
    /// Tombstone retention and cursor lifetime, seconds. Default 30 days.
    public var tombstoneRetentionSeconds: Int64 = 2_592_000
    /// Most changes in one sync push. Default 50.
    public var maxPushChanges: Int = 50

    /// Settings for clean-ups in `storageBucket`, with the default retention and push limit.
    public init(storageBucket: String) {
        self.storageBucket = storageBucket
    }
}

/// Every domain service, wired to one database pool and clock.
public struct LocifyServices: Sendable {
    /// Category listing, reads, writes and deletes.
    public let categories: CategoryService
    /// Location listing, reads, writes and deletes.
    public let locations: LocationService
    /// Sync push (through the two services above) and pull of the change feed.
    public let sync: SyncService
    /// The caller's profile, rename and account deletion.
    public let users: UserService
    /// Storage clean-ups skipped because the object name cannot exist (shared with the worker).
    public let cleanupSkips: CleanupSkips
    /// The door every service reaches a user's data through; `admit` runs the account gate alone.
    public let accounts: Accounts
    /// The settling of pending cascades, for the cascade worker (`CascadeWorker`).
    public let cascades: PendingCascades

    /// The services on `pool` with `settings`; `clock` is the wall clock every write stamps (the
    /// composition root's; tests inject one), `cleanupSkips` is shared with the clean-up worker so
    /// `/metrics` sees one count, and `announce` hears, after the commit, of every user whose data
    /// a request changed (`ChangeAnnouncer`).
    public init(
        pool: ConnectionPool, settings: LocifySettings, clock: WallClock = .system,
        cleanupSkips: CleanupSkips = CleanupSkips(logger: Logger(label: "locify.cleanup")), announce: ChangeAnnouncer? = nil
    ) {
        let storage = StorageScope(bucket: settings.storageBucket, skips: cleanupSkips)
        cascades = PendingCascades(storage: storage)
        let accounts = Accounts(pool: pool, now: { clock.now() }, announce: announce, cascades: cascades)
        self.accounts = accounts
        self.cleanupSkips = cleanupSkips
        categories = CategoryService(accounts: accounts, storage: storage)
        locations = LocationService(accounts: accounts)
        sync = SyncService(
            accounts: accounts, categories: categories, locations: locations,
            retentionSeconds: settings.tombstoneRetentionSeconds, maxPushChanges: settings.maxPushChanges)
        users = UserService(accounts: accounts)
    }
}
