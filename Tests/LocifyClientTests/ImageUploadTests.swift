import Foundation
import LocifyClient
import Synchronization
import Testing
import TestSupport
import TestSupportServer

/// An uploader as an app writes one, scripted call by call: it fails, hangs (ignoring
/// cancellation until released, then answers late) or succeeds with `https://storage.test/<file>`.
final class FakeUploader: ImageUploader {
    enum Behaviour: Sendable { case fail, hang, succeed }

    private struct State {
        var script: [Behaviour]
        var calls: [(file: String, location: UUID)] = []
        var running = 0
        var mostRunning = 0
        var hung: [CheckedContinuation<Void, Never>] = []
    }

    private let state: Mutex<State>

    init(_ script: [Behaviour] = []) { state = Mutex(State(script: script)) }

    func upload(_ file: URL, locationID: UUID) async throws -> URL {
        let behaviour = state.withLock { state in
            state.calls.append((file.lastPathComponent, locationID))
            state.running += 1
            state.mostRunning = max(state.mostRunning, state.running)
            return state.script.isEmpty ? Behaviour.succeed : state.script.removeFirst()
        }
        defer { state.withLock { $0.running -= 1 } }
        switch behaviour {
        case .fail:
            throw URLError(.notConnectedToInternet)
        case .hang:
            await withCheckedContinuation { continuation in state.withLock { $0.hung.append(continuation) } }
        case .succeed:
            try await Task.sleep(for: .milliseconds(20))
        }
        return Self.remoteURL(file)
    }

    static func remoteURL(_ file: URL) -> URL {
        // safe because: file names here are letters, digits and dots
        URL(string: "https://storage.test/\(file.lastPathComponent)")!
    }

    var calls: [(file: String, location: UUID)] { state.withLock { $0.calls } }
    var mostRunning: Int { state.withLock { $0.mostRunning } }
    /// Calls hanging now.
    var hanging: Int { state.withLock { $0.hung.count } }

    /// Replaces what the next calls do (empty: they succeed).
    func setScript(_ script: [Behaviour]) { state.withLock { $0.script = script } }

    /// Lets every hung call answer (late).
    func releaseHung() {
        for continuation in state.withLock({ state in defer { state.hung = [] }; return state.hung }) { continuation.resume() }
    }
}

/// Photo files in a temporary folder, as an app keeps photos taken offline.
struct PhotoFolder {
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("locify-photos-\(UUID().uuidString)")

    init() throws { try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true) }

    /// A new photo file; returns its `file://` URL.
    func photo(_ name: String) throws -> URL {
        let url = folder.appendingPathComponent(name)
        try Data("jpeg \(name)".utf8).write(to: url)
        return url
    }

    /// Upload settings naming this folder as the photo folder.
    var settings: ImageUploadSettings {
        var settings = ImageUploadSettings()
        settings.photoDirectory = folder
        return settings
    }

    func remove() { try? FileManager.default.removeItem(at: folder) }
}

/// Issue 26 item 6, issue 34 items 1 and 2: photos taken offline wait on the device in the app's
/// photo folder, the place is pushed at once without them, the app's uploader uploads them in a
/// queue of their own, and each URL follows in an edit of its own; the server never sees a file URL.
@Suite("LocifyClient photos taken offline: uploaded in their own queue, never holding back a place")
struct ImageUploadTests {
    /// Settings that never pause for real between attempts, with `folder` as the photo folder.
    static func settings(
        attempts: Int = 2, timeout: Duration = .seconds(60), concurrent: Int = 2, folder: URL? = nil
    ) -> ImageUploadSettings {
        var settings = ImageUploadSettings()
        if let folder { settings.photoDirectory = folder }
        settings.attemptsPerSync = attempts
        settings.timeout = timeout
        settings.maxConcurrentUploads = concurrent
        settings.sleep = { _ in }
        return settings
    }

