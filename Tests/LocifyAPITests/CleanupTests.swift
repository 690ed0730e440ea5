import FirebaseAdmin
import Foundation
import JSON
import LocifyAPI
import LocifyRules
import Postgres
import Testing
import TestSupport
import TestSupportDatabase
import TestSupportServer

/// Durable Google clean-up end to end (openapi.yaml, issue 6): the server, its
/// database and a fake Google over real sockets (OAuth with real RS256 verification of the
/// assertion, Cloud Storage list/delete, Identity Toolkit `accounts:delete`).
@Suite("Clean-up end to end: Storage and Auth deletion against the fake Google")
struct CleanupTests {
    static let bucket = TestConstants.bucket
    static let otherBucket = "another-bucket"

    // MARK: Helpers

    static func uniqueUID(_ label: String) -> String { "\(label)-\(UUID().uuidString.prefix(8).lowercased())" }

    static func firebaseURL(_ path: String, bucket: String = CleanupTests.bucket) -> String {
        "https://firebasestorage.googleapis.com/v0/b/\(bucket)/o/"
            + PercentEncoding.encodeComponent(path) + "?alt=media&token=0f1e2d"
    }

    /// The clean-up jobs left, and those still to come: a pending cascade queues its locations'
    /// clean-up as it settles them (`PendingCascades`).
    static func remainingJobs(_ server: TestServer) throws -> Int64 {
        try server.pool.withConnection { connection in
            try connection.query(
                "SELECT (SELECT count(*) FROM cleanup_jobs) + (SELECT count(*) FROM users WHERE hiding <> '{}')"
            ).first?.decode(0) ?? -1
        }
    }

    /// Waits (generously) until every clean-up job is done, those of pending cascades included.
    static func waitForEmptyQueue(_ server: TestServer, timeout: Duration = .seconds(90)) -> Bool {
        eventually(timeout: timeout) { (try? remainingJobs(server)) == 0 }
    }

