import Foundation
import HTTPServer
import JSON
import Locify
import LocifyAPI
import Postgres
import Synchronization
import Testing
import TestSupport
import TestSupportDatabase
import TestSupportServer

/// A pull sent on a connection of its own and answered later (long-poll).
private struct PendingPull {
    let client: RawHTTPClient

    init(port: Int, token: String, since: String?, wait: Int, limit: Int? = nil) throws {
        client = try RawHTTPClient(port: port)
        var target = "/v1/sync/changes?wait=\(wait)"
        if let since { target += "&since=\(since)" }
        if let limit { target += "&limit=\(limit)" }
        try client.send("GET \(target) HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer \(token)\r\n\r\n")
    }

    /// The response (generous bound: a wait may last a minute).
    func response(timeout: Duration = .seconds(90)) throws -> RawHTTPResponse {
        try client.readResponse(timeout: timeout)
    }

    /// The response as a feed page, which must be a 200.
    func page(sourceLocation: SourceLocation = #_sourceLocation) throws -> FeedPageJSON {
        let raw = try response()
        #expect(raw.status == 200, "pull answered \(raw.status): \(raw.text)", sourceLocation: sourceLocation)
        return FeedPageJSON((try? JSONParser.parse(raw.body))?.objectValue ?? JSONObject())
    }
}

@Suite("Sync pull with wait (long-poll): held until a change of the user commits, on any instance")
struct SyncLongPollTests {
    typealias C = SyncChange

    private static func category(_ name: String) -> JSONValue {
        ["id": .string(UUID().uuidString.lowercased()), "name": .string(name)]
    }

    /// Creates a category through `port` (the test server's own when nil); returns its id.
    @discardableResult
    private func create(_ server: TestServer, port: Int? = nil, token: String, name: String = "Live") throws -> String {
        let body = Self.category(name)
        let response = try server.request(port: port ?? server.port, "POST", "/v1/categories", token: token, json: body)
        #expect(response.status == 201, "create answered \(response.status): \(response.text)")
        return body.objectValue?["id"]?.stringValue ?? ""
    }

    /// Whether `port`'s application holds `count` waiting requests (in the HTTP layer and registered).
    private func holds(_ application: Application, _ count: Int) -> Bool {
        eventually { application.server.waitingRequests == count && application.liveStatistics?.waiting == count }
    }

    @Test("a pull with nothing after its cursor waits, holding no database connection, and a write on another instance answers it")
    func wakesAcrossInstances() throws {
        let server = try TestServer.start()
        defer { server.stop() }
        let second = try server.startApplication()
        defer { second.shutdown() }
        let client = try SyncTestClient(server)
        let cursor = try client.drain(limit: 100).cursor

        let pending = try PendingPull(port: second.port, token: client.token, since: cursor, wait: 60)
        #expect(holds(second, 1))
        #expect(second.pool.statistics.inUse == 0, "a waiting pull holds no pooled connection")
        #expect(pending.client.staysQuiet(for: .milliseconds(300)))

        let id = try create(server, token: client.token)
        let page = try pending.page()
        #expect(page.keys == ["category:\(id)"])
        #expect(!page.hasMore)
        #expect(page.cursor != cursor)
        #expect(holds(second, 0))
        // The cursor continues after the change.
        #expect(try client.page(since: page.cursor).changes.isEmpty)
        let statistics = try #require(second.liveStatistics)
        #expect(statistics.notifications >= 1 && statistics.wakeUps >= 1 && statistics.isListening)
    }

    @Test("changes already after the cursor are answered at once; without since, the snapshot is")
    func answersAtOnceWhenThereIsSomething() throws {
        let server = try TestServer.start()
        defer { server.stop() }
        let client = try SyncTestClient(server)
        let cursor = try client.drain(limit: 100).cursor
        let id = try create(server, token: client.token)
        let page = try PendingPull(port: server.port, token: client.token, since: cursor, wait: 60).page()
        #expect(page.keys == ["category:\(id)"])
        let snapshot = try PendingPull(port: server.port, token: client.token, since: nil, wait: 60).page()
        #expect(snapshot.keys.contains("category:\(id)"))
        // A page limit still applies, with has_more.
        let limited = try PendingPull(port: server.port, token: client.token, since: nil, wait: 60, limit: 1).page()
        #expect(limited.changes.count == 1 && limited.hasMore)
        #expect(holds(server.application, 0))
    }