    private static func start(_ uploader: FakeUploader, settings: ImageUploadSettings = settings(), store: (any LocalStore)? = nil)
        async throws -> (TestServer, ClientHarness, Device, PhotoFolder)
    {
        let server = try TestServer.start()
        let harness = ClientHarness(server)
        let device = await Device.make(harness, "photos", store: store)
        let photos = try PhotoFolder()
        var settings = settings
        settings.photoDirectory = photos.folder
        await device.engine.setImageUploader(uploader, settings: settings)
        return (server, harness, device, photos)
    }

    /// Uploads what waits, then syncs: the photos' URLs reach the server.
    @discardableResult
    private static func uploadAndSync(_ device: Device) async throws -> SyncReport {
        try await device.engine.sync()
        await device.engine.uploadPendingImages()
        return try await device.engine.sync()
    }

    private static func refusals(_ device: Device) -> [SyncEvent] {
        device.events.all.filter { if case .changeRejected = $0 { true } else { false } }
    }

    @Test("a place with photos taken offline reaches the server with their download URLs; the files are removed")
    func uploadedAndFollowed() async throws {
        let uploader = FakeUploader()
        let (server, harness, device, photos) = try await Self.start(uploader)
        defer { device.done(); server.stop(); photos.remove() }
        let category = try await device.engine.saveCategory(name: "Trips")
        let first = try photos.photo("first.jpg"), second = try photos.photo("second.jpg")
        let kept = "https://example.com/already-online.jpg"
        let place = try await device.engine.saveLocation(
            LocationDraft(
                categoryID: category.id, name: "Beach", latitude: 1, longitude: 2,
                imageURLs: [first.absoluteString, kept, second.absoluteString]))
        #expect(place.imageURLs == ["file:first.jpg", kept, "file:second.jpg"], "kept relative to the photo folder")
        #expect(place.imageURLs.map { photos.settings.file(for: $0) } == [first, nil, second], "the app shows the local files meanwhile")
        #expect(try await device.engine.pendingImageUploads() == 2)

        let report = try await Self.uploadAndSync(device)
        let expected = [FakeUploader.remoteURL(first).absoluteString, kept, FakeUploader.remoteURL(second).absoluteString]
        #expect(report.imagesUploaded == 2)
        #expect(try await harness.api().location(id: place.id).imageURLs == expected)
        #expect(try await device.engine.location(id: place.id)?.imageURLs == expected)
        #expect(uploader.calls.map(\.location) == [place.id, place.id])
        #expect(!FileManager.default.fileExists(atPath: first.path) && !FileManager.default.fileExists(atPath: second.path))
        #expect(try await device.engine.pendingImageUploads() == 0)
        #expect(Self.refusals(device).isEmpty)
        try await expectConverged([device], harness.api())
    }

    @Test("while a photo fails to upload, its place and the category delete made after it are pushed; the photo waits alone")
    func failedUploadHoldsNothing() async throws {
        let uploader = FakeUploader([.fail, .fail])
        let (server, harness, device, photos) = try await Self.start(uploader)
        defer { device.done(); server.stop(); photos.remove() }
        let trips = try await device.engine.saveCategory(name: "Trips")
        let photo = try photos.photo("held.jpg")
        let held = try await device.engine.saveLocation(
            LocationDraft(categoryID: trips.id, name: "Held", latitude: 1, longitude: 2, imageURLs: [photo.absoluteString]))
        let plain = try await device.engine.saveLocation(LocationDraft(categoryID: trips.id, name: "Plain", latitude: 3, longitude: 4))

        try await device.engine.sync()
        await device.engine.uploadPendingImages()
        let api = harness.api()
        #expect(Set(try await api.allLocations().map(\.id)) == [held.id, plain.id], "both places went on")
        #expect(try await api.location(id: held.id).imageURLs.isEmpty, "without the photo still to upload")
        #expect(try await device.engine.pendingChanges().isEmpty)
        #expect(try await device.engine.pendingImageUploads() == 1)
        #expect(await device.events.contains { if case .imageUploadFailed(held.id, "file:held.jpg", _) = $0 { true } else { false } })

        try await device.engine.deleteCategory(id: trips.id)
        let report = try await Self.uploadAndSync(device)
        #expect(uploader.calls.count == 2, "no upload for a place deleted meanwhile")
        #expect(report.imagesUploaded == 0)
        #expect(try await device.engine.pendingImageUploads() == 0)
        #expect(!FileManager.default.fileExists(atPath: photo.path), "its file goes with its place")
        #expect(try await api.allLocations().isEmpty)
        #expect(try await !api.allCategories().contains { $0.id == trips.id })
        #expect(Self.refusals(device).isEmpty)
        try await expectConverged([device], api)
    }

