import Foundation
import LocifyClient
import Testing
import TestSupport
import TestSupportServer

/// Issue 34 item 3: a draft remembers the record it was read from, and saving it writes only the
/// fields the user changed onto the location as it is then (a three-way merge).
@Suite("LocifyClient edit forms: a save never reverts what a pull brought meanwhile (issue 34 item 3)")
struct EditFormTests {
    @Test("an edit form saved after a pull keeps the other device's favourite and photo, and the rename reaches every device")
    func editFormHeldOpenAcrossAPull() async throws {
        let server = try TestServer.start()
        defer { server.stop() }
        let harness = ClientHarness(server)
        let phone = SyncEngine(api: harness.api(), store: InMemoryStore())
        let tablet = SyncEngine(api: harness.api(), store: InMemoryStore())
        let category = try await phone.saveCategory(name: "Cafés")
        let place = try await phone.saveLocation(LocationDraft(categoryID: category.id, name: "Flore", latitude: 48.854, longitude: 2.3326))
        try await phone.sync()
        try await tablet.sync()
        // The phone's user opens the edit sheet.
        var form = LocationDraft(editing: try #require(await phone.location(id: place.id)))
        // Meanwhile the tablet favourites the place and adds a photo, and the phone pulls them.
        var favourite = LocationDraft(try #require(await tablet.location(id: place.id)))
        favourite.isFavorite = true
        favourite.imageURLs = ["https://example.com/flore.jpg"]
        try await tablet.saveLocation(favourite)
        try await tablet.sync()
        try await phone.sync()
        // The user renames and saves.
        form.name = "Café de Flore"
        let saved = try await phone.saveLocation(form)
        #expect(saved.name == "Café de Flore")
        #expect(saved.isFavorite, "the pulled favourite survives the save")
        #expect(saved.imageURLs == ["https://example.com/flore.jpg"], "the pulled photo survives the save")
        try await phone.sync()
        try await tablet.sync()
        let onServer = try await harness.api().location(id: place.id)
        #expect(onServer.name == "Café de Flore" && onServer.isFavorite && onServer.imageURLs == ["https://example.com/flore.jpg"])
        #expect(try await tablet.location(id: place.id) == onServer)
    }

    @Test("the merge: the user's changed fields win, the others are the current record's; photos merge as sets")
    func threeWayMerge() async throws {
        let engine = SyncEngine(api: unreachableAPI(), store: InMemoryStore())
        let cafes = try await engine.saveCategory(name: "Cafés")
        let bars = try await engine.saveCategory(name: "Bars")
        let base = try await engine.saveLocation(
            LocationDraft(
                categoryID: cafes.id, name: "Flore", address: "172 Bd Saint-Germain", latitude: 48.854, longitude: 2.3326,
                imageURLs: ["https://example.com/a.jpg", "https://example.com/b.jpg"]))
        var form = LocationDraft(editing: base)
        #expect(form.base == base)
        // Elsewhere (as a pull would): the address, the favourite and the photos change.
        var elsewhere = LocationDraft(categoryID: cafes.id, name: "Flore", latitude: 48.854, longitude: 2.3326)
        elsewhere.id = base.id
        elsewhere.address = "172 Boulevard Saint-Germain"
        elsewhere.isFavorite = true
        elsewhere.imageURLs = ["https://example.com/a.jpg", "https://example.com/b.jpg", "https://example.com/c.jpg"]
        try await engine.saveLocation(elsewhere)  // a draft made from scratch: saved whole, as before
        // The form: moved to Bars, the name changed and back (unchanged), photo a removed, d added.
        form.categoryID = bars.id
        form.name = "Flore"
        form.imageURLs = ["https://example.com/b.jpg", "https://example.com/d.jpg"]
        let saved = try await engine.saveLocation(form)
        #expect(saved.categoryID == bars.id, "changed in the form")
        #expect(saved.address == "172 Boulevard Saint-Germain" && saved.isFavorite, "changed elsewhere, not in the form")
        // The form's photos in its order (b, d), less a (removed in the form), plus c (added elsewhere).
        #expect(saved.imageURLs == ["https://example.com/b.jpg", "https://example.com/d.jpg", "https://example.com/c.jpg"])
    }

    @Test("a field changed both in the form and elsewhere takes the form's value; a place deleted meanwhile is saved as the form has it")
    func bothChangedAndDeletedMeanwhile() async throws {
        let engine = SyncEngine(api: unreachableAPI(), store: InMemoryStore())
        let cafes = try await engine.saveCategory(name: "Cafés")
        let base = try await engine.saveLocation(LocationDraft(categoryID: cafes.id, name: "Flore", latitude: 1, longitude: 2))
        var form = LocationDraft(editing: base)
        var elsewhere = LocationDraft(editing: base)
        elsewhere.name = "Elsewhere"
        try await engine.saveLocation(elsewhere)
        form.name = "From the form"
        #expect(try await engine.saveLocation(form).name == "From the form")
        try await engine.deleteLocation(id: base.id)
        form.latitude = 3
        let restored = try await engine.saveLocation(form)
        #expect(restored.name == "From the form" && restored.latitude == 3 && restored.longitude == 2)
    }
}