    @Test("a wait that ends with nothing answers 200, no changes, and a cursor that continues from the same position")
    func waitEndsWithNothing() throws {
        let clock = ManualClock<Duration>(.seconds(1000))
        let server = try TestServer.start(dependencies: { dependencies in
            let configure = dependencies.configureHTTP
            dependencies.configureHTTP = { http in
                configure(&http)
                http.clock = clock.httpClock
            }
        })
        defer { server.stop() }
        let client = try SyncTestClient(server)
        let cursor = try client.drain(limit: 100).cursor
        let pending = try PendingPull(port: server.port, token: client.token, since: cursor, wait: 20)
        #expect(holds(server.application, 1))
        clock.advance(by: .seconds(19))
        #expect(pending.client.staysQuiet(for: .milliseconds(200)))
        clock.advance(by: .seconds(2))
        let raw = try pending.response()
        #expect(raw.status == 200)
        #expect(raw.headers["X-Request-Id"] != nil && raw.headers["Cache-Control"] == "no-store")
        let page = FeedPageJSON(try JSONParser.parse(raw.body).objectValue ?? JSONObject())
        #expect(page.changes.isEmpty && !page.hasMore)
        #expect(holds(server.application, 0))
        // Nothing is skipped from the returned cursor: the next write is the next change.
        let id = try create(server, token: client.token)
        #expect(try client.page(since: page.cursor).keys == ["category:\(id)"])
    }

    @Test(
        "wait is an integer from 0 to 60: anything else is 400 E001; 0 answers at once",
        arguments: ["61", "-1", "1.5", "x", "", "99999999999999999999"])
    func waitParameterIsValidated(value: String) throws {
        let server = try TestServer.start(.inProcess)
        defer { server.stop() }
        let token = try server.token(for: "wait-param")
        let response = try server.request("GET", "/v1/sync/changes?wait=\(value)", token: token)
        #expect(response.status == 400)
        #expect(response.errorCode == "E001")
        #expect(response.errorField == "wait")
        let immediate = try server.request("GET", "/v1/sync/changes?wait=0&limit=1", token: token)
        #expect(immediate.status == 200)
    }

    @Test("a user holds at most LOCIFY_MAX_WAITS_PER_USER waiting pulls; one more is 429 S001; other users are not affected")
    func waitsPerUserAreBounded() throws {
        let server = try TestServer.start(configure: { $0.maxWaitsPerUser = 2 })
        defer { server.stop() }
        let alice = try SyncTestClient(server)
        let bob = try SyncTestClient(server)
        let cursor = try alice.drain(limit: 100).cursor
        let first = try PendingPull(port: server.port, token: alice.token, since: cursor, wait: 60)
        let second = try PendingPull(port: server.port, token: alice.token, since: cursor, wait: 60)
        #expect(holds(server.application, 2))
        let refused = try PendingPull(port: server.port, token: alice.token, since: cursor, wait: 60).response()
        #expect(refused.status == 429)
        #expect(refused.headers["Retry-After"] == "1")
        #expect(FeedPageJSON.errorCode(refused) == "S001")
        // Without wait the same user still pulls; another user still waits.
        #expect(try alice.page(since: cursor).changes.isEmpty)
        let bobCursor = try bob.drain(limit: 100).cursor
        let bobs = try PendingPull(port: server.port, token: bob.token, since: bobCursor, wait: 60)
        #expect(holds(server.application, 3))

        // A wait that ends (its client left) frees its place.
        first.client.close()
        #expect(holds(server.application, 2))
        let third = try PendingPull(port: server.port, token: alice.token, since: cursor, wait: 60)
        #expect(holds(server.application, 3))
        let id = try create(server, token: alice.token)
        #expect(try second.page().keys == ["category:\(id)"])
        #expect(try third.page().keys == ["category:\(id)"])
        #expect(bobs.client.staysQuiet(for: .milliseconds(200)), "another user's write does not answer bob")
    }