    @Test("an upload that hangs is left behind at its timeout, and its late answer changes nothing")
    func hangingUploadIsLeftBehind() async throws {
        let uploader = FakeUploader([.hang, .succeed])
        let (server, harness, device, photos) = try await Self.start(uploader, settings: Self.settings(timeout: .milliseconds(200)))
        defer { device.done(); server.stop(); photos.remove() }
        let category = try await device.engine.saveCategory(name: "Trips")
        let photo = try photos.photo("slow.jpg")
        let place = try await device.engine.saveLocation(
            LocationDraft(categoryID: category.id, name: "Slow", latitude: 1, longitude: 2, imageURLs: [photo.absoluteString]))

        let report = try await Self.uploadAndSync(device)
        #expect(report.imagesUploaded == 1)
        #expect(uploader.calls.count == 2, "the second attempt ran while the first still hung")
        let remote = FakeUploader.remoteURL(photo).absoluteString
        #expect(try await harness.api().location(id: place.id).imageURLs == [remote])

        uploader.releaseHung()
        try await Task.sleep(for: .milliseconds(100))
        #expect(try await device.engine.location(id: place.id)?.imageURLs == [remote])
        #expect(try await device.engine.pendingChanges().isEmpty)
        try await expectConverged([device], harness.api())
    }

    @Test("a photo whose file is gone is dropped from its place and reported; the place syncs")
    func missingFile() async throws {
        let uploader = FakeUploader()
        let (server, harness, device, photos) = try await Self.start(uploader)
        defer { device.done(); server.stop(); photos.remove() }
        let category = try await device.engine.saveCategory(name: "Trips")
        let gone = try photos.photo("gone.jpg"), kept = try photos.photo("kept.jpg")
        let place = try await device.engine.saveLocation(
            LocationDraft(
                categoryID: category.id, name: "Partly", latitude: 1, longitude: 2, imageURLs: [gone.absoluteString, kept.absoluteString]))
        try FileManager.default.removeItem(at: gone)

        try await Self.uploadAndSync(device)
        #expect(try await harness.api().location(id: place.id).imageURLs == [FakeUploader.remoteURL(kept).absoluteString])
        #expect(await device.events.contains { if case .imageMissing(place.id, "file:gone.jpg") = $0 { true } else { false } })
        #expect(uploader.calls.map(\.file) == ["kept.jpg"])
        try await expectConverged([device], harness.api())
    }

    @Test("at most maxConcurrentUploads photos upload at once")
    func boundedConcurrency() async throws {
        let uploader = FakeUploader()
        let (server, harness, device, photos) = try await Self.start(uploader, settings: Self.settings(concurrent: 2))
        defer { device.done(); server.stop(); photos.remove() }
        let category = try await device.engine.saveCategory(name: "Trips")
        for index in 0..<4 {
            let urls = try (0..<2).map { try photos.photo("p\(index)-\($0).jpg").absoluteString }
            try await device.engine.saveLocation(LocationDraft(categoryID: category.id, name: "P\(index)", latitude: 1, longitude: 2, imageURLs: urls))
        }
        let report = try await Self.uploadAndSync(device)
        #expect(report.imagesUploaded == 8)
        #expect(uploader.mostRunning <= 2)
        #expect(try await harness.api().allLocations().allSatisfy { $0.imageURLs.allSatisfy { $0.hasPrefix("https://storage.test/") } })
        try await expectConverged([device], harness.api())
    }

