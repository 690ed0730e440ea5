import Foundation
import GRDB
import LocifyRules
import Testing
import TestSupport
import TestSupportServer

@testable import LocifyClient

/// Issue 36 on the device, without a server: edits are queued as patches of the fields they
/// change, consecutive ones coalesce field by field, what the device shows is the pulled record
/// with its pending patches decided on top by `FieldLastWriteWins`, and the store keeps each
/// record's field clock (migrated from older stores).
@Suite("LocifyClient field-level last write wins on the device (issue 36)")
struct FieldMergeTests {
    static let t0 = Date(locifyMilliseconds: 1_700_000_000_000)
    let categoryID = UUID()

    /// A place as a pull brought it (version 1, every field written at `t0`).
    func pulledPlace() -> Location {
        Location(
            id: UUID(), userID: "u", categoryID: categoryID, name: "Flore", address: "172 Bd Saint-Germain", latitude: 48.854,
            longitude: 2.3326, version: 1, createdAt: Self.t0, updatedAt: Self.t0)
    }

    /// A store holding `place` and its category as pulled.
    func store(holding place: Location) -> InMemoryStore {
        let category = Category(id: categoryID, userID: "u", name: "Cafés", version: 1, createdAt: Self.t0, updatedAt: Self.t0)
        return InMemoryStore(LocalSnapshot(categories: [categoryID: category], locations: [place.id: place]))
    }

    /// An engine on a store holding `place` and its category as pulled, its clock at `now`.
    func engine(holding place: Location, now: Date) -> SyncEngine {
        SyncEngine(api: unreachableAPI(), store: store(holding: place), clock: { now })
    }