    @Test("waiting pulls hold no worker and no database connection: with a pool of 2, 8 wait and other requests go on")
    func waitsHoldNoWorkerNorConnection() throws {
        let server = try TestServer.start(configure: { $0.databasePoolSize = 2 })
        defer { server.stop() }
        let clients = try (0..<8).map { _ in try SyncTestClient(server) }
        let cursors = try clients.map { try $0.drain(limit: 100).cursor }
        let pending = try zip(clients, cursors).map { client, cursor in
            try PendingPull(port: server.port, token: client.token, since: cursor, wait: 60)
        }
        #expect(holds(server.application, 8))
        #expect(server.application.pool.statistics.inUse == 0)
        for client in clients.prefix(4) {
            #expect(try client.listCategories().count == 4)
        }
        let ids = try clients.map { try create(server, token: $0.token) }
        for (index, pull) in pending.enumerated() {
            #expect(try pull.page().keys == ["category:\(ids[index])"])
        }
    }

    @Test("deleting the account wakes its waiting pulls, answered 401 (the token is revoked)")
    func accountDeletionAnswersWaiters() throws {
        let server = try TestServer.start()
        defer { server.stop() }
        let client = try SyncTestClient(server)
        let cursor = try client.drain(limit: 100).cursor
        let pending = try PendingPull(port: server.port, token: client.token, since: cursor, wait: 60)
        #expect(holds(server.application, 1))
        #expect(try server.request("DELETE", "/v1/users/me", token: client.token).status == 204)
        let answer = try pending.response()
        #expect(answer.status == 401)
        #expect(FeedPageJSON.errorCode(answer) == "E005")
    }

    @Test("shutdown answers every waiting pull at once, with Connection: close, before its shutdown delay is over")
    func shutdownAnswersWaiters() throws {
        let server = try TestServer.start()
        defer { server.stop() }
        let application = try server.startApplication(configure: { $0.shutdownDelaySeconds = 5 })
        let clients = try (0..<3).map { _ in try SyncTestClient(server) }
        let pending = try clients.map { client in
            try PendingPull(port: application.port, token: client.token, since: try client.drain(limit: 100).cursor, wait: 60)
        }
        #expect(holds(application, 3))
        let stopped = Atomic<Bool>(false)
        let stopping = BackgroundThread {
            application.shutdown()
            stopped.store(true, ordering: .releasing)
        }
        for pull in pending {
            let raw = try pull.response()
            #expect(raw.status == 200)
            #expect(raw.headers["Connection"] == "close")
            #expect(FeedPageJSON((try? JSONParser.parse(raw.body))?.objectValue ?? JSONObject()).changes.isEmpty)
        }
        let stoppedBeforeAnswers = stopped.load(ordering: .acquiring)
        #expect(!stoppedBeforeAnswers, "answered during the 5 s shutdown delay, not after it")
        #expect(stopping.wait(timeout: .seconds(60)))
    }

    @Test("a change committed while no connection listened still answers the waiting pull: every waiter is woken when listening resumes")
    func listenerGapIsMadeUp() throws {
        let server = try TestServer.start(dependencies: { $0.listenTiming.minimumBackoff = .milliseconds(20) })
        defer { server.stop() }
        let client = try SyncTestClient(server)
        // Every connection the write and its notification need is open before new connections
        // are refused (the notifier's by a first write).
        _ = try create(server, token: client.token, name: "warm-up")
        #expect(eventually { server.application.liveStatistics?.notificationsSent == 1 })
        let cursor = try client.drain(limit: 100).cursor
        try server.application.pool.warmUp()
        let pending = try PendingPull(port: server.port, token: client.token, since: cursor, wait: 60)
        #expect(holds(server.application, 1))
        // From another database: PostgreSQL refuses to close the one a session is connected to.
        let administration = ConnectionPool(configuration: try TestDatabase.serverConfiguration(), size: 1, logger: testServerLogger)
        defer { administration.close() }
        try administration.withConnection { connection in
            try connection.execute(unsafeSQL: "ALTER DATABASE \(server.database.name) ALLOW_CONNECTIONS false")
        }
        #expect(try terminateListeners(server, using: administration) == 1)
        #expect(eventually { server.application.liveStatistics?.isListening == false })
        let id = try create(server, token: client.token)
        #expect(pending.client.staysQuiet(for: .milliseconds(500)), "nobody listened: the notification was lost")
        try administration.withConnection { connection in
            try connection.execute(unsafeSQL: "ALTER DATABASE \(server.database.name) ALLOW_CONNECTIONS true")
        }
        #expect(try pending.page().keys == ["category:\(id)"])
        #expect(server.application.liveStatistics?.listenReconnects == 1)
    }

