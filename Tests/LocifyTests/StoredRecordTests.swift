import Foundation
import LocifyRules
import Primitives
import Testing

@testable import Locify

@Suite("Stored records: the column lists and states categories and locations share")
struct StoredRecordTests {
    let id = UUID(uuidString: "6F1C2A4E-0B7D-4C3A-9E5F-1A2B3C4D5E6F") ?? UUID()
    let at = Timestamp(milliseconds: 1_748_733_300_123)

    var category: Category {
        Category(id: id, name: "Cafés", icon: nil, locationCount: 2, version: 3, createdAt: at, updatedAt: at, deletedAt: nil)
    }

    var location: Location {
        Location(
            id: id, categoryID: id, name: "Home", address: nil, description: nil, latitude: 1, longitude: 2, isFavorite: false,
            imageURLs: [], version: 1, createdAt: at, updatedAt: at, deletedAt: nil)
    }

    @Test("a category's columns are every column its row decoding reads, in order, under the alias")
    func categoryColumns() {
        #expect(
            Category.columns("c").sql
                == "c.id, c.name, c.icon, c.location_count, c.version, c.created_at, c.updated_at, c.deleted_at, c.field_stamps")
    }

    @Test("a location's columns are every column its row decoding reads, in order, under the alias")
    func locationColumns() {
        #expect(
            Location.columns("l").sql
                == "l.id, l.category_id, l.name, l.address, l.description, l.latitude, l.longitude, l.is_favorite, "
                + "l.image_urls, l.version, l.created_at, l.updated_at, l.deleted_at, l.own_category_id, l.hidden, l.field_stamps")
    }

    @Test("composed column sets select one list after the other and count every column once")
    func composedColumns() {
        let listing = Category.columns("c").listing(total: "u.category_count")
        #expect(listing.sql == "u.category_count, " + Category.columns("c").sql)
        #expect(listing.width == 1 + Category.columns("c").width)
        #expect(Category.columns("c").width == 9)
        #expect(Location.columns("l").width == 16)
        let pair = ColumnSet<Int64>(expression: "r.change_seq").then(Location.columns("r").orNil)
        #expect(pair.sql.hasPrefix("r.change_seq, r.id, r.category_id"))
        #expect(pair.width == 17)
    }

    @Test("a live record's state is the record; a deleted one's is a tombstone of its kind, id and deletion time")
    func states() {
        #expect(category.state == .category(category))
        #expect(location.state == .location(location))
        var deletedCategory = category
        deletedCategory.deletedAt = at.adding(milliseconds: 5)
        #expect(deletedCategory.state == .tombstone(.category, id: id, deletedAt: at.adding(milliseconds: 5)))
        var deletedLocation = location
        deletedLocation.deletedAt = at
        #expect(deletedLocation.state == .tombstone(.location, id: id, deletedAt: at))
    }

    @Test("the field clock: the stored stamps, or every field at updated_at without them; a location hidden with its category is not deleted")
    func fieldClock() {
        #expect(category.fieldClock == FieldLastWriteWins<CategoryField>.Clock(writtenWhole: at))
        var stamped = category
        stamped.storedFieldStamps = [at.milliseconds - 5, at.milliseconds]
        #expect(stamped.fieldClock[.name] == at.adding(milliseconds: -5))
        #expect(stamped.fieldClock[.icon] == at)
        var deleted = location
        deleted.deletedAt = at
        #expect(deleted.fieldClock == FieldLastWriteWins<LocationField>.Clock(writtenWhole: at, deletedAt: at))
        deleted.isHiddenWithCategory = true
        #expect(deleted.fieldClock == FieldLastWriteWins<LocationField>.Clock(writtenWhole: at))
    }
}