    @Test("a relaunched app uploads what the last run could not, from the store on disk")
    func survivesRelaunch() async throws {
        let file = TemporaryStoreFile()
        defer { file.remove() }
        let failing = FakeUploader([.fail, .fail])
        let (server, harness, device, photos) = try await Self.start(failing, store: try file.open())
        defer { server.stop(); photos.remove() }
        let category = try await device.engine.saveCategory(name: "Trips")
        let photo = try photos.photo("later.jpg")
        let place = try await device.engine.saveLocation(
            LocationDraft(categoryID: category.id, name: "Later", latitude: 1, longitude: 2, imageURLs: [photo.absoluteString]))
        try await device.engine.sync()
        await device.engine.uploadPendingImages()
        device.done()

        let relaunched = await Device.make(harness, "relaunched", store: try file.open())
        defer { relaunched.done() }
        #expect(try await relaunched.engine.pendingImageUploads() == 1)
        await relaunched.engine.setImageUploader(FakeUploader(), settings: Self.settings(folder: photos.folder))
        try await Self.uploadAndSync(relaunched)
        #expect(try await harness.api().location(id: place.id).imageURLs == [FakeUploader.remoteURL(photo).absoluteString])
        try await expectConverged([relaunched], harness.api())
    }

    @Test("an edit that drops a photo not yet uploaded removes its file; it is never uploaded")
    func droppedBeforeUpload() async throws {
        let uploader = FakeUploader()
        let (server, harness, device, photos) = try await Self.start(uploader)
        defer { device.done(); server.stop(); photos.remove() }
        let category = try await device.engine.saveCategory(name: "Trips")
        let dropped = try photos.photo("dropped.jpg")
        var draft = LocationDraft(categoryID: category.id, name: "Edited", latitude: 1, longitude: 2, imageURLs: [dropped.absoluteString])
        try await device.engine.saveLocation(draft)
        draft.imageURLs = []
        try await device.engine.saveLocation(draft)
        #expect(!FileManager.default.fileExists(atPath: dropped.path))
        try await Self.uploadAndSync(device)
        #expect(uploader.calls.isEmpty)
        #expect(try await harness.api().location(id: draft.id).imageURLs.isEmpty)
        try await expectConverged([device], harness.api())
    }

