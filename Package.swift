// swift-tools-version:6.0
import PackageDescription

/// Swift 6 language mode everywhere, with explicit Sendable conformances required.
let strictSettings: [SwiftSetting] = [
    .unsafeFlags(["-require-explicit-sendable"])
]

let package = Package(
    name: "locify-server",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "locify-server", targets: ["locify-server"])
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2")
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
        .systemLibrary(name: "CLinux"),
        .target(
            name: "HTTPServer",
            dependencies: ["CLinux", .product(name: "Logging", package: "swift-log")],
            swiftSettings: strictSettings
        ),
        .target(
            name: "Postgres",
            dependencies: ["CLibPQ", .product(name: "Logging", package: "swift-log")],
            swiftSettings: strictSettings
        ),
        .target(
            name: "JSON",
            swiftSettings: strictSettings
        ),
        .target(
            name: "FirebaseAdmin",
            dependencies: ["CLibCrypto", "JSON", .product(name: "Logging", package: "swift-log")],
            swiftSettings: strictSettings
        ),
        .target(
            name: "Locify",
            dependencies: ["Postgres", "FirebaseAdmin", .product(name: "Logging", package: "swift-log")],
            swiftSettings: strictSettings
        ),
        .target(
            name: "LocifyAPI",
            dependencies: ["HTTPServer", "Locify", "FirebaseAdmin", "JSON", .product(name: "Logging", package: "swift-log")],
            swiftSettings: strictSettings
        ),
        .executableTarget(
            name: "locify-server",
            dependencies: ["LocifyAPI", .product(name: "Logging", package: "swift-log")],
            swiftSettings: strictSettings
        ),
        .target(
            name: "TestSupport",
            dependencies: [
                "HTTPServer", "Postgres", "FirebaseAdmin", "Locify", "LocifyAPI", "JSON", "CLibCrypto",
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Tests/TestSupport",
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
            dependencies: ["FirebaseAdmin", "JSON", "TestSupport", "FuzzSupport", .product(name: "Logging", package: "swift-log")],
            path: "Fuzz/FuzzIDToken", swiftSettings: strictSettings),
        .executableTarget(
            name: "FuzzRequestDecoding", dependencies: ["LocifyAPI", "Locify", "JSON", "FuzzSupport"],
            path: "Fuzz/FuzzRequestDecoding", swiftSettings: strictSettings),
        .testTarget(name: "JSONTests", dependencies: ["JSON", "TestSupport"], swiftSettings: strictSettings),
        .testTarget(name: "HTTPServerTests", dependencies: ["HTTPServer", "TestSupport"], swiftSettings: strictSettings),
        .testTarget(name: "PostgresTests", dependencies: ["Postgres", "TestSupport"], swiftSettings: strictSettings),
        .testTarget(name: "FirebaseAdminTests", dependencies: ["FirebaseAdmin", "TestSupport"], swiftSettings: strictSettings),
        .testTarget(name: "LocifyTests", dependencies: ["Locify", "TestSupport"], swiftSettings: strictSettings),
        .testTarget(name: "LocifyAPITests", dependencies: ["LocifyAPI", "TestSupport"], swiftSettings: strictSettings),
        // bench/json/run: the JSON target against Foundation's JSON, built in release mode into `.build-bench`.
        .executableTarget(
            name: "JSONBenchmark", dependencies: ["JSON"], path: "bench/json", exclude: ["run"], swiftSettings: strictSettings),
    ],
    swiftLanguageModes: [.v6]
)
