import FirebaseAdmin
import FoundationEssentials
import Primitives

/// Everything the server reads from its environment (openapi.yaml), validated at start.
public struct Configuration: Sendable {
    /// Listen address. Default `127.0.0.1`.
    public var host: String = "127.0.0.1"
    /// Listen port. Default 8080; 0 picks a free port (tests).
    public var port: Int = 8080
    /// libpq connection string or `postgres://` URI. Required.
    public var databaseURL: String
    /// Connections in the database pool. Default 2 x cores.
    public var databasePoolSize: Int = 2 * ProcessInfo.processInfo.activeProcessorCount
    /// Firebase project id: the `aud`/`iss` of accepted tokens. Required.
    public var firebaseProjectID: String
    /// Bucket whose objects the clean-up jobs may delete. Default `<project id>.appspot.com`.
    public var storageBucket: String
    /// Service-account key file for Storage and Auth admin calls. Default none (jobs wait).
    public var googleApplicationCredentials: String?
    /// Where ID-token certificates are fetched. Default Google's securetoken x509 URL.
    public var idTokenCertsURL: String = Configuration.googleCertsURL
    /// Cloud Storage JSON API base. Default `https://storage.googleapis.com`.
    public var storageAPIURL: String = "https://storage.googleapis.com"
    /// Identity Toolkit API base. Default `https://identitytoolkit.googleapis.com`.
    public var identityAPIURL: String = "https://identitytoolkit.googleapis.com"
    /// `host:port` of the Firebase Auth emulator: accept its unsigned tokens. Default unset.
    public var authEmulatorHost: String?
    /// `host:port` of the Firebase Storage emulator. Default unset.
    public var storageEmulatorHost: String?
    /// Whether Auth emulator mode may run with a project id not starting with `demo-`
    /// (`LOCIFY_ALLOW_EMULATOR_WITH_REAL_PROJECT=1`). Default false.
    public var allowEmulatorWithRealProject = false
    /// Per-user token bucket refill, requests per second; 0 disables rate limiting. Default 20.
    public var rateLimitPerSecond: Double = 20
    /// Per-user token bucket size. Default 100.
    public var rateLimitBurst: Double = 100
    /// Per-client-address token bucket refill, per second, charged by requests refused for
    /// authentication (401) or routing (404/405 of the route table); 0 disables it. Default 10.
    public var addressRateLimitPerSecond: Double = 10
    /// Per-client-address token bucket size; 0 disables it. Default 100.
    public var addressRateLimitBurst: Double = 100
    /// Tombstone retention and cursor lifetime, seconds. Default 2,592,000 (30 days).
    public var tombstoneRetentionSeconds: Int = 2_592_000
    /// Seconds between tombstone purges. Default 3600.
    public var tombstonePurgeIntervalSeconds: Int = 3600
    /// Where migrations are read from. Default `migrations` (relative to the working directory).
    public var migrationsDirectory: String = "migrations"
    /// Seconds in-flight requests may take to finish after SIGTERM. Default 10.
    public var shutdownGraceSeconds: Int = 10
    /// Seconds the server keeps serving after SIGTERM, with `/health/ready` answering 503, before
    /// it stops accepting: time for a load balancer's health check to stop sending it requests.
    /// Default 0 (stop accepting at once).
    public var shutdownDelaySeconds: Int = 0
    /// Seconds between hand-backs of freed heap memory to the kernel (`malloc_trim`), so an idle
    /// server shrinks back after a burst; 0 disables it. Default 1.
    public var memoryTrimIntervalSeconds: Int = 1
    /// Open client connections; at the limit the longest-idle ones are closed to admit waiting
    /// clients. Nil (the default): `defaultMaxConnections`, or as many as the open-file hard
    /// limit allows when it is lower (with a warning); a value the operator set that the limit
    /// cannot cover refuses the start instead.
    public var maxConnections: Int?
    /// The connections allowed when `maxConnections` is not set and the open-file limit allows.
    public static let defaultMaxConnections = 10_000
    /// Open connections from one client address (IPv4 address or IPv6 /64); 0 turns the limit
    /// off. Default 256.
    public var maxConnectionsPerAddress: Int = 256
    /// Server-wide budget for request bodies held in memory, bytes; a body that does not fit is
    /// answered 503 S003 with `Retry-After`. Default 268,435,456 (256 MiB).
    public var maxBufferedBodyBytes: Int = 268_435_456
    /// The share of that budget one user (or, for a body not tied to a user, one client address)
    /// holds at most; past it, 429 S001. Default 16,777,216 (16 MiB).
    public var maxBufferedBodyBytesPerClient: Int = 16_777_216
    /// The slowest a request body may arrive, bytes per second averaged from its admission, once
    /// 10 s have passed; slower: 408. 0 turns the check off. Default 1024.
    public var minBodyBytesPerSecond: Int = 1024
    /// Server-wide budget for pipelined input and queued responses connections hold, bytes.
    /// Default 67,108,864 (64 MiB).
    public var maxBufferedConnectionBytes: Int = 67_108_864
    /// Allowance on `exp`/`iat`/`auth_time`, seconds (0-300). Default 60.
    public var tokenClockSkewSeconds: Int = 60
    /// `trace`, `debug`, `info`, `notice`, `warning`, `error` or `critical`. Default `info`.
    public var logLevel: String = "info"
    /// Most changes in one sync push. Default 50.
    public var maxPushChanges: Int = 50
    /// The longest wait of a long-poll pull (`GET /v1/sync/changes?wait=`), seconds, 0-60; 0 turns
    /// long-poll off (`wait` is then ignored). Default 60.
    public var maxWaitSeconds: Int = 60
    /// Most pulls of one user waiting at once; more get 429 S001. Default 10.
    public var maxWaitsPerUser: Int = 10