    @Test(
        "under write load on two instances, with the listening connections terminated again and again, long-poll followers see every acknowledged write"
    )
    func followersSeeEveryWriteThroughListenerLoss() throws {
        let server = try TestServer.start(dependencies: { $0.listenTiming.minimumBackoff = .milliseconds(20) })
        defer { server.stop() }
        let second = try server.startApplication(dependencies: { $0.listenTiming.minimumBackoff = .milliseconds(20) })
        defer { second.shutdown() }
        let ports = [server.port, second.port]
        let users = try (0..<4).map { _ in try SyncTestClient(server) }
        let acknowledged = Mutex([String: Set<String>]())
        let seen = Mutex([String: Set<String>]())
        let stopWriters = Atomic<Bool>(false)
        let stopFollowers = Atomic<Bool>(false)

        let followers = users.enumerated().map { index, user in
            let start = try? user.drain(limit: 1000).cursor
            return BackgroundThread { () throws -> Int in
                var cursor = start
                var pulls = 0
                while !stopFollowers.load(ordering: .acquiring) {
                    // The followers of half the users wait on the other instance than their first write.
                    let page = try PendingPull(port: ports[(index + 1) % 2], token: user.token, since: cursor, wait: 60).page()
                    pulls += 1
                    let ids = page.changes.compactMap { $0["id"]?.stringValue }
                    seen.withLock { seen in seen[user.uid, default: []].formUnion(ids) }
                    cursor = page.cursor
                }
                return pulls
            }
        }
        let writers = users.enumerated().map { index, user in
            BackgroundThread { () throws -> Int in
                var writes = 0
                while !stopWriters.load(ordering: .acquiring) {
                    let body = Self.category("w\(writes)")
                    let response = try server.request(
                        port: ports[(index + writes) % 2], "POST", "/v1/categories", token: user.token, json: body)
                    writes += 1
                    if response.status == 201, let id = body.objectValue?["id"]?.stringValue {
                        acknowledged.withLock { _ = $0[user.uid, default: []].insert(id) }
                    }
                }
                return writes
            }
        }
        var terminated = 0
        for _ in 0..<6 {
            Thread.sleep(forTimeInterval: 0.2)
            // Each round kills listening connections, not one still being set up (a kill during
            // the LISTEN is a failed attempt, not a reconnect; a slow build, TSan's, widens it).
            _ = eventually(timeout: .seconds(30)) {
                [server.application.liveStatistics, second.liveStatistics].allSatisfy { $0?.isListening == true }
            }
            terminated += try terminateListeners(server)
        }
        stopWriters.store(true, ordering: .releasing)
        let writes = try writers.map { try $0.join() }
        #expect(writes.allSatisfy { $0 > 0 })
        let expected = acknowledged.withLock { $0 }
        // Generous, but far below the followers' 60 s waits: a follower is only this quick when
        // every commit (or the reconnect after a lost listener) woke it.
        let caughtUp = eventually(timeout: .seconds(30)) {
            seen.withLock { seen in users.allSatisfy { expected[$0.uid, default: []].isSubset(of: seen[$0.uid, default: []]) } }
        }
        #expect(caughtUp, "every acknowledged write reached the long-poll followers")
        stopFollowers.store(true, ordering: .releasing)
        for user in users { _ = try create(server, token: user.token, name: "last") }
        let pulls = try followers.map { try $0.join() }
        #expect(pulls.allSatisfy { $0 > 1 })
        #expect(terminated >= 6)
        let reconnects = (server.application.liveStatistics?.listenReconnects ?? 0) + (second.liveStatistics?.listenReconnects ?? 0)
        #expect(reconnects >= 6)
    }

