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

    func remove() { try? FileManager.default.removeItem(at: folder) }
}

/// Issue 26 item 6: photos taken offline wait on the device as `file://` URLs, are uploaded by the
/// app's uploader before their place's change is pushed, and the server never sees a file URL.
@Suite("LocifyClient photos taken offline: uploaded before their place is pushed")
struct ImageUploadTests {
    /// Settings that never pause for real between attempts.
    private static func settings(attempts: Int = 2, timeout: Duration = .seconds(60), concurrent: Int = 2) -> ImageUploadSettings {
        var settings = ImageUploadSettings()
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
        await device.engine.setImageUploader(uploader, settings: settings)
        return (server, harness, device, try PhotoFolder())
    }

    private static func refusals(_ device: Device) -> [SyncEvent] {
        device.events.all.filter { if case .changeRejected = $0 { true } else { false } }
    }

    @Test("a place with photos taken offline reaches the server with their download URLs; the files are removed")
    func uploadedBeforePush() async throws {
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
        #expect(place.imageURLs == [first.absoluteString, kept, second.absoluteString], "the app shows the local files meanwhile")
        #expect(try await device.engine.pendingImageUploads() == 2)

        let report = try await device.engine.sync()
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

    @Test("while a photo fails to upload, its place and the category delete made after it wait; nothing else does")
    func failedUploadHoldsDependents() async throws {
        let uploader = FakeUploader([.fail, .fail])
        let (server, harness, device, photos) = try await Self.start(uploader)
        defer { device.done(); server.stop(); photos.remove() }
        let trips = try await device.engine.saveCategory(name: "Trips")
        try await device.engine.sync()
        let photo = try photos.photo("held.jpg")
        let held = try await device.engine.saveLocation(
            LocationDraft(categoryID: trips.id, name: "Held", latitude: 1, longitude: 2, imageURLs: [photo.absoluteString]))
        let plain = try await device.engine.saveLocation(LocationDraft(categoryID: trips.id, name: "Plain", latitude: 3, longitude: 4))
        try await device.engine.deleteCategory(id: trips.id)

        let first = try await device.engine.sync()
        #expect(first.imageUploadsFailed == 1)
        let api = harness.api()
        #expect(try await api.allLocations().map(\.id) == [plain.id], "the place without photos went on")
        #expect(try await api.allCategories().contains { $0.id == trips.id }, "the delete waits for the place made before it")
        #expect(try await device.engine.pendingChanges().count == 2)
        #expect(await device.events.contains { if case .imageUploadFailed(held.id, photo.absoluteString, _) = $0 { true } else { false } })

        let second = try await device.engine.sync()
        #expect(second.imagesUploaded == 1)
        #expect(try await api.allLocations().isEmpty, "the place was created with its photo, then deleted with its category")
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

        let report = try await device.engine.sync()
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

        try await device.engine.sync()
        #expect(try await harness.api().location(id: place.id).imageURLs == [FakeUploader.remoteURL(kept).absoluteString])
        #expect(await device.events.contains { if case .imageMissing(place.id, gone.absoluteString) = $0 { true } else { false } })
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
        let report = try await device.engine.sync()
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
        device.done()

        let relaunched = await Device.make(harness, "relaunched", store: try file.open())
        defer { relaunched.done() }
        #expect(try await relaunched.engine.pendingImageUploads() == 1)
        await relaunched.engine.setImageUploader(FakeUploader(), settings: Self.settings())
        try await relaunched.engine.sync()
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
        try await device.engine.sync()
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
}
