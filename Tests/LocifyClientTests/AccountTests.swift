import Foundation
import LocifyClient
import Synchronization
import Testing
import TestSupport
import TestSupportServer

/// Accounts (issue 26 item 4): sign-out stops syncing and clears the store without losing an edit
/// silently; a store and its outbox belong to one user.
@Suite("LocifyClient accounts: sign-out, a store bound to its user")
struct AccountTests {
    @Test("sign-out pushes what is pending, stops the schedule and live mode, and leaves an empty store for the next user")
    func signOut() async throws {
        let server = try TestServer.start()
        defer { server.stop() }
        let (alice, bob) = ClientHarness.twoUsers(server)
        let store = InMemoryStore()
        let engine = SyncEngine(api: alice.api(), store: store)
        let scheduler = await engine.start()
        let live = engine.live()
        #expect(await until(.seconds(60)) { await engine.status.lastSyncedAt != nil }, "live mode has caught up")
        try await engine.saveCategory(name: "Alice's")
        try await engine.signOut()
        #expect(try await alice.api().allCategories().map(\.name).contains("Alice's"), "pushed before the store was cleared")
        #expect(store.contents == LocalSnapshot(), "nothing of Alice stays on the device")
        #expect(await scheduler.nextAttempt == nil, "the schedule plans nothing more")
        await live.value  // live mode ended with the sign-out
        #expect(await engine.status.pendingChanges == 0)

        // Bob signs in on the same device: the store is his.
        let asBob = SyncEngine(api: bob.api(), store: store)
        try await asBob.saveCategory(name: "Bob's")
        try await asBob.sync()
        #expect(try await asBob.categories().map(\.name).allSatisfy { !$0.hasPrefix("Alice") })
        #expect(store.contents.metadata.userID == bob.uid)
    }

    @Test("offline, sign-out erases nothing and says how many changes would be lost, unless told to discard them")
    func signOutWithUnsyncedChanges() async throws {
        let store = InMemoryStore()
        let engine = SyncEngine(api: unreachableAPI(), store: store)
        try await engine.saveCategory(name: "Not yet pushed")
        let refusal = await #expect(throws: LocifyError.unsyncedChanges(1)) { try await engine.signOut() }
        #expect(refusal?.localizedDescription.contains("1 local changes are not synced yet") == true)
        #expect(store.contents.outbox.count == 1, "the edit is still there")
        try await engine.signOut(discardingUnsyncedChanges: true)
        #expect(store.contents == LocalSnapshot())
    }

    @Test("a token that turns into another user's never pushes the first user's outbox")
    func tokenOfAnotherUser() async throws {
        let server = try TestServer.start()
        defer { server.stop() }
        let (alice, bob) = ClientHarness.twoUsers(server)
        let signedIn = Mutex(alice.tokens)
        let api = LocifyAPIClient(baseURL: alice.baseURL, timeout: 20) { forceRefresh in
            try await signedIn.withLock { $0 }(forceRefresh)
        }
        let engine = SyncEngine(api: api, store: InMemoryStore())
        try await engine.saveCategory(name: "Alice's first")
        try await engine.sync()
        try await engine.saveCategory(name: "Alice's second")
        signedIn.withLock { $0 = bob.tokens }  // the app switched accounts without signing Alice out
        await #expect {
            try await engine.sync()
        } throws: { error in
            guard case LocifyError.wrongAccount(let storeUser, let tokenUser) = error else { return false }
            return storeUser == alice.uid && tokenUser == bob.uid && error.localizedDescription.contains("sign \(alice.uid) out first")
        }
        #expect(try await bob.api().allCategories().allSatisfy { !$0.name.hasPrefix("Alice") })
        #expect(try await engine.pendingChanges().count == 1, "Alice's edit stays queued for Alice")
    }

    @Test("sign-out discarding unsynced changes leaves no photo file, and no erased row readable in the database, its WAL or -shm (issue 34 item 6)")
    func signOutLeavesNothingOnDisk() async throws {
        let server = try TestServer.start()
        defer { server.stop() }
        let harness = ClientHarness(server)
        let file = TemporaryStoreFile()
        defer { file.remove() }
        let photos = try PhotoFolder()
        defer { photos.remove() }
        let engine = SyncEngine(api: harness.api(), store: try file.open())
        await engine.setImageUploader(FakeUploader(), settings: photos.settings)
        // Lowercase letters only: the store also keeps a folded copy of names for search.
        let secret = "zanzibarhideawayq"
        let category = try await engine.saveCategory(name: "Spots of \(secret)")
        try await engine.saveLocation(
            LocationDraft(categoryID: category.id, name: "\(secret) beach", address: "\(secret) road", latitude: 1, longitude: 2))
        try await engine.sync()
        let photo = try photos.photo("cove.jpg")
        try await engine.saveLocation(
            LocationDraft(
                categoryID: category.id, name: "\(secret) cove", description: "not pushed yet", latitude: 3, longitude: 4,
                imageURLs: [photo.absoluteString]))

        try await engine.signOut(discardingUnsyncedChanges: true)
        #expect(!FileManager.default.fileExists(atPath: photo.path), "the photo not yet uploaded is gone")
        #expect(try await engine.localSnapshot() == LocalSnapshot())
        for suffix in ["", "-wal", "-shm"] {
            let bytes = (try? Data(contentsOf: URL(fileURLWithPath: file.url.path + suffix))) ?? Data()
            #expect(bytes.range(of: Data(secret.utf8)) == nil, "\(file.url.lastPathComponent)\(suffix) still holds a signed-out user's place")
        }
    }

    @Test("sign-out counts a photo not yet uploaded as unsynced: it uploads it first, or erases nothing")
    func signOutWithPendingPhoto() async throws {
        let server = try TestServer.start()
        defer { server.stop() }
        let harness = ClientHarness(server)
        let photos = try PhotoFolder()
        defer { photos.remove() }
        // Uploads fail until the test says otherwise: how many attempts the rounds started by
        // sync(), uploadPendingImages() and the sign-out each make depends on when they start.
        let uploader = FakeUploader(Array(repeating: .fail, count: 10_000))
        let engine = SyncEngine(api: harness.api(), store: InMemoryStore())
        await engine.setImageUploader(uploader, settings: ImageUploadTests.settings(folder: photos.folder))
        let category = try await engine.saveCategory(name: "Trips")
        let photo = try photos.photo("kept.jpg")
        let place = try await engine.saveLocation(
            LocationDraft(categoryID: category.id, name: "Beach", latitude: 1, longitude: 2, imageURLs: [photo.absoluteString]))
        try await engine.sync()
        await engine.uploadPendingImages()
        #expect(try await engine.pendingChanges().isEmpty)
        #expect(try await engine.pendingImageUploads() == 1)

        await #expect(throws: LocifyError.unsyncedChanges(1)) { try await engine.signOut() }
        #expect(FileManager.default.fileExists(atPath: photo.path), "nothing erased")
        uploader.setScript([])
        try await engine.signOut()  // the uploads succeed now
        #expect(try await harness.api().location(id: place.id).imageURLs == [FakeUploader.remoteURL(photo).absoluteString])
        #expect(try await engine.pendingImageUploads() == 0)
    }
}