    @Test("/v1/info advertises max_wait_seconds; LOCIFY_MAX_WAIT_SECONDS=0 turns long-poll off (wait is ignored)")
    func infoAndSwitchOff() throws {
        let server = try TestServer.start()
        defer { server.stop() }
        let info = try server.request("GET", "/v1/info", as: "info-user")
        #expect(info.object["max_wait_seconds"]?.numberValue == 60)

        let off = try server.startApplication(configure: { $0.maxWaitSeconds = 0 })
        defer { off.shutdown() }
        let token = try server.token(for: "off-user")
        let offInfo = try server.request(port: off.port, "GET", "/v1/info", token: token)
        #expect(offInfo.object["max_wait_seconds"]?.numberValue == 0)
        let cursor = FeedPageJSON(try server.request(port: off.port, "GET", "/v1/sync/changes", token: token).object).cursor
        let page = try PendingPull(port: off.port, token: token, since: cursor, wait: 60).page()
        #expect(page.changes.isEmpty && !page.hasMore)
        #expect(off.liveStatistics == nil)
    }

    @Test("a write that succeeded notifies its user once, after its commit; a refused write or a read notifies nobody")
    func onlySuccessfulWritesNotify() throws {
        let server = try TestServer.start(.inProcess)
        defer { server.stop() }
        let client = try SyncTestClient(server)
        let sent = { server.application.liveStatistics?.notificationsSent ?? -1 }
        // The listener starts beside the server: a notification sent before it listens is heard
        // by nobody (waiters are woken when it connects), so the count below starts once it does.
        #expect(eventually { server.application.liveStatistics?.isListening == true })
        let id = UUID()
        let created = try server.request(
            "POST", "/v1/categories", token: client.token, json: .object(C.category(id, name: "First", at: 10)))
        #expect(created.status == 201)
        #expect(eventually { sent() == 1 })
        let stale = try server.request(
            "PUT", "/v1/categories/\(id.lowercasedString)", token: client.token, json: .object(C.category(id, name: "Older", at: 5)))
        #expect(stale.status == 409)
        #expect(try client.listCategories().count == 5)
        _ = try client.page()
        let invalid = try server.request("POST", "/v1/categories", token: client.token, json: ["name": ""])
        #expect(invalid.status == 400)
        Thread.sleep(forTimeInterval: 0.3)
        #expect(sent() == 1, "neither the refused writes nor the reads notified")
        let renamed = try server.request(
            "PUT", "/v1/categories/\(id.lowercasedString)", token: client.token, json: .object(C.category(id, name: "Newer", at: 20)))
        #expect(renamed.status == 200)
        #expect(eventually { sent() == 2 })
        #expect(eventually { server.application.liveStatistics?.notifications == 2 }, "this instance hears its own notifications")
    }

