// swift-tools-version:6.0
import PackageDescription

/// Swift 6 language mode everywhere, with explicit Sendable conformances required. Release builds
/// optimize across modules, so generic code of a lower target (row decoding, the JSON writer) is
/// specialized where it is called instead of looking up type metadata at run time.
let strictSettings: [SwiftSetting] = [
    .unsafeFlags(["-require-explicit-sendable"]),
    .unsafeFlags(["-cross-module-optimization"], .when(configuration: .release)),
]

let package = Package(
    name: "locify-server",
    // The server targets are Linux-only (Glibc, epoll); the platforms are for LocifyClient.
    platforms: [.macOS(.v14), .iOS(.v17)],
    products: [
        .executable(name: "locify-server", targets: ["locify-server"]),
        .library(name: "LocifyClient", targets: ["LocifyClient"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        // LocifyClient's SQLiteStore (system SQLite: Debian's libsqlite3-dev on Linux).
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
    ],
    targets: [
        .systemLibrary(
            name: "CLibPQ",
            pkgConfig: "libpq",
            providers: [.apt(["libpq-dev"])]
        ),
        .systemLibrary(
            name: "CLibCrypto",
            pkgConfig: "libcrypto",
            providers: [.apt(["libssl-dev"])]
        ),
        // libssl, for the TLS of the server's own HTTPS client (HTTPClient's SocketHTTPTransport).
        .systemLibrary(
            name: "CLibSSL",
            pkgConfig: "libssl",
            providers: [.apt(["libssl-dev"])]
        ),
        .systemLibrary(name: "CLinux"),
        // The rules both ends of the API share (issue 22): the millisecond `Timestamp` and RFC 3339,
        // last write wins, the record rules, the error-code table. The standard library only and no
        // unsafe flags, so that it builds for iOS inside `LocifyClient`.
        .target(name: "LocifyRules"),
        // The primitives several server targets share (the wall clock, threads, Duration
        // conversions, hex digits, base64url): on the standard library, Glibc and `LocifyRules`.
        .target(name: "Primitives", dependencies: ["LocifyRules"], swiftSettings: strictSettings),
        .target(
            name: "HTTPServer",
            dependencies: ["CLinux", "Primitives", .product(name: "Logging", package: "swift-log")],
            swiftSettings: strictSettings
        ),
        .target(
            name: "Postgres",
            dependencies: ["CLibPQ", "LocifyRules", "Primitives", .product(name: "Logging", package: "swift-log")],
            swiftSettings: strictSettings
        ),
        .target(
            name: "JSON",
            dependencies: ["Primitives"],
            swiftSettings: strictSettings
        ),
        // The server's one HTTP client (calls to Google, `locify-server healthcheck`): sockets, DNS
        // within the deadline, TLS through libssl.
        .target(
            name: "HTTPClient",
            dependencies: ["CLibSSL", "Primitives"],
            swiftSettings: strictSettings
        ),
        .target(
            name: "FirebaseAdmin",
            dependencies: ["CLibCrypto", "HTTPClient", "JSON", "LocifyRules", "Primitives", .product(name: "Logging", package: "swift-log")],
            swiftSettings: strictSettings
        ),
        .target(
            name: "Locify",
            dependencies: ["Postgres", "LocifyRules", "Primitives", .product(name: "Logging", package: "swift-log")],
            swiftSettings: strictSettings
        ),
        // Live changes across instances: the requests waiting for each user's next change, woken
        // through PostgreSQL's LISTEN/NOTIFY when the domain announces a commit of that user's.
        .target(
            name: "ChangeNotifications",
            dependencies: ["Postgres", .product(name: "Logging", package: "swift-log")],
            swiftSettings: strictSettings
        ),
        // The server's background work: the clean-up worker and its Google executor, the tombstone
        // purge, and the periodic thread that runs them.
        .target(
            name: "LocifyJobs",
            dependencies: ["Locify", "FirebaseAdmin", "LocifyRules", "Postgres", "Primitives", .product(name: "Logging", package: "swift-log")],
            swiftSettings: strictSettings
        ),
        .target(
            name: "LocifyAPI",
            dependencies: [
                "HTTPServer", "Locify", "ChangeNotifications", "LocifyRules", "Postgres", "FirebaseAdmin", "JSON", "Primitives",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strictSettings
        ),
        // The composition root: `buildApplication` (the database, authentication, jobs and API
        // builders) and the running `Application`, and the JSON log handler the executable installs.
        .target(
            name: "LocifyServer",
            dependencies: [
                "LocifyAPI", "LocifyJobs", "Locify", "ChangeNotifications", "HTTPServer", "HTTPClient", "FirebaseAdmin", "JSON", "Postgres", "LocifyRules",
                "Primitives",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strictSettings
        ),
        .executableTarget(
            name: "locify-server",
            dependencies: ["LocifyServer", "LocifyAPI", "HTTPClient", "Postgres", "Primitives", "CLinux", .product(name: "Logging", package: "swift-log")],
            swiftSettings: strictSettings,
            // Release builds link with lld and packed relative relocations (DT_RELR, glibc 2.36+):
            // the position-independent binary's 74,000 relative relocations take 14 KB instead of a
            // 1.8 MB table that the loader reads, and keeps resident, at every start.
            linkerSettings: [
                .unsafeFlags(["-use-ld=lld", "-Xlinker", "-z", "-Xlinker", "pack-relative-relocs"], .when(configuration: .release))
            ]
        ),
        // Test helpers in three layers, so a unit test links only what it uses: `TestSupport` (threads,
        // clocks, seeded randomness, raw HTTP clients and servers, test keys and tokens, the
        // in-process fake Google), `TestSupportDatabase` (throwaway PostgreSQL clusters and migrated
        // databases), `TestSupportServer` (whole Locify servers in-process or as processes, fake
        // Google over a socket, write load).
        .target(
            name: "TestSupport",
            dependencies: [
                "HTTPServer", "HTTPClient", "FirebaseAdmin", "JSON", "LocifyRules", "Primitives", "CLibCrypto", .product(name: "Logging", package: "swift-log"),
            ],
            path: "Tests/TestSupport",
            swiftSettings: strictSettings
        ),
        .target(
            name: "TestSupportDatabase",
            dependencies: ["TestSupport", "Postgres", "CLibPQ", .product(name: "Logging", package: "swift-log")],
            path: "Tests/TestSupportDatabase",
            swiftSettings: strictSettings
        ),
        .target(
            name: "TestSupportServer",
            dependencies: [
                "TestSupport", "TestSupportDatabase", "HTTPServer", "HTTPClient", "Postgres", "FirebaseAdmin", "Locify", "LocifyAPI", "LocifyServer",
                "JSON",
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Tests/TestSupportServer",
            swiftSettings: strictSettings
        ),
        // Fuzz targets (libFuzzer). `scripts/fuzz` builds them with `-sanitize=fuzzer,address
        // -DFUZZING` into `.build-fuzz`; a normal build makes each a replayer of its committed
        // corpus and regression inputs (`Fuzz/corpus/`, `Fuzz/regressions/`). See RELIABILITY.md.
        .target(name: "FuzzSupport", path: "Fuzz/FuzzSupport", swiftSettings: strictSettings),
        .executableTarget(
            name: "FuzzHTTPRequestParser", dependencies: ["HTTPServer", "FuzzSupport"],
            path: "Fuzz/FuzzHTTPRequestParser", swiftSettings: strictSettings),
        .executableTarget(
            name: "FuzzIDToken",
            dependencies: ["FirebaseAdmin", "HTTPClient", "JSON", "Primitives", "TestSupport", "FuzzSupport", .product(name: "Logging", package: "swift-log")],
            path: "Fuzz/FuzzIDToken", swiftSettings: strictSettings),
        .executableTarget(
            name: "FuzzRequestDecoding", dependencies: ["LocifyAPI", "Locify", "LocifyRules", "JSON", "Primitives", "FuzzSupport"],
            path: "Fuzz/FuzzRequestDecoding", swiftSettings: strictSettings),
        // TestSupport for its seeded randomness (the property tests of FieldLastWriteWins).
        .testTarget(name: "LocifyRulesTests", dependencies: ["LocifyRules", "TestSupport"], swiftSettings: strictSettings),
        .testTarget(name: "PrimitivesTests", dependencies: ["LocifyRules", "Primitives"], swiftSettings: strictSettings),
        .testTarget(name: "JSONTests", dependencies: ["JSON"], swiftSettings: strictSettings),
        .testTarget(
            name: "HTTPServerTests", dependencies: ["HTTPServer", "TestSupport", .product(name: "Logging", package: "swift-log")],
            swiftSettings: strictSettings),
        .testTarget(
            name: "PostgresTests", dependencies: ["Postgres", "LocifyRules", "Primitives", "TestSupport", "TestSupportDatabase"],
            swiftSettings: strictSettings),
        .testTarget(
            name: "HTTPClientTests", dependencies: ["HTTPClient", "Primitives", "TestSupport"], swiftSettings: strictSettings),
        .testTarget(
            name: "FirebaseAdminTests",
            dependencies: ["FirebaseAdmin", "HTTPClient", "JSON", "LocifyRules", "Primitives", "TestSupport", .product(name: "Logging", package: "swift-log")],
            swiftSettings: strictSettings),
        .testTarget(
            name: "LocifyTests",
            dependencies: [
                "Locify", "LocifyJobs", "LocifyRules", "Postgres", "FirebaseAdmin", "JSON", "Primitives", "TestSupport", "TestSupportDatabase",
            ],
            swiftSettings: strictSettings),
        .testTarget(
            name: "LocifyAPITests",
            dependencies: [
                "LocifyAPI", "LocifyServer", "Locify", "LocifyJobs", "LocifyRules", "HTTPServer", "Postgres", "FirebaseAdmin", "JSON",
                "Primitives", "TestSupport", "TestSupportDatabase", "TestSupportServer", .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strictSettings),
        // bench/json/run: the JSON target against Foundation's JSON, built in release mode into `.build-bench`.
        .executableTarget(
            name: "JSONBenchmark", dependencies: ["JSON"], path: "bench/json", exclude: ["run"], swiftSettings: strictSettings),
        // The Swift client apps use (issue 17): Foundation, the rules it shares with the server
        // (LocifyRules), GRDB (its SQLiteStore) and swift-log (its logging hook), and no unsafe
        // flags, so that an app can depend on this package's `LocifyClient` product.
        .target(
            name: "LocifyClient",
            dependencies: ["LocifyRules", .product(name: "GRDB", package: "GRDB.swift"), .product(name: "Logging", package: "swift-log")]),
        // bench/client/run: LocifyClient on the 100,000-location account of bench/scale.
        .executableTarget(
            name: "LocifyClientBenchmark", dependencies: ["LocifyClient"], path: "bench/client", exclude: ["run"],
            swiftSettings: strictSettings),
        // bench/live-client/run: LocifyClient's live mode, from one device's sync() to the others' stores.
        .executableTarget(
            name: "LiveSyncBenchmark", dependencies: ["LocifyClient"], path: "bench/live-client", exclude: ["run"],
            swiftSettings: strictSettings),
        // The child process LocifyClientTests' crash test kills with SIGKILL while it edits and syncs.
        .executableTarget(name: "LocifyClientCrashChild", dependencies: ["LocifyClient"], path: "Tests/LocifyClientCrashChild"),
        .testTarget(
            name: "LocifyClientTests",
            dependencies: [
                "LocifyClient", "TestSupport", "TestSupportServer", "LocifyAPI", "HTTPServer", .product(name: "GRDB", package: "GRDB.swift"),
            ],
            swiftSettings: strictSettings),
        // The sample (issue 26 item 7): an app's places screen on LocifyClient (`LocifyClientSample`),
        // the command-line program `locify-sample` that runs it against scripts/dev, and its test.
        .target(name: "LocifyClientSample", dependencies: ["LocifyClient"], swiftSettings: strictSettings),
        .executableTarget(name: "locify-sample", dependencies: ["LocifyClient", "LocifyClientSample"], swiftSettings: strictSettings),
        .testTarget(
            name: "LocifyClientSampleTests", dependencies: ["LocifyClientSample", "LocifyClient", "TestSupport", "TestSupportServer"],
            swiftSettings: strictSettings),
    ],
    swiftLanguageModes: [.v6]
)
