import Foundation
import JSON
import LocifyAPI
import Testing
import TestSupport
import TestSupportDatabase
import TestSupportServer

/// What a burst leaves behind (issue 15, item 4: the server's resident memory). glibc keeps memory
/// freed by the worker threads in their arenas; the server hands it back to the kernel once a
/// second (`LOCIFY_MEMORY_TRIM_INTERVAL_SECONDS`), so an idle server is as small as before a burst.
@Suite("Memory: what a burst of requests freed goes back to the kernel", .serialized)
struct MemoryReturnTests {
    static let burstLanes = 8
    static let pushesPerLane = 50

    @Test("LOCIFY_MEMORY_TRIM_INTERVAL_SECONDS: 1 by default, 0 turns the hand-back off, at most an hour")
    func configuration() throws {
        var environment = ["DATABASE_URL": "postgres://localhost/x", "FIREBASE_PROJECT_ID": "p"]
        #expect(try Configuration(environment: environment).memoryTrimIntervalSeconds == 1)
        environment["LOCIFY_MEMORY_TRIM_INTERVAL_SECONDS"] = "0"
        #expect(try Configuration(environment: environment).memoryTrimIntervalSeconds == 0)
        for bad in ["-1", "3601", "often"] {
            environment["LOCIFY_MEMORY_TRIM_INTERVAL_SECONDS"] = bad
            #expect(throws: ConfigurationError.self) { try Configuration(environment: environment) }
        }
    }

    @Test("after 400 pushes of 50 locations on 8 connections, the idle server's heap shrinks back to within 3 MiB of where it started")
    func burstMemoryReturns() throws {
        // A sanitizer's allocator keeps freed memory in quarantine on purpose.
        guard !SanitizerDetection.isActive else { return }
        let database = try TestDatabase.create(migrationsDirectory: ProjectPaths.migrations, poolSize: 3)
        defer { try? database.drop() }
        let server = try ServerProcess.start(databaseURL: database.connectionString)
        defer {
            server.send(SIGKILL)
            _ = server.waitForExit(timeout: .seconds(10))
        }
        let token = try ServerProcess.token(for: "burst-user")
        let category = UUID()
        let setup = try server.request(
            "POST", "/v1/sync/push", token: token,
            json: ["changes": [SyncChange.change("category", "create", SyncChange.category(category, name: "Burst"))]])
        #expect(setup.status == 200, "setup: \(setup.text)")
        Thread.sleep(forTimeInterval: 1)
        let baseline = server.anonymousResidentBytes

        try Self.burst(server, token: token, category: category, pushesPerLane: Self.pushesPerLane)
        let afterBurst = server.anonymousResidentBytes
        var settled = afterBurst
        let returned = eventually(timeout: .seconds(10)) {
            settled = server.anonymousResidentBytes
            return settled <= baseline + 3 << 20
        }
        #expect(
            returned,
            "anonymous RSS: \(baseline >> 10) KiB before the burst, \(afterBurst >> 10) KiB after it, \(settled >> 10) KiB after 10 s idle")
    }

    @Test("the server maps FoundationEssentials only: no library of Foundation, FoundationInternationalization or ICU")
    func linksFoundationEssentialsOnly() throws {
        // The whole of Foundation, with ICU's code and data, is about 3 MB of the server's resident
        // memory; the debug build links the toolchain's libraries dynamically, so its mappings show them.
        let database = try TestDatabase.create(migrationsDirectory: ProjectPaths.migrations, poolSize: 1)
        defer { try? database.drop() }
        let server = try ServerProcess.start(databaseURL: database.connectionString)
        defer {
            server.send(SIGKILL)
            _ = server.waitForExit(timeout: .seconds(10))
        }
        // Read to the end: /proc files report size 0, and a read by size stops after one page.
        let maps = String(decoding: try FileHandle(forReadingAtPath: "/proc/\(server.pid)/maps")?.readToEnd() ?? Data(), as: UTF8.self)
        let libraries = Set(maps.split(separator: "\n").compactMap { $0.split(separator: "/").last.map(String.init) })
        #expect(libraries.contains { $0.hasPrefix("libswiftCore.so") }, "the mappings list the Swift runtime: \(libraries.sorted())")
        let forbidden = libraries.filter { name in
            ["libFoundation.so", "libFoundationInternationalization.so", "lib_FoundationICU.so", "libFoundationNetworking.so"]
                .contains { name.hasPrefix($0) }
        }
        #expect(forbidden.isEmpty, "the server maps \(forbidden.sorted())")
    }

    /// `pushesPerLane` pushes of 50 new locations on each of `burstLanes` keep-alive connections,
    /// each on its own thread (all lanes at once, as from many devices or a proxy); every push
    /// must be accepted.
    static func burst(_ server: ServerProcess, token: String, category: UUID, pushesPerLane: Int) throws {
        let lanes = (0..<burstLanes).map { _ in
            BackgroundThread<Int> {
                let client = try RawHTTPClient(port: server.port)
                defer { client.close() }
                var accepted = 0
                for index in 0..<pushesPerLane {
                    let changes: [JSONValue] = (0..<50).map { item in
                        var data = SyncChange.location(UUID(), category: category, name: "Place \(index) \(item)")
                        data["address"] = "Some street 1, 12345 City"
                        data["description"] = "A nice place to go with friends and family"
                        return SyncChange.change("location", "create", data)
                    }
                    let body = JSONWriter.encode(["changes": .array(changes)])
                    try client.send(
                        Array(
                            ("POST /v1/sync/push HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer \(token)\r\n"
                                + "Content-Type: application/json\r\nContent-Length: \(body.count)\r\n\r\n").utf8) + body)
                    if try client.readResponse().status == 200 { accepted += 1 }
                }
                return accepted
            }
        }
        let accepted = try lanes.map { try $0.join() }.reduce(0, +)
        #expect(accepted == burstLanes * pushesPerLane, "pushes accepted")
    }
}