    @Test("without an uploader a file:// URL is refused at once (E001), and nothing is queued")
    func refusedWithoutUploader() async throws {
        let server = try TestServer.start()
        defer { server.stop() }
        let device = await Device.make(ClientHarness(server), "no-uploader")
        defer { device.done() }
        let category = try await device.engine.saveCategory(name: "Trips")
        let pending = try await device.engine.pendingChanges().count
        await #expect {
            try await device.engine.saveLocation(
                LocationDraft(categoryID: category.id, name: "X", latitude: 1, longitude: 2, imageURLs: ["file:///tmp/x.jpg"]))
        } throws: { error in
            (error as? LocifyError)?.serverError?.code == "E001"
        }
        #expect(try await device.engine.pendingChanges().count == pending)
    }

    @Test("a photo taken offline survives an app update that moves the app's container (issue 34 item 1)")
    func survivesContainerMove() async throws {
        let server = try TestServer.start()
        defer { server.stop() }
        let harness = ClientHarness(server)
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("locify-containers-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        /// The store and the photo folder in an app container, as iOS names it by a UUID.
        func container(_ name: String) -> (store: String, photos: URL) {
            let support = root.appendingPathComponent(name).appendingPathComponent("Library/Application Support")
            return (support.appendingPathComponent("locify.sqlite").path, support.appendingPathComponent("Locify Photos"))
        }
        let before = container("0A1B"), after = container("2C3D")
        try FileManager.default.createDirectory(at: before.photos, withIntermediateDirectories: true)
        let device = await Device.make(harness, "before-update", store: try SQLiteStore(path: before.store))
        await device.engine.setImageUploader(FakeUploader(), settings: Self.settings(folder: before.photos))
        let category = try await device.engine.saveCategory(name: "Trips")
        let photo = before.photos.appendingPathComponent("beach.jpg")
        try Data("jpeg".utf8).write(to: photo)
        let place = try await device.engine.saveLocation(
            LocationDraft(categoryID: category.id, name: "Beach", latitude: 1, longitude: 2, imageURLs: [photo.absoluteString]))
        device.done()

        // The app is updated before it was ever online again: iOS moves its container.
        try FileManager.default.moveItem(at: root.appendingPathComponent("0A1B"), to: root.appendingPathComponent("2C3D"))
        let updated = await Device.make(harness, "after-update", store: try SQLiteStore(path: after.store))
        defer { updated.done() }
        let uploader = FakeUploader()
        await updated.engine.setImageUploader(uploader, settings: Self.settings(folder: after.photos))
        try await Self.uploadAndSync(updated)
        #expect(try await harness.api().location(id: place.id).imageURLs == [FakeUploader.remoteURL(photo).absoluteString])
        #expect(!updated.events.all.contains { if case .imageMissing = $0 { true } else { false } })
        #expect(uploader.calls.map(\.file) == ["beach.jpg"])
        try await expectConverged([updated], harness.api())
    }

    @Test("a photo an older version queued as an absolute file URL is found in the moved photo folder (issue 34 item 1)")
    func olderVersionsAbsoluteURL() async throws {
        let photos = try PhotoFolder()
        defer { photos.remove() }
        let photo = try photos.photo("old.jpg")
        // An older version kept the file's absolute URL in the queued change, in a container since moved.
        let oldURL = "file:///var/mobile/Containers/Data/Application/OLD/Library/Application%20Support/\(photos.folder.lastPathComponent)/old.jpg"
        let categoryID = UUID(), now = Date()
        let write = LocationWrite(
            id: UUID(), categoryID: categoryID, name: "Old", latitude: 1, longitude: 2, imageURLs: [oldURL], createdAt: now, updatedAt: now)
        let store = InMemoryStore(
            LocalSnapshot(
                categories: [categoryID: Category(id: categoryID, name: "Trips", createdAt: now, updatedAt: now)],
                locations: [
                    write.id: Location(id: write.id, categoryID: categoryID, name: "Old", latitude: 1, longitude: 2, imageURLs: [oldURL], createdAt: now, updatedAt: now)
                ],
                outbox: [
                    OutboxEntry(id: 1, change: .createCategory(CategoryWrite(id: categoryID, name: "Trips", createdAt: now, updatedAt: now))),
                    OutboxEntry(id: 2, change: .createLocation(write)),
                ],
                metadata: StoreMetadata(nextOutboxID: 3)))
        let server = try TestServer.start()
        defer { server.stop() }
        let harness = ClientHarness(server)
        let device = await Device.make(harness, "updated", store: store)
        defer { device.done() }
        await device.engine.setImageUploader(FakeUploader(), settings: Self.settings(folder: photos.folder))
        #expect(try await device.engine.pendingImageUploads() == 1)
        try await Self.uploadAndSync(device)
        #expect(try await harness.api().location(id: write.id).imageURLs == [FakeUploader.remoteURL(photo).absoluteString])
        try await expectConverged([device], harness.api())
    }

    @Test("a photo whose file is truly gone is reported, and its place keeps the photos it had on the server (issue 34 item 1)")
    func goneKeepsSyncedImages() async throws {
        let (server, harness, device, photos) = try await Self.start(FakeUploader())
        defer { device.done(); server.stop(); photos.remove() }
        let category = try await device.engine.saveCategory(name: "Trips")
        let online = "https://example.com/online.jpg"
        var draft = LocationDraft(categoryID: category.id, name: "Cove", latitude: 1, longitude: 2, imageURLs: [online])
        try await device.engine.saveLocation(draft)
        try await device.engine.sync()
        let gone = try photos.photo("gone.jpg")
        draft.imageURLs.append(gone.absoluteString)
        try await device.engine.saveLocation(draft)
        try FileManager.default.removeItem(at: gone)

        try await Self.uploadAndSync(device)
        #expect(try await harness.api().location(id: draft.id).imageURLs == [online])
        #expect(try await device.engine.location(id: draft.id)?.imageURLs == [online])
        #expect(await device.events.contains { if case .imageMissing(draft.id, "file:gone.jpg") = $0 { true } else { false } })
        #expect(try await device.engine.pendingImageUploads() == 0)
        try await expectConverged([device], harness.api())
    }

    @Test("an upload that hangs holds back no edit: a background refresh cut short pushes all three; the URL follows (issue 34 item 2)")
    func hangingUploadHoldsNothingBack() async throws {
        let uploader = FakeUploader([.hang])
        let (server, harness, device, photos) = try await Self.start(uploader, settings: Self.settings(attempts: 3, timeout: .seconds(3600)))
        defer { device.done(); server.stop(); photos.remove() }
        let category = try await device.engine.saveCategory(name: "Trips")
        try await device.engine.sync()
        let photo = try photos.photo("hangs.jpg")
        let beach = try await device.engine.saveLocation(
            LocationDraft(categoryID: category.id, name: "Beach", latitude: 1, longitude: 2, imageURLs: [photo.absoluteString]))
        let harbour = try await device.engine.saveLocation(LocationDraft(categoryID: category.id, name: "Harbour", latitude: 3, longitude: 4))
        try await device.engine.saveCategory(id: category.id, name: "Trips 2026")

        // A background refresh: the system gives the app a few seconds, then the sync is cancelled
        // (30 s here, for a loaded machine: the upload hangs for an hour, so what matters is that
        // the sync does not wait for it).
        let refresh = Task { try await device.engine.sync() }
        let expiry = Task {
            try await Task.sleep(for: .seconds(30))
            refresh.cancel()
        }
        _ = try? await refresh.value
        expiry.cancel()
        let api = harness.api()
        #expect(try await api.location(id: beach.id).imageURLs.isEmpty, "pushed without the photo still uploading")
        #expect(try await api.location(id: harbour.id).name == "Harbour")
        #expect(try await api.category(id: category.id).name == "Trips 2026")
        #expect(try await device.engine.pendingChanges().isEmpty)
        #expect(try await device.engine.location(id: beach.id)?.imageURLs == ["file:hangs.jpg"], "the device still shows the photo")

        #expect(await until(.seconds(60)) { uploader.hanging == 1 })
        uploader.releaseHung()
        await device.engine.uploadPendingImages()
        try await device.engine.sync()
        let remote = FakeUploader.remoteURL(photo).absoluteString
        #expect(try await api.location(id: beach.id).imageURLs == [remote])
        #expect(try await api.location(id: beach.id).name == "Beach")
        #expect(Self.refusals(device).isEmpty)
        try await expectConverged([device], api)
    }

    @Test("the photo's URL follows as an edit of the place as it is then: a change pulled meanwhile is kept (issue 34 item 2)")
    func followUpKeepsPulledChange() async throws {
        let uploader = FakeUploader([.hang])
        let (server, harness, device, photos) = try await Self.start(uploader, settings: Self.settings(timeout: .seconds(3600)))
        defer { device.done(); server.stop(); photos.remove() }
        let category = try await device.engine.saveCategory(name: "Trips")
        let photo = try photos.photo("later.jpg")
        let place = try await device.engine.saveLocation(
            LocationDraft(categoryID: category.id, name: "Beach", latitude: 1, longitude: 2, imageURLs: [photo.absoluteString]))
        try await device.engine.sync()

        // Another device renames the place and marks it a favourite while the photo uploads.
        let other = await Device.make(harness, "other")
        defer { other.done() }
        try await other.engine.sync()
        var edit = try #require(try await other.engine.location(id: place.id))
        edit.name = "Beach (north)"
        edit.isFavorite = true
        try await other.engine.saveLocation(LocationDraft(edit))
        try await other.engine.sync()
        try await device.engine.sync()
        #expect(try await device.engine.location(id: place.id)?.imageURLs == ["file:later.jpg"], "the pull keeps the photo shown")

        #expect(await until(.seconds(60)) { uploader.hanging == 1 })
        uploader.releaseHung()
        await device.engine.uploadPendingImages()
        try await device.engine.sync()
        let onServer = try await harness.api().location(id: place.id)
        #expect(onServer.name == "Beach (north)" && onServer.isFavorite, "the other device's change survives")
        #expect(onServer.imageURLs == [FakeUploader.remoteURL(photo).absoluteString])
        try await other.engine.sync()
        try await expectConverged([device, other], harness.api())
    }
}
