import Foundation
import Testing

@testable import Locify

@Suite("Default categories")
struct DefaultCategoriesTests {
    @Test("default category ids are the UUIDv5 of openapi.yaml")
    func defaultIDs() {
        #expect(DefaultCategories.all.map(\.name) == ["Restaurant", "Cafe", "Tourist Attraction", "Favorites"])
        #expect(
            DefaultCategories.all.map { $0.id.uuidString.lowercased() } == [
                "1f3599be-6e0e-5cf8-aa59-b97dfdc46aec", "a1050188-e456-5998-8293-a282220c9930",
                "6c2f54c9-801e-5a83-bd62-9cb6d70037af", "663e8afc-3c33-5d02-920a-fb4e755a6efb",
            ])
    }
}
