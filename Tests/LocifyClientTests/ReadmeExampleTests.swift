import Foundation
import LocifyClient
import Testing
import TestSupport
import TestSupportServer

// readme-example:begin
/// Edits offline, syncs, and watches what the sync did (README: "Using LocifyClient from an app").
func readmeExample(serverURL: URL, storeFile: URL, idToken: @escaping LocifyAPIClient.TokenProvider) async throws -> [LocifyCategory] {
    // One API client and one engine per signed-in user. With Firebase, `idToken` is
    // { forceRefresh in try await Auth.auth().currentUser!.getIDToken(forcingRefresh: forceRefresh) }
    let api = LocifyAPIClient(baseURL: serverURL, token: idToken)
    let engine = SyncEngine(api: api, store: try SQLiteStore(path: storeFile.path))

    // What sync does: progress, conflicts settled, changes the server refused.
    let events = await engine.events()
    let watcher = Task {
        for await event in events {
            if case .changeRejected(let change, let error) = event {
                print("the server refused \(change.kind) \(change.recordID): \(error.code ?? "-")")
            }
        }
    }
    defer { watcher.cancel() }

    // Edits apply locally at once, online or not, and wait in the outbox.
    let bakeries = try await engine.saveCategory(name: "Bakeries")
    let place = try await engine.saveLocation(
        LocationDraft(
            categoryID: bakeries.id, name: "Du Pain et des Idées", address: "34 Rue Yves Toudic, Paris",
            latitude: 48.8718, longitude: 2.3631))
    var edit = LocationDraft(place)
    edit.isFavorite = true
    try await engine.saveLocation(edit)

    // Push the outbox, then pull what changed elsewhere. Call it on launch, on reconnect, on
    // pull-to-refresh: a failure leaves the outbox for the next call.
    do {
        try await engine.sync()
    } catch let error as LocifyError where error.isTransient {
        // Offline, or the server is busy: try again later.
    }
    return try await engine.categories()
}
// readme-example:end

@Suite("README: the LocifyClient example compiles, runs and is the one the README shows")
struct ReadmeExampleTests {
    @Test("the example syncs its edits to the server")
    func runs() async throws {
        let server = try TestServer.start()
        defer { server.stop() }
        let harness = ClientHarness(server)
        let file = TemporaryStoreFile()
        defer { file.remove() }
        let categories = try await readmeExample(serverURL: harness.baseURL, storeFile: file.url, idToken: harness.tokens)
        #expect(categories.map(\.name).contains("Bakeries"))
        #expect(categories.count == 5, "the four defaults and Bakeries")
        #expect(categories.first { $0.name == "Bakeries" }?.locationCount == 1)
        let onServer = try await harness.api().allLocations()
        #expect(onServer.map(\.isFavorite) == [true])
    }

    @Test("README.md shows the example exactly as compiled here")
    func readmeShowsIt() throws {
        let source = try String(contentsOf: URL(fileURLWithPath: #filePath), encoding: .utf8)
        let readme = try String(contentsOf: ProjectPaths.root.appendingPathComponent("README.md"), encoding: .utf8)
        let begin = try #require(source.range(of: "// readme-example:begin\n"))
        let end = try #require(source.range(of: "// readme-example:end"))
        let example = String(source[begin.upperBound..<end.lowerBound])
        #expect(readme.contains("```swift\nimport Foundation\nimport LocifyClient\n\n" + example + "```"))
    }
}