    @Test("an edit form's save queues a patch of the fields the user changed; a whole draft patches every field")
    func editsArePatches() async throws {
        let place = pulledPlace()
        let engine = engine(holding: place, now: Self.t0.addingTimeInterval(60))
        var form = LocationDraft(editing: place)
        form.name = "Café de Flore"
        form.isFavorite = true
        try await engine.saveLocation(form)
        var pending = try await engine.pendingChanges()
        guard case .patchLocation(let patch) = try #require(pending.last).change else {
            Issue.record("not a patch: \(pending)")
            return
        }
        #expect(pending.count == 1 && patch.fields == [.name, .isFavorite])
        let body = String(decoding: try JSONCoding.encoder.encode(pending[0].change), as: UTF8.self)
        #expect(body.contains(#""action":"patch""#) && body.contains(#""name":"Café de Flore""#) && body.contains(#""is_favorite":true"#))
        #expect(!body.contains("address") && !body.contains("latitude") && !body.contains("category_id"), "only the changed fields: \(body)")
        // The outbox keeps the patch as sent, through its JSON.
        #expect(try JSONCoding.decoder.decode(PushChange.self, from: Data(body.utf8)) == pending[0].change)
        // A form saved without a change queues nothing.
        try await engine.saveLocation(LocationDraft(editing: try #require(await engine.location(id: place.id))))
        #expect(try await engine.pendingChanges().count == 1)
        // A draft of the whole record (no base) writes every field.
        var whole = LocationDraft(try #require(await engine.location(id: place.id)))
        whole.address = nil
        try await engine.saveLocation(whole)
        pending = try await engine.pendingChanges()
        #expect(pending.count == 1, "the earlier patch's fields are all set again: it goes")
        guard case .patchLocation(let all) = pending.last?.change else { return }
        #expect(all.fields == Set(LocationField.allCases))
        let cleared = String(decoding: try JSONCoding.encoder.encode(pending[0].change), as: UTF8.self)
        #expect(cleared.contains(#""address":null"#), "null clears: \(cleared)")
    }

    @Test("consecutive edits coalesce field by field: each field keeps the time of its last edit")
    func coalescing() async throws {
        let place = pulledPlace()
        var now = Self.t0.addingTimeInterval(60)
        let clock = MovableClock(now)
        let engine = SyncEngine(api: unreachableAPI(), store: store(holding: place), clock: { clock.now })
        var form = LocationDraft(editing: place)
        form.name = "A"
        try await engine.saveLocation(form)
        now.addTimeInterval(1)
        clock.now = now
        form = LocationDraft(editing: try #require(await engine.location(id: place.id)))
        form.isFavorite = true
        try await engine.saveLocation(form)
        now.addTimeInterval(1)
        clock.now = now
        form = LocationDraft(editing: try #require(await engine.location(id: place.id)))
        form.name = "B"
        try await engine.saveLocation(form)
        let pending = try await engine.pendingChanges().map(\.change)
        guard pending.count == 2, case .patchLocation(let favourite) = pending[0], case .patchLocation(let rename) = pending[1] else {
            Issue.record("two patches expected: \(pending)")
            return
        }
        #expect(favourite.fields == [.isFavorite] && favourite.updatedAt == Self.t0.addingTimeInterval(61))
        #expect(rename.fields == [.name] && rename.values.name == "B" && rename.updatedAt == Self.t0.addingTimeInterval(62))
        // A place made offline and not yet sent takes later edits into its create.
        let made = try await engine.saveLocation(LocationDraft(categoryID: categoryID, name: "New", latitude: 1, longitude: 2))
        var edit = LocationDraft(editing: made)
        edit.name = "New, renamed"
        try await engine.saveLocation(edit)
        guard case .createLocation(let create) = try await engine.pendingChanges().last?.change else {
            Issue.record("the create stays a create")
            return
        }
        #expect(try await engine.pendingChanges().count == 3 && create.name == "New, renamed")
    }

    @Test("a pending rename and a pulled newer favourite both show; a pulled newer value of the renamed field wins, as on the server")
    func pendingPatchOverPulledRecord() async throws {
        let place = pulledPlace()
        let renamedAt = Self.t0.addingTimeInterval(60)
        let store = store(holding: place)
        let engine = SyncEngine(api: unreachableAPI(), store: store, clock: { renamedAt })
        var form = LocationDraft(editing: place)
        form.name = "Café de Flore"
        try await engine.saveLocation(form)
        // Another device favourited the place after the rename (offline here): the feed brings it.
        let favouritedAt = Self.t0.addingTimeInterval(120)
        try await engine.takeIn(feed(place, isFavorite: true, stamps: ["is_favorite": favouritedAt], updatedAt: favouritedAt))
        var shown = try #require(await engine.location(id: place.id))
        #expect(shown.name == "Café de Flore" && shown.isFavorite, "both edits show")
        #expect(shown.updatedAt == favouritedAt)
        #expect(try await engine.pendingChanges().count == 1, "the rename is still to push")
        // The field clock the store keeps: the favourite's, the rename's, the others' as pulled.
        let stamps = try #require(try store.fieldStamps(of: .location, id: place.id))
        #expect(stamps[LocationField.isFavorite.rawValue] == favouritedAt.locifyMilliseconds)
        #expect(stamps[LocationField.name.rawValue] == renamedAt.locifyMilliseconds)
        #expect(stamps[LocationField.address.rawValue] == Self.t0.locifyMilliseconds)
        // A newer rename from elsewhere wins over the pending one, as the server will decide.
        let renamedElsewhereAt = Self.t0.addingTimeInterval(180)
        try await engine.takeIn(
            feed(
                place, name: "Flore (elsewhere)", isFavorite: true, stamps: ["is_favorite": favouritedAt, "name": renamedElsewhereAt],
                updatedAt: renamedElsewhereAt))
        shown = try #require(await engine.location(id: place.id))
        #expect(shown.name == "Flore (elsewhere)" && shown.isFavorite)
    }

    @Test("a pending favourite survives a pulled newer rename; a server without field stamps counts every field at updated_at")
    func pendingFavouriteOverPulledRename() async throws {
        let place = pulledPlace()
        let engine = engine(holding: place, now: Self.t0.addingTimeInterval(60))
        var form = LocationDraft(editing: place)
        form.isFavorite = true
        try await engine.saveLocation(form)
        let renamedAt = Self.t0.addingTimeInterval(120)
        try await engine.takeIn(feed(place, name: "Café de Flore", stamps: ["name": renamedAt], updatedAt: renamedAt))
        #expect(try await engine.location(id: place.id).map { ($0.name, $0.isFavorite) } ?? ("", false) == ("Café de Flore", true))
        // An older server: no field_updated_at, so the whole record is as new as its updated_at.
        try await engine.takeIn(feed(place, name: "Café de Flore", stamps: nil, updatedAt: renamedAt))
        #expect(try await engine.location(id: place.id)?.isFavorite == false, "the pending favourite is older than the record")
    }

    @Test("an existing SQLite store migrates: each field of each row stamped at its updated_at; stamps round-trip")
    func sqliteMigration() throws {
        let file = TemporaryStoreFile()
        defer { file.remove() }
        let place = pulledPlace()
        do {
            let queue = try DatabaseQueue(path: file.url.path)
            try SQLiteStore.migrator.migrate(queue, upTo: "v3 refused changes")
            try queue.write { db in
                try db.execute(
                    sql:
                        "INSERT INTO category (id, user_id, name, icon, is_default, version, created_at, updated_at) VALUES (?, 'u', 'Cafés', NULL, 0, 1, ?, ?)",
                    arguments: [categoryID.lowercased, 5, 7])
                try db.execute(
                    sql: """
                        INSERT INTO location (id, user_id, category_id, name, address, description, latitude, longitude, is_favorite,
                            image_urls, version, created_at, updated_at) VALUES (?, 'u', ?, 'Flore', NULL, NULL, 1, 2, 0, '', 1, ?, ?)
                        """,
                    arguments: [place.id.lowercased, categoryID.lowercased, 5, 9])
            }
        }
        let store = try file.open()
        #expect(try store.fieldStamps(of: .category, id: categoryID) == [7, 7])
        #expect(try store.fieldStamps(of: .location, id: place.id) == Array(repeating: 9, count: 7))
        #expect(try store.location(id: place.id)?.name == "Flore")
        var changes = LocalChanges()
        changes.upsertedLocations = [place]
        changes.locationFieldStamps[place.id] = [1, 2, 3, 4, 5, 6, 7]
        try store.commit(changes)
        #expect(try store.fieldStamps(of: .location, id: place.id) == [1, 2, 3, 4, 5, 6, 7])
    }

    /// A feed page holding `place` with these changes and field stamps (nil: none sent).
    func feed(
        _ place: Location, name: String? = nil, isFavorite: Bool = false, stamps: [String: Date]?, updatedAt: Date
    ) -> String {
        var all: [String: String] = [:]
        for field in LocationField.allCases { all[field.wireName] = Self.t0.rfc3339 }
        for (key, date) in stamps ?? [:] { all[key] = date.rfc3339 }
        let fieldStamps = stamps == nil ? "" : #", "field_updated_at": {"# + all.map { #""\#($0.key)": "\#($0.value)""# }.joined(separator: ", ") + "}"
        return """
            {"changes": [{"type": "location", "action": "upsert", "id": "\(place.id.lowercased)", "data": {
              "id": "\(place.id.lowercased)", "user_id": "u", "category_id": "\(categoryID.lowercased)", "name": "\(name ?? place.name)",
              "address": "\(place.address ?? "")", "latitude": \(place.latitude), "longitude": \(place.longitude),
              "is_favorite": \(isFavorite), "image_urls": [], "version": 2,
              "created_at": "\(Self.t0.rfc3339)", "updated_at": "\(updatedAt.rfc3339)"}\(fieldStamps)}],
             "cursor": "c", "has_more": false}
            """
    }
}

/// A device clock the test moves.
private final class MovableClock: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Date
    init(_ now: Date) { value = now }
    var now: Date {
        get { lock.withLock { value } }
        set { lock.withLock { value = newValue } }
    }
}

extension SyncEngine {
    /// Takes in one feed page (JSON) as a pull stores it.
    func takeIn(_ page: String) throws {
        let page = try JSONCoding.decoder.decode(FeedPage.self, from: Data(page.utf8))
        var transaction = try begin()
        for (index, change) in page.changes.enumerated() {
            if case .upsert(let state) = change { try transaction.adopt(state, fieldUpdatedAt: page.fieldUpdatedAt(ofChange: index)) }
        }
        try commit(&transaction)
    }
}

/// Issue 36 end to end: two devices that edit different fields of one record offline both keep
/// their edits, on both devices and on the server; a patch that sets nothing is a conflict
/// reported as before.
@Suite("LocifyClient field-level last write wins across devices against the real server (issue 36)")
struct FieldMergeDeviceTests {
    @Test("the phone renames a place offline, the tablet marks it a favourite offline, both sync: both edits stay everywhere")
    func renameAndFavouriteBothStay() async throws {
        let server = try TestServer.start()
        defer { server.stop() }
        let harness = ClientHarness(server)
        let file = TemporaryStoreFile()
        defer { file.remove() }
        let phone = await Device.make(harness, "phone", store: try file.open())
        let tablet = await Device.make(harness, "tablet")
        defer { phone.done(); tablet.done() }
        let cafes = try await phone.engine.saveCategory(name: "Cafés")
        let place = try await phone.engine.saveLocation(
            LocationDraft(categoryID: cafes.id, name: "Flore", address: "172 Bd Saint-Germain", latitude: 48.854, longitude: 2.3326))
        try await phone.engine.sync()
        try await tablet.engine.sync()
        // Both offline: the phone renames the place and the category, the tablet favourites the
        // place and gives the category an icon.
        var rename = LocationDraft(editing: try #require(await phone.engine.location(id: place.id)))
        rename.name = "Café de Flore"
        try await phone.engine.saveLocation(rename)
        try await phone.engine.saveCategory(id: cafes.id, name: "Cafés de Paris")
        var favourite = LocationDraft(editing: try #require(await tablet.engine.location(id: place.id)))
        favourite.isFavorite = true
        try await tablet.engine.saveLocation(favourite)
        try await tablet.engine.saveCategory(id: cafes.id, name: "Cafés", icon: "https://example.com/cup.png")
        // Both sync, the phone first; then the phone pulls what the tablet pushed.
        let phoneReport = try await phone.engine.sync()
        let tabletReport = try await tablet.engine.sync()
        try await phone.engine.sync()
        #expect(phoneReport.conflicts == 0 && tabletReport.conflicts == 0, "each patch sets its own field")
        let api = harness.api()
        let onServer = try await api.location(id: place.id)
        #expect(onServer.name == "Café de Flore" && onServer.isFavorite && onServer.address == "172 Bd Saint-Germain")
        let category = try await api.category(id: cafes.id)
        #expect(category.name == "Cafés de Paris" && category.icon == "https://example.com/cup.png")
        for device in [phone, tablet] {
            #expect(try await device.engine.location(id: place.id) == onServer, "\(device.name) shows both edits")
            #expect(try await device.engine.category(id: cafes.id).map { ($0.name, $0.icon) } ?? ("", nil) == (category.name, category.icon))
        }
        try await expectConverged([phone, tablet], api)
        // The phone's store reopened from disk keeps the field clock the feed sent.
        let stamps = try #require(try file.open().fieldStamps(of: .location, id: place.id))
        #expect(stamps[LocationField.isFavorite.rawValue] > stamps[LocationField.address.rawValue])
    }

    @Test("a create whose answer was lost, replayed after the place's next edit was applied too, is no conflict")
    func replayedCreateSupersededByOwnEdit() async throws {
        let server = try TestServer.start()
        defer { server.stop() }
        let phone = await Device.make(ClientHarness(server), "phone")
        defer { phone.done() }
        let cafes = try await phone.engine.saveCategory(name: "Cafés")
        try await phone.engine.sync()
        let place = try await phone.engine.saveLocation(LocationDraft(categoryID: cafes.id, name: "Flore", latitude: 1, longitude: 2))
        // The create reaches the server, its answer is lost: it stays queued, sent once.
        FaultPlans.script(device: phone.name, [.dropAnswer])
        _ = try? await phone.engine.sync()
        var edit = LocationDraft(place)
        edit.name = "Café de Flore"
        try await phone.engine.saveLocation(edit)
        #expect(try await phone.engine.pendingChanges().map(\.change.action) == [.create, .patch])
        // Both reach the server, the answer is lost again; the replay meets the create's every field
        // set again by the edit (409 E008 for the create alone): nothing was lost.
        FaultPlans.script(device: phone.name, [.dropAnswer])
        _ = try? await phone.engine.sync()
        let report = try await phone.engine.sync()
        #expect(report.conflicts == 0 && report.rejected == 0)
        #expect(!(await phone.events.contains { if case .conflictResolved = $0 { true } else { false } }))
        #expect(try await phone.engine.location(id: place.id)?.name == "Café de Flore")
        #expect(try await phone.engine.pendingChanges().isEmpty)
    }

    @Test("a category's create whose answer was lost, replayed after its rename was applied too and the category deleted since, is no conflict")
    func replayedCreateMeetsOwnEditTheDeleteReplaced() async throws {
        let server = try TestServer.start()
        defer { server.stop() }
        let harness = ClientHarness(server)
        let phone = await Device.make(harness, "phone")
        defer { phone.done() }
        try await phone.engine.sync()
        // A category and a place in it reach the server, the answer is lost: both stay queued, sent once.
        let cafes = try await phone.engine.saveCategory(name: "Cafés")
        let place = try await phone.engine.saveLocation(LocationDraft(categoryID: cafes.id, name: "Flore", latitude: 1, longitude: 2))
        FaultPlans.script(device: phone.name, [.dropAnswer])
        _ = try? await phone.engine.sync()
        // The rename (with an icon: every field) reaches the server with the create, the answer is lost again.
        try await phone.engine.saveCategory(id: cafes.id, name: "Cafés de Paris", icon: "https://example.com/cup.png")
        FaultPlans.script(device: phone.name, [.dropAnswer])
        _ = try? await phone.engine.sync()
        // The delete replaces the pending rename but keeps the create the queued place needs; the
        // create's replay meets the rename on the server (409 E008 for the create alone).
        try await phone.engine.deleteCategory(id: cafes.id)
        #expect(try await phone.engine.pendingChanges().map(\.change.action) == [.create, .create, .delete])
        let report = try await phone.engine.sync()
        #expect(report.conflicts == 0 && report.rejected == 0)
        #expect(!(await phone.events.contains { if case .conflictResolved = $0 { true } else { false } }))
        #expect(try await phone.engine.category(id: cafes.id) == nil)
        #expect(try await phone.engine.location(id: place.id) == nil)
        #expect(try await phone.engine.pendingChanges().isEmpty)
        #expect(try await !harness.api().allCategories().contains { $0.id == cafes.id }, "deleted on the server")
    }

    @Test("a patch every field of which is newer on the server is a conflict: reported, the server's value shown, nothing left pending")
    func patchThatSetsNothingIsAConflict() async throws {
        let server = try TestServer.start()
        defer { server.stop() }
        let harness = ClientHarness(server)
        let phoneClock = SettableClock()
        let phone = await Device.make(harness, "phone", clock: phoneClock), tablet = await Device.make(harness, "tablet")
        defer { phone.done(); tablet.done() }
        let cafes = try await phone.engine.saveCategory(name: "Cafés")
        let place = try await phone.engine.saveLocation(LocationDraft(categoryID: cafes.id, name: "Flore", latitude: 1, longitude: 2))
        try await phone.engine.sync()
        try await tablet.engine.sync()
        // The phone's clock is set a minute back after its sync: its rename is the older one.
        phoneClock.set(offset: -60)
        var older = LocationDraft(editing: try #require(await phone.engine.location(id: place.id)))
        older.name = "Older rename"
        try await phone.engine.saveLocation(older)
        var newer = LocationDraft(editing: try #require(await tablet.engine.location(id: place.id)))
        newer.name = "Newer rename"
        try await tablet.engine.saveLocation(newer)
        try await tablet.engine.sync()
        let report = try await phone.engine.sync()
        #expect(report.conflicts == 1 && report.rejected == 0)
        #expect(
            await phone.events.contains { event in
                if case .conflictResolved(.location(let record)) = event { return record.name == "Newer rename" }
                return false
            })
        #expect(try await phone.engine.location(id: place.id)?.name == "Newer rename")
        #expect(try await phone.engine.pendingChanges().isEmpty)
        #expect(try await phone.engine.refusedChanges().isEmpty)
    }
}