    /// Google's endpoint of the certificates that sign Firebase ID tokens: the default of
    /// `idTokenCertsURL` (`LOCIFY_ID_TOKEN_CERTS_URL`).
    public static let googleCertsURL =
        "https://www.googleapis.com/robot/v1/metadata/x509/securetoken@system.gserviceaccount.com"

    /// A configuration with the required values and every default.
    public init(databaseURL: String, firebaseProjectID: String) {
        self.databaseURL = databaseURL
        self.firebaseProjectID = firebaseProjectID
        self.storageBucket = "\(firebaseProjectID).appspot.com"
    }
}

/// A missing or invalid environment value, named so the operator can fix it.
public struct ConfigurationError: Error, Sendable, CustomStringConvertible {
    /// The environment variable at fault, e.g. `DATABASE_URL`.
    public var variable: String
    /// What is wrong with its value, e.g. `is required but not set`.
    public var problem: String

    /// `variable`'s value is wrong as `problem` says.
    public init(variable: String, problem: String) {
        self.variable = variable
        self.problem = problem
    }

    /// `VARIABLE: problem`, as the server prints it on standard error before exiting.
    public var description: String { "\(variable): \(problem)" }
}

extension Configuration {
    /// Reads and validates the environment (openapi.yaml).
    public init(environment: [String: String]) throws(ConfigurationError) {
        let env = Environment(values: environment)
        self.init(
            databaseURL: try env.required("DATABASE_URL"),
            firebaseProjectID: try env.required("FIREBASE_PROJECT_ID"))
        host = env.string("HOST") ?? host
        port = try env.int("PORT", in: 0...65535) ?? port
        databasePoolSize = try env.int("DB_POOL_SIZE", in: 1...1000) ?? databasePoolSize
        storageBucket = env.string("FIREBASE_STORAGE_BUCKET") ?? storageBucket
        googleApplicationCredentials = env.string("GOOGLE_APPLICATION_CREDENTIALS")
        idTokenCertsURL = try env.url("LOCIFY_ID_TOKEN_CERTS_URL") ?? idTokenCertsURL
        storageAPIURL = try env.url("LOCIFY_STORAGE_API_URL") ?? storageAPIURL
        identityAPIURL = try env.url("LOCIFY_IDENTITY_API_URL") ?? identityAPIURL
        authEmulatorHost = try env.hostPort("FIREBASE_AUTH_EMULATOR_HOST")
        storageEmulatorHost = try env.hostPort("FIREBASE_STORAGE_EMULATOR_HOST")
        allowEmulatorWithRealProject = try env.flag("LOCIFY_ALLOW_EMULATOR_WITH_REAL_PROJECT") ?? allowEmulatorWithRealProject
        rateLimitPerSecond = try env.bucketSetting("LOCIFY_RATE_LIMIT_PER_SECOND", from: Self.minimumRate) ?? rateLimitPerSecond
        rateLimitBurst = try env.bucketSetting("LOCIFY_RATE_LIMIT_BURST", from: 1) ?? rateLimitBurst
        addressRateLimitPerSecond =
            try env.bucketSetting("LOCIFY_ADDRESS_RATE_LIMIT_PER_SECOND", from: Self.minimumRate) ?? addressRateLimitPerSecond
        addressRateLimitBurst = try env.bucketSetting("LOCIFY_ADDRESS_RATE_LIMIT_BURST", from: 1) ?? addressRateLimitBurst
        tombstoneRetentionSeconds =
            try env.int("LOCIFY_TOMBSTONE_RETENTION_SECONDS", in: 1...Int(Int32.max)) ?? tombstoneRetentionSeconds
        tombstonePurgeIntervalSeconds =
            try env.int("LOCIFY_TOMBSTONE_PURGE_INTERVAL_SECONDS", in: 1...Int(Int32.max)) ?? tombstonePurgeIntervalSeconds
        migrationsDirectory = env.string("LOCIFY_MIGRATIONS_DIR") ?? migrationsDirectory
        shutdownGraceSeconds = try env.int("LOCIFY_SHUTDOWN_GRACE_SECONDS", in: 0...3600) ?? shutdownGraceSeconds
        shutdownDelaySeconds = try env.int("LOCIFY_SHUTDOWN_DELAY_SECONDS", in: 0...300) ?? shutdownDelaySeconds
        memoryTrimIntervalSeconds =
            try env.int("LOCIFY_MEMORY_TRIM_INTERVAL_SECONDS", in: 0...3600) ?? memoryTrimIntervalSeconds
        maxConnections = try env.int("LOCIFY_MAX_CONNECTIONS", in: 1...1_000_000) ?? maxConnections
        maxConnectionsPerAddress =
            try env.int("LOCIFY_MAX_CONNECTIONS_PER_ADDRESS", in: 0...1_000_000) ?? maxConnectionsPerAddress
        maxBufferedBodyBytes =
            try env.int("LOCIFY_MAX_BUFFERED_BODY_BYTES", in: 2_097_152...(1 << 40)) ?? maxBufferedBodyBytes
        maxBufferedBodyBytesPerClient =
            try env.int("LOCIFY_MAX_BUFFERED_BODY_BYTES_PER_CLIENT", in: 2_097_152...(1 << 40)) ?? maxBufferedBodyBytesPerClient
        minBodyBytesPerSecond = try env.int("LOCIFY_MIN_BODY_BYTES_PER_SECOND", in: 0...(1 << 30)) ?? minBodyBytesPerSecond
        maxBufferedConnectionBytes =
            try env.int("LOCIFY_MAX_BUFFERED_CONNECTION_BYTES", in: 65_536...(1 << 40)) ?? maxBufferedConnectionBytes
        tokenClockSkewSeconds = try env.int("LOCIFY_TOKEN_CLOCK_SKEW_SECONDS", in: 0...300) ?? tokenClockSkewSeconds
        maxPushChanges = try env.int("LOCIFY_MAX_PUSH_CHANGES", in: 1...10_000) ?? maxPushChanges
        maxWaitSeconds = try env.int("LOCIFY_MAX_WAIT_SECONDS", in: 0...60) ?? maxWaitSeconds
        maxWaitsPerUser = try env.int("LOCIFY_MAX_WAITS_PER_USER", in: 1...1000) ?? maxWaitsPerUser
        if let level = env.string("LOG_LEVEL") {
            guard Configuration.logLevels.contains(level.lowercased()) else {
                throw ConfigurationError(
                    variable: "LOG_LEVEL", problem: "must be one of \(Configuration.logLevels.joined(separator: ", "))")
            }
            logLevel = level.lowercased()
        }
    }

