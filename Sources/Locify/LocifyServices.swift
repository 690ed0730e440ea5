import Logging
import Postgres

/// The domain's settings that come from the server configuration.
public struct LocifySettings: Sendable {
    /// The Storage bucket clean-up jobs may delete from.
    public var storageBucket: String
    /// Tombstone retention and cursor lifetime, seconds. Default 30 days.
    public var tombstoneRetentionSeconds: Int64 = 2_592_000
    /// Most changes in one sync push. Default 50.
    public var maxPushChanges: Int = 50

    public init(storageBucket: String) {
        self.storageBucket = storageBucket
    }
}

/// Every domain service, wired to one database pool and clock.
public struct LocifyServices: Sendable {
    public let categories: CategoryService
    public let locations: LocationService
    public let sync: SyncService
    public let users: UserService
    /// Storage clean-ups skipped because the object name cannot exist (shared with the worker).
    public let cleanupSkips: CleanupSkips

    public init(
        pool: ConnectionPool, settings: LocifySettings, now: @escaping @Sendable () -> Timestamp = Timestamp.now,
        cleanupSkips: CleanupSkips = CleanupSkips(logger: Logger(label: "locify.cleanup"))
    ) {
        self.cleanupSkips = cleanupSkips
        categories = CategoryService(
            pool: pool, storage: StorageScope(bucket: settings.storageBucket, skips: cleanupSkips), now: now)
        locations = LocationService(pool: pool, now: now)
        sync = SyncService(
            pool: pool, categories: categories, locations: locations,
            retentionSeconds: settings.tombstoneRetentionSeconds, maxPushChanges: settings.maxPushChanges)
        users = UserService(pool: pool, now: now)
    }
}