    /// `cleanup_jobs{state="<state>"}` from `/metrics`.
    static func cleanupGauge(_ server: TestServer, _ state: String) throws -> Int? {
        let text = try server.request("GET", "/metrics").text
        let prefix = "cleanup_jobs{state=\"\(state)\"} "
        guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix(prefix) }) else { return nil }
        return Int(line.dropFirst(prefix.count))
    }

    /// Sends a request that must succeed.
    @discardableResult
    static func send(
        _ server: TestServer, _ method: String, _ path: String, token: String, _ body: JSONValue? = nil, port: Int? = nil
    ) throws -> TestResponse {
        let response = try port.map { try server.request(port: $0, method, path, token: token, json: body) }
            ?? server.request(method, path, token: token, json: body)
        guard (200...299).contains(response.status) else {
            throw AuthTestError("\(method) \(path) answered \(response.status): \(response.text)")
        }
        return response
    }

    /// A user whose account holds a category (icon pointing at another user's object) and a
    /// location whose images point at its own folder, another user's folder and another bucket;
    /// and the Storage objects of the user, of `other`, and look-alikes that must survive.
    struct AccountScenario {
        let uid: String
        let other: String
        /// Objects (in `bucket`) deletion must remove.
        let owned: [String]
        /// Objects (in `bucket`) that must survive.
        let foreign: [String]
        /// Objects in `otherBucket` (all must survive).
        let otherBucketObjects: [String]

        init(uid: String, other: String) {
            self.uid = uid
            self.other = other
            owned = [
                "locations/\(uid)/l1/a.jpg", "locations/\(uid)/l1/my photo #1+ü%.jpg", "locations/\(uid)/orphan.jpg",
                "locations/\(uid)/l2/b.jpg", "categories/\(uid)/c1/icon.png", "categories/\(uid)/c2/deep/er/icon.png",
            ]
            foreign = [
                "locations/\(other)/x.jpg", "categories/\(other)/c/i.png", "locations/\(uid)x/trick.jpg",
                "categories/\(uid)x/t.png", "locations/\(uid)", "locationsx/\(uid)/a.jpg", "\(uid)/locations/a.jpg",
                "locations/\(uid.uppercased())/a.jpg",
            ]
            otherBucketObjects = ["locations/\(uid)/a.jpg", "categories/\(uid)/c1/icon.png"]
        }

        /// Seeds the fake and creates the user's records through the API.
        func seed(_ server: TestServer, token: String) throws {
            server.fake.addObjects(owned + foreign, bucket: CleanupTests.bucket)
            server.fake.addObjects(otherBucketObjects, bucket: CleanupTests.otherBucket)
            server.fake.addAccounts([uid, other])
            let category = UUID().uuidString
            try CleanupTests.send(server, "POST", "/v1/categories", token: token, [
                "id": .string(category), "name": "Mine",
                "icon": .string(CleanupTests.firebaseURL("categories/\(other)/c/i.png")),
            ])
            try CleanupTests.send(server, "POST", "/v1/locations", token: token, [
                "id": .string(UUID().uuidString), "category_id": .string(category), "name": "Place",
                "latitude": 1, "longitude": 2,
                "image_urls": [
                    .string(CleanupTests.firebaseURL("locations/\(uid)/l1/a.jpg")),
                    .string(CleanupTests.firebaseURL("locations/\(other)/x.jpg")),
                    .string("https://storage.googleapis.com/\(CleanupTests.otherBucket)/locations/\(uid)/a.jpg"),
                    .string(CleanupTests.firebaseURL("locations/\(uid)x/trick.jpg")),
                ],
            ])
        }

        /// Checks the fake's view after the clean-up finished.
        func expectCleanedUp(_ fake: FakeGoogle, sourceLocation: SourceLocation = #_sourceLocation) {
            let deleted = fake.deletions
            #expect(
                Set(deleted) == Set(owned.map { FakeGoogle.Deletion(bucket: CleanupTests.bucket, name: $0) }),
                "deleted: \(deleted.map(\.name))", sourceLocation: sourceLocation)
            #expect(deleted.count == owned.count, "each object deleted once", sourceLocation: sourceLocation)
            #expect(Set(fake.objects(bucket: CleanupTests.bucket)).isSuperset(of: foreign), sourceLocation: sourceLocation)
            #expect(fake.objects(bucket: CleanupTests.bucket).allSatisfy { !owned.contains($0) }, sourceLocation: sourceLocation)
            #expect(fake.objects(bucket: CleanupTests.otherBucket) == otherBucketObjects.sorted(), sourceLocation: sourceLocation)
            #expect(fake.deletedAccounts == [uid], sourceLocation: sourceLocation)
            #expect(fake.accounts.contains(other), sourceLocation: sourceLocation)
            // The Auth account went after every Storage call for the user's folders.
            let requests = fake.requests
            let accountCall = requests.lastIndex { $0.endpoint == .accountsDelete }
            let lastStorageCall = requests.lastIndex { $0.endpoint == .storageList || $0.endpoint == .storageDelete }
            #expect(accountCall != nil && lastStorageCall != nil, sourceLocation: sourceLocation)
            if let accountCall, let lastStorageCall {
                #expect(lastStorageCall < accountCall, "the Auth account is deleted after the Storage jobs", sourceLocation: sourceLocation)
            }
        }
    }

    // MARK: Account deletion

    @Test("after account deletion the fake saw exactly the user's objects deleted, then the Auth account")
    func accountDeletionCleansUpExactly() throws {
        let server = try TestServer.start(.inProcess)
        defer { server.stop() }
        let scenario = AccountScenario(uid: Self.uniqueUID("gone"), other: Self.uniqueUID("stay"))
        let token = try server.token(for: scenario.uid)
        try scenario.seed(server, token: token)
        try Self.send(server, "GET", "/v1/users/me", token: server.token(for: scenario.other))
        #expect(try server.request("DELETE", "/v1/users/me", token: token).status == 204)
        #expect(Self.waitForEmptyQueue(server))
        scenario.expectCleanedUp(server.fake)
        // Folders were listed by their exact prefixes, each once.
        #expect(server.fake.listedPrefixes.sorted() == ["categories/\(scenario.uid)/", "locations/\(scenario.uid)/"])
        #expect(server.fake.accountDeleteRequestUIDs == [scenario.uid])
    }

    @Test("a uid with characters that need encoding (+, space, &, ?, #, %, non-ASCII) is cleaned up exactly")
    func uidNeedingEncoding() throws {
        let server = try TestServer.start(.inProcess)
        defer { server.stop() }
        let uid = "odd+uid ü&=?#%2F" + UUID().uuidString.prefix(4)
        let mine = ["locations/\(uid)/l/a b+c.jpg", "categories/\(uid)/k/i.png"]
        let lookalikes = ["locations/odd uid ü&=?#%2F\(uid.suffix(4))/l/a.jpg", "locations/\(uid)x/a.jpg"]
        server.fake.addObjects(mine + lookalikes, bucket: Self.bucket)
        server.fake.addAccounts([uid])
        #expect(try server.request("DELETE", "/v1/users/me", as: uid).status == 204)
        #expect(Self.waitForEmptyQueue(server))
        #expect(Set(server.fake.deletions.map(\.name)) == Set(mine))
        #expect(Set(server.fake.objects(bucket: Self.bucket)) == Set(lookalikes))
        #expect(server.fake.deletedAccounts == [uid])
    }

    @Test("an Auth account that does not exist (USER_NOT_FOUND) and empty folders count as done")
    func nothingToDelete() throws {
        let server = try TestServer.start(.inProcess)
        defer { server.stop() }
        let uid = Self.uniqueUID("never-in-firebase")
        let token = try server.token(for: uid)
        #expect(try server.request("DELETE", "/v1/users/me", token: token).status == 204)
        #expect(Self.waitForEmptyQueue(server))
        #expect(server.fake.accountDeleteRequestUIDs == [uid])
        #expect(server.fake.deletions.isEmpty && server.fake.deletedAccounts.isEmpty)
    }

    @Test("with Google failing the first calls (503, 429 with Retry-After, token endpoint down) the jobs still finish")
    func failuresAreRetried() throws {
        let server = try TestServer.start(.inProcess)
        defer { server.stop() }
        let scenario = AccountScenario(uid: Self.uniqueUID("flaky"), other: Self.uniqueUID("stay"))
        let token = try server.token(for: scenario.uid)
        try scenario.seed(server, token: token)
        let fake = server.fake
        fake.failNext(.token, count: 2, status: 503)
        fake.failNext(.storageList, count: 3, status: 503)
        fake.failNext(.storageDelete, count: 2, status: 429, retryAfter: "1")
        fake.failNext(.storageDelete, count: 1, status: 500)
        fake.failNext(.accountsDelete, count: 2, status: 503)
        fake.failNext(.accountsDelete, count: 1, status: 429, retryAfter: "1")
        #expect(try server.request("DELETE", "/v1/users/me", token: token).status == 204)
        #expect(Self.waitForEmptyQueue(server))
        scenario.expectCleanedUp(fake)
        #expect(fake.requestCount(.token) == 3)
        #expect(fake.requestCount(.accountsDelete) == 4)
        #expect(fake.accountDeleteRequestUIDs == Array(repeating: scenario.uid, count: 4))
    }

    @Test("a job left claimed by a killed server is finished by a restarted server, exactly once")
    func jobOfKilledServerIsFinished() throws {
        // The first server has no Google credentials, so its jobs stay queued.
        let server = try TestServer.start(configure: { $0.googleApplicationCredentials = nil })
        defer { server.stop() }
        let scenario = AccountScenario(uid: Self.uniqueUID("crash"), other: Self.uniqueUID("stay"))
        let token = try server.token(for: scenario.uid)
        try scenario.seed(server, token: token)
        #expect(try server.request("DELETE", "/v1/users/me", token: token).status == 204)
        #expect(try Self.remainingJobs(server) == 3)

        // A server claimed the locations job the way the worker does (row lock in an open
        // transaction) and died mid-job.
        let dying = try PostgresConnection.connect(server.database.configuration, logger: TestDatabase.logger)
        try dying.execute(unsafeSQL: "BEGIN")
        let claimed = try dying.query(
            "SELECT id FROM cleanup_jobs WHERE target = \("locations/\(scenario.uid)/") FOR UPDATE SKIP LOCKED")
        #expect(claimed.count == 1)

        // The restarted server (with credentials) runs what it can: the categories folder; the
        // claimed job is skipped and the Auth account waits for it.
        let credentials = try server.writeServiceAccountFile()
        let restarted = try server.startApplication(configure: { $0.googleApplicationCredentials = credentials })
        defer { restarted.shutdown() }
        #expect(eventually { (try? Self.remainingJobs(server)) == 2 })
        // Explicit runs of the restarted worker (rather than waiting for its polls): the claimed
        // job's row is locked, so it is skipped, and the Auth account waits for it.
        for _ in 0..<3 {
            #expect(restarted.cleanupWorker.runDueJobs() == 0)
        }
        #expect(try Self.remainingJobs(server) == 2)
        #expect(!server.fake.listedPrefixes.contains("locations/\(scenario.uid)/"))
        #expect(server.fake.accountDeleteRequestUIDs.isEmpty)

        // The dead server's session ends; its job is picked up and everything finishes.
        let pid = dying.backendProcessID
        _ = try server.pool.withConnection { connection in
            try connection.query("SELECT pg_terminate_backend(\(pid), 10000)")
        }
        #expect(Self.waitForEmptyQueue(server))
        scenario.expectCleanedUp(server.fake)
        #expect(server.fake.listedPrefixes.sorted() == ["categories/\(scenario.uid)/", "locations/\(scenario.uid)/"])
        #expect(server.fake.accountDeleteRequestUIDs == [scenario.uid])
    }

    @Test("two servers on one database never both process one job")
    func twoServersShareTheQueue() throws {
        let server = try TestServer.start()
        defer { server.stop() }
        let second = try server.startApplication()
        defer { second.shutdown() }
        let fake = server.fake
        fake.adminCallDelay = 0.01
        var uids: [String] = []
        var objects: [String] = []
        for index in 0..<8 {
            let uid = Self.uniqueUID("pair-\(index)")
            uids.append(uid)
            let names = ["locations/\(uid)/l/a.jpg", "locations/\(uid)/l/b.jpg", "locations/\(uid)/c.jpg", "categories/\(uid)/k/i.png"]
            objects += names
            fake.addObjects(names, bucket: Self.bucket)
            fake.addAccounts([uid])
        }
        // Deletions alternate between the two servers; both workers compete for every job.
        for (index, uid) in uids.enumerated() {
            let port = index.isMultiple(of: 2) ? server.port : second.port
            let response = try server.request(port: port, "DELETE", "/v1/users/me", token: server.token(for: uid))
            #expect(response.status == 204)
        }
        #expect(Self.waitForEmptyQueue(server))
        let expectedPrefixes = uids.flatMap { ["locations/\($0)/", "categories/\($0)/"] }
        #expect(fake.listedPrefixes.sorted() == expectedPrefixes.sorted(), "each folder job ran exactly once")
        #expect(fake.accountDeleteRequestUIDs.sorted() == uids.sorted(), "each account job ran exactly once")
        #expect(fake.deleteRequestNames.sorted() == objects.sorted(), "each object deleted exactly once")
        #expect(fake.objects(bucket: Self.bucket).isEmpty)
        #expect(Set(fake.deletedAccounts) == Set(uids))
        #expect(fake.issuedTokenCount <= 2, "each server reuses its access token")
    }

    // MARK: Category deletion

    @Test("a category cascade deletes the category folder, each cascaded location's folder and owned objects only")
    func categoryCascade() throws {
        let server = try TestServer.start(.inProcess)
        defer { server.stop() }
        let uid = Self.uniqueUID("cascade")
        let other = Self.uniqueUID("neighbour")
        let token = try server.token(for: uid)
        let doomed = UUID().uuidString.lowercased()
        let kept = UUID().uuidString.lowercased()
        let first = UUID().uuidString.lowercased()
        let second = UUID().uuidString.lowercased()
        let survivor = UUID().uuidString.lowercased()
        let expectedDeleted = [
            "categories/\(uid)/\(doomed)/icon.png", "categories/\(uid)/\(doomed)/old/icon.png",
            "categories/\(uid)/icons/doomed.png",  // the icon, owned, outside the folder
            "locations/\(uid)/\(first)/a.jpg", "locations/\(uid)/\(first)/orphan.jpg",
            "locations/\(uid)/\(second)/b.jpg",
            "locations/\(uid)/shared/s.jpg",  // referenced by a cascaded location
        ]
        let expectedKept = [
            "categories/\(uid)/\(kept)/icon.png", "locations/\(uid)/\(survivor)/c.jpg", "locations/\(uid)/shared/keep.jpg",
            "locations/\(other)/o.jpg", "locations/\(uid)x/trick.jpg", "categories/\(uid)/\(doomed)x/icon.png",
        ]
        server.fake.addObjects(expectedDeleted + expectedKept, bucket: Self.bucket)
        server.fake.addObjects(["locations/\(uid)/b.jpg"], bucket: Self.otherBucket)

        try Self.send(server, "POST", "/v1/categories", token: token, [
            "id": .string(doomed), "name": "Doomed", "icon": .string(Self.firebaseURL("categories/\(uid)/icons/doomed.png")),
        ])
        try Self.send(server, "POST", "/v1/categories", token: token, ["id": .string(kept), "name": "Kept"])
        try Self.send(server, "POST", "/v1/locations", token: token, [
            "id": .string(first.uppercased()), "category_id": .string(doomed.uppercased()), "name": "First",
            "latitude": 1, "longitude": 1,
            "image_urls": [
                .string(Self.firebaseURL("locations/\(uid)/\(first)/a.jpg")),
                .string(Self.firebaseURL("locations/\(uid)/shared/s.jpg")),
                .string(Self.firebaseURL("locations/\(uid)/shared/missing.jpg")),  // already gone: 404 is done
                .string(Self.firebaseURL("locations/\(other)/o.jpg")),
                .string("https://storage.googleapis.com/\(Self.otherBucket)/locations/\(uid)/b.jpg"),
                .string(Self.firebaseURL("locations/\(uid)x/trick.jpg")),
                .string(Self.firebaseURL("locations/\(uid)/../\(other)/o.jpg")),
                .string("https://example.com/locations/\(uid)/\(survivor)/c.jpg"),
            ],
        ])
        try Self.send(server, "POST", "/v1/locations", token: token, [
            "id": .string(second), "category_id": .string(doomed), "name": "Second", "latitude": 2, "longitude": 2,
        ])
        try Self.send(server, "POST", "/v1/locations", token: token, [
            "id": .string(survivor), "category_id": .string(kept), "name": "Survivor", "latitude": 3, "longitude": 3,
            "image_urls": [.string(Self.firebaseURL("locations/\(uid)/\(survivor)/c.jpg"))],
        ])

        #expect(try server.request("DELETE", "/v1/categories/\(doomed)", token: token).status == 204)
        #expect(Self.waitForEmptyQueue(server))
        let deleted = server.fake.deletions
        #expect(Set(deleted.map(\.name)) == Set(expectedDeleted), "deleted: \(deleted.map(\.name).sorted())")
        #expect(deleted.allSatisfy { $0.bucket == Self.bucket })
        #expect(Set(server.fake.objects(bucket: Self.bucket)) == Set(expectedKept))
        #expect(server.fake.objects(bucket: Self.otherBucket) == ["locations/\(uid)/b.jpg"])
        #expect(server.fake.deleteRequestNames.contains("locations/\(uid)/shared/missing.jpg"))
        #expect(server.fake.accountDeleteRequestUIDs.isEmpty, "a category delete never touches the account")
        // The survivor and its category are untouched.
        #expect(try server.request("GET", "/v1/locations/\(survivor)", token: token).status == 200)
    }

    @Test("a reassign delete removes only the category's folder")
    func categoryReassign() throws {
        let server = try TestServer.start(.inProcess)
        defer { server.stop() }
        let uid = Self.uniqueUID("reassign")
        let token = try server.token(for: uid)
        let source = UUID().uuidString.lowercased()
        let target = UUID().uuidString.lowercased()
        let moved = UUID().uuidString.lowercased()
        let folder = ["categories/\(uid)/\(source)/icon.png", "categories/\(uid)/\(source)/big/icon.png"]
        let kept = [
            "categories/\(uid)/icons/source.png", "locations/\(uid)/\(moved)/a.jpg", "categories/\(uid)/\(target)/icon.png",
        ]
        server.fake.addObjects(folder + kept, bucket: Self.bucket)
        try Self.send(server, "POST", "/v1/categories", token: token, [
            "id": .string(source), "name": "Source", "icon": .string(Self.firebaseURL("categories/\(uid)/icons/source.png")),
        ])
        try Self.send(server, "POST", "/v1/categories", token: token, ["id": .string(target), "name": "Target"])
        try Self.send(server, "POST", "/v1/locations", token: token, [
            "id": .string(moved), "category_id": .string(source), "name": "Moved", "latitude": 1, "longitude": 1,
            "image_urls": [.string(Self.firebaseURL("locations/\(uid)/\(moved)/a.jpg"))],
        ])
        #expect(try server.request("DELETE", "/v1/categories/\(source)?reassign_category_id=\(target)", token: token).status == 204)
        #expect(Self.waitForEmptyQueue(server))
        #expect(Set(server.fake.deletions.map(\.name)) == Set(folder))
        #expect(Set(server.fake.objects(bucket: Self.bucket)) == Set(kept))
        #expect(server.fake.listedPrefixes.sorted() == ["categories/\(uid)/\(source.uppercased())/", "categories/\(uid)/\(source)/"])
        let location = try server.request("GET", "/v1/locations/\(moved)", token: token)
        #expect(location.object["category_id"]?.stringValue == target)
    }

    // MARK: Operations

    @Test("/metrics shows the queue: pending while it waits, failed while Google fails, zero once done")
    func metricsShowTheQueue() throws {
        let server = try TestServer.start(.inProcess)
        defer { server.stop() }
        #expect(try Self.cleanupGauge(server, "pending") == 0 && Self.cleanupGauge(server, "failed") == 0)
        let uid = Self.uniqueUID("metrics")
        server.fake.addObjects(["locations/\(uid)/a.jpg"], bucket: Self.bucket)
        server.fake.failNext(.storageList, count: 100_000, status: 503)
        #expect(try server.request("DELETE", "/v1/users/me", as: uid).status == 204)
        // Both Storage jobs fail and are retried; the Auth job waits without having run.
        #expect(eventually {
            (try? Self.cleanupGauge(server, "failed")) == 2 && (try? Self.cleanupGauge(server, "pending")) == 1
        })
        server.fake.clearFailures()
        #expect(Self.waitForEmptyQueue(server))
        #expect(eventually {
            (try? Self.cleanupGauge(server, "failed")) == 0 && (try? Self.cleanupGauge(server, "pending")) == 0
        })
        #expect(server.fake.objects(bucket: Self.bucket).isEmpty)
    }

    @Test("with no credentials configured the jobs stay queued, requests still succeed, and the server says so once")
    func noCredentials() throws {
        let log = CapturedLog()
        let server = try TestServer.start(.inProcess, configure: { $0.googleApplicationCredentials = nil }, logger: log.logger)
        defer { server.stop() }
        for index in 0..<2 {
            let uid = Self.uniqueUID("offline-\(index)")
            #expect(try server.request("DELETE", "/v1/users/me", as: uid).status == 204)
        }
        let doomed = UUID().uuidString
        let uid = Self.uniqueUID("offline-category")
        try Self.send(server, "POST", "/v1/categories", token: server.token(for: uid), ["id": .string(doomed), "name": "Doomed"])
        #expect(try server.request("DELETE", "/v1/categories/\(doomed)", as: uid).status == 204)
        // 3 jobs per account deletion, 2 for the category's folder (both letter cases of its id).
        // The worker polls (and counts the queue) without running anything.
        #expect(eventually { (try? Self.cleanupGauge(server, "pending")) == 8 })
        // An explicit run (rather than waiting for polls) runs nothing without credentials.
        #expect(server.application.cleanupWorker.runDueJobs() == 0)
        #expect(try Self.remainingJobs(server) == 8)
        #expect(server.fake.requests.allSatisfy { $0.endpoint == .certificates }, "no call to Google's admin APIs")
        let notices = log.messages(containing: "GOOGLE_APPLICATION_CREDENTIALS")
        #expect(notices.count == 1, "said once: \(notices.map(\.message))")
        #expect(notices.first.map { $0.level >= .warning } == true)
    }

    // MARK: Service-account access token

    @Test("the access token is obtained with a genuine RS256 assertion and reused across jobs")
    func accessTokenReused() throws {
        let server = try TestServer.start(.inProcess)
        defer { server.stop() }
        for index in 0..<3 {
            let uid = Self.uniqueUID("token-\(index)")
            server.fake.addObjects(["locations/\(uid)/a.jpg", "categories/\(uid)/b.png"], bucket: Self.bucket)
            server.fake.addAccounts([uid])
            #expect(try server.request("DELETE", "/v1/users/me", as: uid).status == 204)
            #expect(Self.waitForEmptyQueue(server))
        }
        let fake = server.fake
        #expect(fake.deletedAccounts.count == 3 && fake.objects(bucket: Self.bucket).isEmpty)
        #expect(fake.issuedTokenCount == 1)
        let claims = try #require(fake.lastAssertionClaims)
        #expect(claims["iss"]?.stringValue == TestServiceAccount.clientEmail)
        #expect(claims["aud"]?.stringValue == server.googleTokenURI)
        #expect(claims["scope"]?.stringValue == "https://www.googleapis.com/auth/cloud-platform")
        let adminCalls = fake.requests.filter {
            [.storageList, .storageDelete, .accountsDelete].contains($0.endpoint)
        }
        #expect(adminCalls.count >= 9)
        #expect(adminCalls.allSatisfy { $0.header("Authorization") == "Bearer fake-access-token-1" })
        let tokenRequest = try #require(fake.requests.first { $0.endpoint == .token })
        #expect(tokenRequest.header("Content-Type") == "application/x-www-form-urlencoded")
    }

    @Test("an access token close to expiry is replaced by a new one")
    func accessTokenRenewedNearExpiry() throws {
        // Tokens live 242 s; the provider renews 240 s before expiry, so each is usable for 2 s
        // of the server's wall clock, which the test moves.
        let clock = ManualClock(Date().timeIntervalSince1970)
        let server = try TestServer.start(.inProcess, 
            dependencies: { $0.wallClock = clock.wallClock }, google: { $0.tokenLifetime = 242 })
        defer { server.stop() }
        let first = Self.uniqueUID("renew-a")
        #expect(try server.request("DELETE", "/v1/users/me", as: first).status == 204)
        #expect(Self.waitForEmptyQueue(server))
        let issued = server.fake.issuedTokenCount
        #expect(issued >= 1)
        clock.advance(by: 2.2)
        let second = Self.uniqueUID("renew-b")
        #expect(try server.request("DELETE", "/v1/users/me", as: second).status == 204)
        #expect(Self.waitForEmptyQueue(server))
        #expect(server.fake.issuedTokenCount > issued)
        #expect(server.fake.accountDeleteRequestUIDs == [first, second])
    }

    @Test("a service account whose key Google does not know gets no token, and nothing is deleted")
    func wrongServiceAccountKey() throws {
        let server = try TestServer.start(.inProcess, configure: { configuration in
            guard let path = try? Self.writeServiceAccountFile(
                key: TestKeys.attacker, tokenURI: configuration.identityAPIURL + "/token")
            else { return }
            configuration.googleApplicationCredentials = path
        })
        defer { server.stop() }
        let uid = Self.uniqueUID("bad-key")
        server.fake.addObjects(["locations/\(uid)/a.jpg"], bucket: Self.bucket)
        server.fake.addAccounts([uid])
        #expect(try server.request("DELETE", "/v1/users/me", as: uid).status == 204)
        #expect(eventually { server.fake.requestCount(.token) >= 2 && (try? Self.cleanupGauge(server, "failed")) == 2 })
        #expect(server.fake.issuedTokenCount == 0)
        #expect(server.fake.requests.allSatisfy { $0.endpoint == .certificates || $0.endpoint == .token })
        #expect(server.fake.objects(bucket: Self.bucket) == ["locations/\(uid)/a.jpg"])
        #expect(server.fake.accounts.contains(uid))
        let lastError: String? = try server.pool.withConnection { connection in
            try connection.query("SELECT last_error FROM cleanup_jobs WHERE last_error IS NOT NULL LIMIT 1").first?.decode(0)
        }
        #expect(lastError?.contains("Invalid JWT Signature") == true, "\(lastError ?? "no error")")
    }

    @Test("a missing or malformed credentials file stops the server at start, naming the problem")
    func badCredentialsFile() throws {
        let missing = "/nonexistent/locify-\(UUID().uuidString).json"
        do {
            let server = try TestServer.start(.inProcess, configure: { $0.googleApplicationCredentials = missing })
            server.stop()
            Issue.record("the server started with a missing credentials file")
        } catch {
            #expect("\(error)".contains(missing))
        }
        let malformed = TestScratch.uniquePath("service-account.json")
        try Data(#"{"type": "service_account", "project_id": "p"}"#.utf8).write(to: malformed)
        do {
            let server = try TestServer.start(.inProcess, configure: { $0.googleApplicationCredentials = malformed.path })
            server.stop()
            Issue.record("the server started with an incomplete credentials file")
        } catch {
            #expect("\(error)".contains("private_key"))
        }
    }

    /// Writes a service-account key file signed by `key` (same account otherwise); returns its path.
    static func writeServiceAccountFile(key: TestKeyPair, tokenURI: String) throws -> String {
        let json = JSONWriter.encode([
            "type": "service_account", "project_id": .string(TestConstants.projectID),
            "private_key_id": .string(TestKeys.service.kid), "private_key": .string(key.privateKeyPEM),
            "client_email": .string(TestServiceAccount.clientEmail), "token_uri": .string(tokenURI),
        ])
        let file = TestScratch.uniquePath("service-account.json")
        try Data(json).write(to: file)
        return file.path
    }
}