    static let logLevels = ["trace", "debug", "info", "notice", "warning", "error", "critical"]

    /// The smallest rate a token bucket may refill at, per second (one token in about 17
    /// minutes): smaller ones are mistakes, and their `Retry-After` would be astronomical.
    static let minimumRate = 0.001

    /// Refuses the combinations that would let unsigned emulator tokens reach production data
    /// (Firebase's convention: emulator-only projects are named `demo-*`): Auth emulator mode
    /// with another project id, unless explicitly allowed, and Auth emulator mode with a real
    /// service account for Storage, whatever is allowed. The Storage emulator alone follows the
    /// same project rule: with it, users' files are never deleted from the real bucket.
    public func validateEmulatorSafety() throws(ConfigurationError) {
        if storageEmulatorHost != nil && !firebaseProjectID.hasPrefix("demo-") && !allowEmulatorWithRealProject {
            throw ConfigurationError(
                variable: "FIREBASE_STORAGE_EMULATOR_HOST",
                problem:
                    "the Storage emulator would receive the deletions of users' files instead of the real bucket, so it needs an emulator-only project id starting with \"demo-\" (FIREBASE_PROJECT_ID is \"\(firebaseProjectID)\"); refusing to start (LOCIFY_ALLOW_EMULATOR_WITH_REAL_PROJECT=1 overrides)"
            )
        }
        guard authEmulatorHost != nil else { return }
        if !firebaseProjectID.hasPrefix("demo-") && !allowEmulatorWithRealProject {
            throw ConfigurationError(
                variable: "FIREBASE_AUTH_EMULATOR_HOST",
                problem:
                    "Auth emulator mode accepts unsigned tokens, so it needs an emulator-only project id starting with \"demo-\" (FIREBASE_PROJECT_ID is \"\(firebaseProjectID)\"); refusing to start (LOCIFY_ALLOW_EMULATOR_WITH_REAL_PROJECT=1 overrides)"
            )
        }
        if googleApplicationCredentials != nil && storageEmulatorHost == nil {
            throw ConfigurationError(
                variable: "FIREBASE_AUTH_EMULATOR_HOST",
                problem:
                    "Auth emulator mode cannot be combined with real Google credentials for Storage (GOOGLE_APPLICATION_CREDENTIALS without FIREBASE_STORAGE_EMULATOR_HOST): forged tokens could delete real objects; refusing to start"
            )
        }
    }
}