    @Test("a write that stores nothing (a replayed POST, a replayed push) wakes no waiting pull, though answered 2xx")
    func writesThatStoreNothingWakeNobody() throws {
        let server = try TestServer.start()
        defer { server.stop() }
        let alice = try SyncTestClient(server)
        let bob = try SyncTestClient(server)
        let live = { server.application.liveStatistics }
        #expect(eventually { live()?.isListening == true })
        let id = UUID()
        let body = JSONValue.object(C.category(id, name: "Once", at: 10))
        #expect(try server.request("POST", "/v1/categories", token: alice.token, json: body).status == 201)
        // That create has been heard (and woke nobody) before the pulls wait.
        #expect(eventually { (live()?.notifications ?? 0) >= 1 })
        let alicePull = try PendingPull(port: server.port, token: alice.token, since: alice.drain(limit: 100).cursor, wait: 60)
        defer { alicePull.client.close() }
        let bobPull = try PendingPull(port: server.port, token: bob.token, since: bob.drain(limit: 100).cursor, wait: 60)
        #expect(holds(server.application, 2))
        let woken = live()?.wakeUps ?? 0

        #expect(try server.request("POST", "/v1/categories", token: alice.token, json: body).status == 200)
        let replayed = try alice.pushResults([C.change("category", "create", C.category(id, name: "Once", at: 10))])
        #expect(replayed.map { $0["status"]?.stringValue } == ["applied"])
        // Bob's change is announced after anything alice's requests announced: once it has
        // answered bob's pull, a wake-up of alice's would have come first.
        let fence = try create(server, token: bob.token)
        #expect(try bobPull.page().keys == ["category:\(fence)"])
        #expect(live()?.wakeUps == woken + 1, "the replays woke alice's pull")
        #expect(holds(server.application, 1))
    }

    @Test("a push that commits changes before a later one fails (500) wakes the waiting pulls for what it committed")
    func partiallyAppliedPushWakes() throws {
        let server = try TestServer.start()
        defer { server.stop() }
        // This database refuses a location named "boom" with an error of its own: that change
        // fails as a broken database would, after the category's change committed.
        try server.pool.withConnection { connection in
            try connection.execute(
                unsafeSQL: """
                    CREATE FUNCTION refuse_boom() RETURNS trigger LANGUAGE plpgsql AS $$
                    BEGIN IF NEW.name = 'boom' THEN RAISE EXCEPTION 'boom'; END IF; RETURN NEW; END $$;
                    CREATE TRIGGER refuse_boom BEFORE INSERT OR UPDATE ON locations FOR EACH ROW EXECUTE FUNCTION refuse_boom()
                    """)
        }
        let client = try SyncTestClient(server)
        let cursor = try client.drain(limit: 100).cursor
        let pending = try PendingPull(port: server.port, token: client.token, since: cursor, wait: 60)
        #expect(holds(server.application, 1))
        let category = UUID()
        let response = try client.push([
            C.change("category", "create", C.category(category, name: "Committed")),
            C.change("location", "create", C.location(UUID(), category: category, name: "boom")),
        ])
        #expect(response.status == 500)
        let page = try pending.page()
        #expect(page.keys == ["category:\(category.lowercasedString)"], "the committed change did not wake the pull")
    }

    @Test("a change a background worker commits (the cascade worker settling a cascade) wakes the user's waiting pulls")
    func backgroundWriterWakes() throws {
        let server = try TestServer.start()
        defer { server.stop() }
        let client = try SyncTestClient(server)
        // Another instance's services, which announce nothing: as if it answered the delete and
        // stopped before its worker ran. The cascade is this instance's worker's to settle.
        let elsewhere = LocifyServices(pool: server.pool, settings: LocifySettings(storageBucket: "elsewhere"))
        let caller = Caller(userID: client.uid, tokenIssuedAt: Int64(Date().timeIntervalSince1970))
        try server.pool.withConnection { lock in
            var pending = false
            // Until the cascade is still pending once this test holds the user's row (the worker
            // runs every 5 s and may settle it first).
            for _ in 0..<5 where !pending {
                let category = UUID()
                _ = try elsewhere.categories.create(caller, CategoryDraft(id: category, name: "Cascade \(category)"))
                _ = try elsewhere.locations.create(
                    caller, LocationDraft(id: UUID(), categoryID: category, name: "Hidden", latitude: 1, longitude: 2))
                _ = try elsewhere.categories.delete(caller, id: category, updatedAt: nil, reassignTo: nil)
                try lock.execute(unsafeSQL: "BEGIN")
                pending =
                    try lock.query("SELECT hiding <> '{}' FROM users WHERE id = \(client.uid) FOR NO KEY UPDATE").first?.decode(
                        0, as: Bool.self) ?? false
                if !pending { try lock.execute(unsafeSQL: "ROLLBACK") }
            }
            try #require(pending)
            let cursor = try client.drain(limit: 100).cursor
            let pull = try PendingPull(port: server.port, token: client.token, since: cursor, wait: 60)
            defer { pull.client.close() }
            #expect(holds(server.application, 1))
            let woken = server.application.liveStatistics?.wakeUps ?? 0
            // The worker may take the user now.
            try lock.execute(unsafeSQL: "COMMIT")
            #expect(eventually { (server.application.liveStatistics?.wakeUps ?? 0) > woken }, "the worker's commit woke nobody")
            let settled = try lock.query("SELECT hiding = '{}' FROM users WHERE id = \(client.uid)").first?.decode(0, as: Bool.self)
            #expect(settled == true)
        }
    }

