import FirebaseAdmin
import Foundation
import JSON
import LocifyRules
import Postgres
import Testing
import TestSupport
import TestSupportServer

/// Issue 13, item 7, end to end: a poison image URL never stalls a sync. URLs whose Storage
/// object name decodes to a control character (NUL) or to more than 1,024 bytes are refused at
/// write time (400 E001); rows stored before the rule are skipped by clean-up and counted in
/// `/metrics`; Google's permanent 4xx ends a job as `failed_permanent`; the account deletion is
/// never blocked by one object.
@Suite("Hostile input: poison values never stall a sync")
struct HostilePoisonValueTests {
    static let bucket = TestConstants.bucket
    static let longName = String(repeating: "n", count: 1_100)

    static func firebaseURL(_ encodedPath: String) -> String {
        "https://firebasestorage.googleapis.com/v0/b/\(bucket)/o/\(encodedPath)?alt=media&token=abc"
    }

    /// The poison URLs of `uid`: NUL after decoding (both URL forms), and an object name of 1,100+ bytes.
    static func poisonURLs(_ uid: String) -> [String] {
        [
            firebaseURL("locations%2F\(uid)%2Fa%00b"),
            "https://storage.googleapis.com/\(bucket)/locations/\(uid)/a%00b.jpg",
            firebaseURL("locations%2F\(uid)%2F\(longName)"),
        ]
    }