/// Typed access to environment variables; empty values count as unset.
private struct Environment {
    let values: [String: String]

    func string(_ name: String) -> String? {
        guard let value = values[name]?.trimmingWhitespaces(), !value.isEmpty else { return nil }
        return value
    }

    func required(_ name: String) throws(ConfigurationError) -> String {
        guard let value = string(name) else { throw ConfigurationError(variable: name, problem: "is required but not set") }
        return value
    }

    func int(_ name: String, in range: ClosedRange<Int>) throws(ConfigurationError) -> Int? {
        guard let text = string(name) else { return nil }
        guard let value = Int(text), range.contains(value) else {
            throw ConfigurationError(
                variable: name, problem: "must be an integer from \(range.lowerBound) to \(range.upperBound), got \"\(text)\"")
        }
        return value
    }

    /// A token bucket's rate or size: 0 (off) or a number from `minimum` to 1,000,000.
    func bucketSetting(_ name: String, from minimum: Double) throws(ConfigurationError) -> Double? {
        guard let text = string(name) else { return nil }
        guard let value = Double(text), value == 0 || (minimum...1_000_000).contains(value) else {
            throw ConfigurationError(
                variable: name, problem: "must be 0 (off) or a number from \(minimum) to 1000000, got \"\(text)\"")
        }
        return value
    }

    /// `1` (true) or `0` (false).
    func flag(_ name: String) throws(ConfigurationError) -> Bool? {
        guard let text = string(name) else { return nil }
        switch text {
        case "1": return true
        case "0": return false
        default: throw ConfigurationError(variable: name, problem: "must be 1 or 0, got \"\(text)\"")
        }
    }

    /// A Google endpoint: `https://` (tokens, keys and admin calls travel over it), or plain
    /// `http://` only when the host is loopback (local fakes and emulators).
    func url(_ name: String) throws(ConfigurationError) -> String? {
        guard let text = string(name) else { return nil }
        guard let url = URL(string: text), let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https",
            let host = url.host, !host.isEmpty
        else {
            throw ConfigurationError(variable: name, problem: "must be an https URL, got \"\(text)\"")
        }
        guard scheme == "https" || GoogleEndpoint.isLoopback(host: host) else {
            throw ConfigurationError(
                variable: name,
                problem: "must be an https URL (plain http is allowed only for a loopback host such as 127.0.0.1), got \"\(text)\"")
        }
        return text
    }

    /// `host:port` without a scheme, as the Firebase emulator variables are written.
    func hostPort(_ name: String) throws(ConfigurationError) -> String? {
        guard let text = string(name) else { return nil }
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2, !parts[0].isEmpty, let port = Int(parts[1]), (1...65535).contains(port) else {
            throw ConfigurationError(variable: name, problem: "must be host:port without a scheme, got \"\(text)\"")
        }
        return text
    }
}