    @Test("LOCIFY_MAX_WAIT_SECONDS is 0-60 and LOCIFY_MAX_WAITS_PER_USER 1-1000; anything else refuses to start")
    func configuration() throws {
        let base = ["DATABASE_URL": "postgres://localhost/x", "FIREBASE_PROJECT_ID": "demo-x"]
        let defaults = try Configuration(environment: base)
        #expect(defaults.maxWaitSeconds == 60 && defaults.maxWaitsPerUser == 10)
        let set = try Configuration(environment: base.merging(["LOCIFY_MAX_WAIT_SECONDS": "0", "LOCIFY_MAX_WAITS_PER_USER": "3"]) { $1 })
        #expect(set.maxWaitSeconds == 0 && set.maxWaitsPerUser == 3)
        for (name, value) in [
            ("LOCIFY_MAX_WAIT_SECONDS", "61"), ("LOCIFY_MAX_WAIT_SECONDS", "-1"), ("LOCIFY_MAX_WAITS_PER_USER", "0"),
            ("LOCIFY_MAX_WAITS_PER_USER", "many"),
        ] {
            let error = #expect(throws: ConfigurationError.self) { try Configuration(environment: base.merging([name: value]) { $1 }) }
            #expect(error?.variable == name)
        }
    }

    @Test("/metrics reports waiting pulls, wake-ups, notifications and listener reconnects")
    func metrics() throws {
        let server = try TestServer.start()
        defer { server.stop() }
        let client = try SyncTestClient(server)
        let pending = try PendingPull(port: server.port, token: client.token, since: try client.drain(limit: 100).cursor, wait: 60)
        #expect(holds(server.application, 1))
        #expect(eventually { server.application.liveStatistics?.isListening == true })
        let during = try PrometheusText(try server.request("GET", "/metrics").text)
        #expect(during.value("live_waiting_requests") == 1)
        #expect(during.value("live_listen_connected") == 1)
        _ = try create(server, token: client.token)
        _ = try pending.page()
        #expect(holds(server.application, 0))
        let after = try PrometheusText(try server.request("GET", "/metrics").text)
        #expect(after.value("live_waiting_requests") == 0)
        #expect((after.value("live_wakeups_total") ?? 0) >= 1)
        #expect(after.value("live_listen_reconnects_total") == 0)
        // The commit's NOTIFY comes back through LISTEN on its own connection: the pull may be
        // answered before it is received and counted (the clean-clone CI run read 0 under load).
        #expect(
            try eventually {
                let metrics = try PrometheusText(try server.request("GET", "/metrics").text)
                return (metrics.value("live_notifications_total") ?? 0) >= 1
            })
    }

    /// Terminates the listening connections of every instance on the test server's database,
    /// through `pool` (default: the test server's).
    private func terminateListeners(_ server: TestServer, using pool: ConnectionPool? = nil) throws -> Int {
        try (pool ?? server.pool).withConnection { connection in
            try connection.query(
                """
                SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) FROM pg_stat_activity
                WHERE application_name = 'locify-server-listen' AND datname = \(server.database.name)
                """
            ).first?.decode(0, as: Int.self) ?? 0
        }
    }
}

extension FeedPageJSON {
    /// `error.code` of an error response.
    fileprivate static func errorCode(_ raw: RawHTTPResponse) -> String? {
        (try? JSONParser.parse(raw.body))?.objectValue?["error"]?.objectValue?["code"]?.stringValue
    }
}