    /// `name{labels}` from `/metrics`, or nil.
    static func metric(_ server: TestServer, _ series: String) throws -> Int? {
        let text = try server.request("GET", "/metrics").text
        guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix(series + " ") }) else { return nil }
        return Int(line.dropFirst(series.count + 1))
    }

    @Test("image URLs and icons whose object name decodes to a NUL or to over 1,024 bytes are refused with 400 E001")
    func refusedAtWriteTime() throws {
        let user = try APIUser.fresh()
        let category = newID()
        try user.createCategory(category)
        for url in Self.poisonURLs(user.uid) {
            let created = try user.post(
                "/v1/locations", locationBody(id: newID(), categoryID: category, ["image_urls": [.string(url)]]))
            #expect(created.status == 400 && created.errorCode == "E001" && created.errorField == "image_urls", "\(created.text)")
            let location = newID()
            try user.createLocation(location, in: category)
            let replaced = try user.put(
                "/v1/locations/\(location)", locationBody(id: location, categoryID: category, ["image_urls": [.string(url)]]))
            #expect(replaced.status == 400 && replaced.errorCode == "E001" && replaced.errorField == "image_urls")
            let icon = try user.post("/v1/categories", categoryBody(id: newID(), ["icon": .string(url)]))
            #expect(icon.status == 400 && icon.errorCode == "E001" && icon.errorField == "icon")
            // In a push batch the change is refused alone; the others apply.
            let pushed = try user.post("/v1/sync/push", ["changes": [
                ["type": "location", "action": "create", "data": locationBody(
                    id: newID(), categoryID: category, ["image_urls": [.string(url)], "updated_at": "2025-05-31T10:00:00Z"])],
                ["type": "category", "action": "create", "data": categoryBody(id: newID(), ["updated_at": "2025-05-31T10:00:00Z"])],
            ]])
            #expect(pushed.status == 200)
            let results = pushed.object["results"]?.arrayValue ?? []
            #expect(results.count == 2)
            #expect(results.first?.objectValue?["status"]?.stringValue == "error")
            #expect(results.first?.objectValue?["error"]?.objectValue?["code"]?.stringValue == "E001")
            #expect(results.last?.objectValue?["status"]?.stringValue == "applied")
        }
        // Names at the limits are fine: exactly 1,024 bytes, and non-ASCII text.
        let prefix = "locations/\(user.uid)/"
        let exact = prefix + String(repeating: "x", count: 1024 - prefix.utf8.count)
        for url in [Self.firebaseURL(PercentEncoding.encodeComponent(exact)), Self.firebaseURL("locations%2F\(user.uid)%2Fcaf%C3%A9.jpg")] {
            let created = try user.post(
                "/v1/locations", locationBody(id: newID(), categoryID: category, ["image_urls": [.string(url)]]))
            #expect(created.status == 201, "\(created.text)")
        }
    }

    @Test("rows stored before the rule: a cascading category delete and a push deleting a category succeed; the objects are skipped and counted")
    func storedPoisonSkipped() throws {
        let server = try TestServer.start(.inProcess)
        defer { server.stop() }
        let user = try APIUser.fresh(on: server)
        let first = newID()
        let second = newID()
        try user.createCategory(first)
        try user.createCategory(second)
        let firstLocation = newID()
        let secondLocation = newID()
        try user.createLocation(firstLocation, in: first)
        try user.createLocation(secondLocation, in: second)
        // As written before the rule existed (so before migration 0007 too: images_outside_folder NULL).
        let poison = Self.poisonURLs(user.uid) + [Self.firebaseURL("locations%2F\(user.uid)%2Fgood.jpg")]
        try server.pool.withConnection { connection in
            try connection.query(
                "UPDATE locations SET image_urls = \(poison), images_outside_folder = NULL WHERE user_id = \(user.uid)")
        }

        let deleted = try user.delete("/v1/categories/\(first)")
        #expect(deleted.status == 204, "\(deleted.text)")
        let pushed = try user.post("/v1/sync/push", ["changes": [
            ["type": "category", "action": "delete", "data": ["id": .string(second), "updated_at": "2030-01-01T00:00:00Z"]],
        ]])
        #expect(pushed.status == 200, "\(pushed.text)")
        #expect(pushed.object["results"]?.arrayValue?.first?.objectValue?["status"]?.stringValue == "applied", "\(pushed.text)")

        // Counted as the cascade worker settles the cascades, each batch queuing its locations' clean-up.
        #expect(eventually(timeout: .seconds(60)) {
            (try? Self.metric(server, #"cleanup_jobs_skipped_total{reason="control_character"}"#)) == 4
                && (try? Self.metric(server, #"cleanup_jobs_skipped_total{reason="name_too_long"}"#)) == 2
        })
        // The good object's job runs (the worker may have finished it already); no poison reaches Google.
        #expect(eventually(timeout: .seconds(60)) {
            server.fake.requests.contains { $0.endpoint == .storageDelete && $0.path.hasSuffix("%2Fgood.jpg") }
        })
        #expect(server.fake.requests.allSatisfy { !$0.path.contains("%00") && !$0.path.contains(Self.longName) })
        let targets: [String] = try server.pool.withConnection { connection in
            try connection.query("SELECT target FROM cleanup_jobs WHERE user_id = \(user.uid)").map { try $0.decode(0) }
        }
        #expect(targets.allSatisfy { StorageObjectReference.objectNameProblem($0) == nil })
    }

    @Test("an object Google refuses for good (400) ends its job as failed_permanent, shown in /metrics; the account is still deleted")
    func accountDeletionNotBlocked() throws {
        let server = try TestServer.start(.inProcess)
        defer { server.stop() }
        let uid = "poison-account-" + UUID().uuidString.prefix(8).lowercased()
        let objects = ["locations/\(uid)/l1/a.jpg", "locations/\(uid)/l1/refused.jpg", "locations/\(uid)/l2/c.jpg", "categories/\(uid)/c/i.png"]
        server.fake.addObjects(objects, bucket: Self.bucket)
        server.fake.addAccounts([uid])
        server.fake.refuseDeletion(of: "locations/\(uid)/l1/refused.jpg")

        #expect(try server.request("DELETE", "/v1/users/me", as: uid).status == 204)
        #expect(eventually(timeout: .seconds(60)) { server.fake.deletedAccounts == [uid] })
        #expect(server.fake.objects(bucket: Self.bucket) == ["locations/\(uid)/l1/refused.jpg"])
        #expect(eventually(timeout: .seconds(30)) {
            (try? Self.metric(server, #"cleanup_jobs{state="failed_permanent"}"#)) == 1
        })
        #expect(try Self.metric(server, #"cleanup_jobs{state="pending"}"#) == 0)
        #expect(try Self.metric(server, #"cleanup_jobs{state="failed"}"#) == 0)
        let left: [(String, String)] = try server.pool.withConnection { connection in
            try connection.query("SELECT target, state FROM cleanup_jobs").map { (try $0.decode(0), try $0.decode(1)) }
        }
        #expect(left.count == 1 && left.first?.0 == "locations/\(uid)/" && left.first?.1 == "failed_permanent")
        // Never retried: the refused object was asked for once.
        let attempts = server.fake.requests.filter { $0.endpoint == .storageDelete && $0.path.hasSuffix("refused.jpg") }.count
        Thread.sleep(forTimeInterval: 1)
        #expect(server.fake.requests.filter { $0.endpoint == .storageDelete && $0.path.hasSuffix("refused.jpg") }.count == attempts)
        #expect(attempts == 1)
    }
}
