import Foundation
import LocifyClient
import Testing
import TestSupport
import TestSupportServer

/// Issue 22 item 5: the client refuses at once, with the server's code and message, every edit
/// the server would refuse, so a queued change can only fail by a competing write. Each edit is
/// tried on the engine (refused before it is queued) and sent straight to the server (refused the
/// same way); the edits at the rules' edges are accepted by both.
@Suite("LocifyClient refuses what the server refuses, with the server's code")
struct SharedRulesTests {
    struct Case: Sendable, CustomTestStringConvertible {
        var label: String
        var name = "Valid"
        var icon: String?
        var address: String?
        var description: String?
        var latitude = 1.0
        var longitude = 2.0
        var imageURLs: [String] = []
        var testDescription: String { label }
    }

    static let long = String(repeating: "é", count: 256)
    static let urls = (0..<11).map { "https://example.com/\($0).jpg" }

    static let categoryCases: [Case] = [
        Case(label: "empty name", name: ""), Case(label: "blank name", name: " \t\n "), Case(label: "256 code points", name: long),
        Case(label: "control character", name: "a\u{7}b"), Case(label: "icon over http", icon: "http://example.com/i.png"),
        Case(label: "icon not a URL", icon: "icon.png"), Case(label: "icon with a space", icon: "https://example.com/a b.png"),
    ]

    static let locationCases: [Case] = [
        Case(label: "empty name", name: ""), Case(label: "256 code points", name: long),
        Case(label: "address of 1001", address: String(repeating: "a", count: 1001)),
        Case(label: "control character in description", description: "a\u{0}b"), Case(label: "latitude 90.5", latitude: 90.5),
        Case(label: "longitude -181", longitude: -181), Case(label: "11 images", imageURLs: urls),
        Case(label: "duplicate images", imageURLs: [urls[0], urls[0]]), Case(label: "image over http", imageURLs: ["http://example.com/a.jpg"]),
    ]

    /// A fresh user's engine (after a first sync) and its API, on one shared server.
    static func fixture() async throws -> (SyncEngine, LocifyAPIClient, Category) {
        let harness = ClientHarness(try HistoryServer.shared.get())
        let engine = SyncEngine(api: harness.api(), store: InMemoryStore())
        try await engine.sync()
        let category = try await engine.saveCategory(name: "Home")
        try await engine.sync()
        return (engine, harness.api(), category)
    }

    /// The error `body` throws, as a LocifyError (nil when it succeeds).
    static func refusal(_ body: () async throws -> Void) async -> ServerError? {
        do {
            try await body()
            return nil
        } catch let error as LocifyError {
            return error.serverError
        } catch {
            Issue.record("not a LocifyError: \(error)")
            return nil
        }
    }

    @Test("category edits the server refuses are refused on the device with the same code and message", arguments: categoryCases)
    func category(_ edit: Case) async throws {
        let (engine, api, _) = try await Self.fixture()
        let local = await Self.refusal { try await engine.saveCategory(name: edit.name, icon: edit.icon) }
        let server = await Self.refusal { _ = try await api.createCategory(CategoryWrite(id: UUID(), name: edit.name, icon: edit.icon)) }
        #expect(local != nil && server != nil)
        #expect(local?.code == server?.code && local?.message == server?.message && local?.status == 400, "\(String(describing: local)) vs \(String(describing: server))")
        #expect(local?.details.map(\.field) == server?.details.map(\.field))
        #expect(try await engine.pendingChanges().isEmpty, "nothing queued")
    }

    @Test("location edits the server refuses are refused on the device with the same code and message", arguments: locationCases)
    func location(_ edit: Case) async throws {
        let (engine, api, home) = try await Self.fixture()
        let draft = LocationDraft(
            categoryID: home.id, name: edit.name, address: edit.address, description: edit.description, latitude: edit.latitude,
            longitude: edit.longitude, imageURLs: edit.imageURLs)
        let local = await Self.refusal { try await engine.saveLocation(draft) }
        let server = await Self.refusal {
            _ = try await api.createLocation(
                LocationWrite(
                    id: draft.id, categoryID: home.id, name: edit.name, address: edit.address, description: edit.description,
                    latitude: edit.latitude, longitude: edit.longitude, imageURLs: edit.imageURLs))
        }
        #expect(local != nil && server != nil)
        #expect(local?.code == server?.code && local?.message == server?.message, "\(String(describing: local)) vs \(String(describing: server))")
        #expect(try await engine.pendingChanges().isEmpty, "nothing queued")
    }

    @Test("a place in an unknown category and a reassign to itself or to an unknown category are refused as the server refuses them")
    func references() async throws {
        let (engine, api, home) = try await Self.fixture()
        let unknown = UUID()
        let localPlace = await Self.refusal { try await engine.saveLocation(LocationDraft(categoryID: unknown, name: "P", latitude: 0, longitude: 0)) }
        let serverPlace = await Self.refusal { _ = try await api.createLocation(LocationWrite(id: UUID(), categoryID: unknown, name: "P", latitude: 0, longitude: 0)) }
        #expect(localPlace?.code == "E007" && localPlace?.code == serverPlace?.code && localPlace?.message == serverPlace?.message)
        let localSelf = await Self.refusal { try await engine.deleteCategory(id: home.id, reassignTo: home.id) }
        let serverSelf = await Self.refusal { try await api.deleteCategory(id: home.id, reassignTo: home.id) }
        #expect(localSelf?.code == "E001" && localSelf?.code == serverSelf?.code && localSelf?.message == serverSelf?.message)
        let localTarget = await Self.refusal { try await engine.deleteCategory(id: home.id, reassignTo: unknown) }
        let serverTarget = await Self.refusal { try await api.deleteCategory(id: home.id, reassignTo: unknown) }
        #expect(localTarget?.code == "E007" && localTarget?.code == serverTarget?.code && localTarget?.message == serverTarget?.message)
        #expect(try await engine.pendingChanges().isEmpty, "nothing queued")
    }

    @Test("edits at the rules' edges are accepted on the device and by the server, normalised alike")
    func edges() async throws {
        let (engine, api, home) = try await Self.fixture()
        let name = "  " + String(repeating: "é", count: 255) + "\n"
        let category = try await engine.saveCategory(name: name, icon: "HTTPS://example.com/i.png")
        let place = try await engine.saveLocation(
            LocationDraft(
                categoryID: home.id, name: "Edge", address: "   ", description: "tab\tand\nlines", latitude: -90, longitude: 180,
                imageURLs: Array(Self.urls.prefix(10))))
        #expect(place.address == nil)
        let report = try await engine.sync()
        #expect(report.rejected == 0 && report.conflicts == 0)
        #expect(try await api.category(id: category.id).name == category.name)
        let onServer = try await api.location(id: place.id)
        #expect(onServer.address == nil && onServer.imageURLs.count == 10 && onServer.description == place.description)
    }
}
