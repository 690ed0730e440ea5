import FoundationEssentials

/// The filters, sort and page of `GET /v1/locations` (openapi.yaml), validated.
public struct LocationQuery: Sendable, Equatable {
    /// The orders the listing offers; every one ends with id ascending. (Their names on the wire,
    /// `sort=created_at` and so on, are `LocifyAPI`'s.)
    public enum Sort: Sendable, Hashable, CaseIterable {
        /// Newest first (the default).
        case createdAt
        /// Most recently changed first.
        case updatedAt
        /// A-Z, case-insensitive.
        case name
    }

    /// Which page of the listing.
    public var page: PageRequest
    /// Only locations of this category, when set.
    public var categoryID: UUID?
    /// Only favourites (true) or only the others (false), when set.
    public var isFavorite: Bool?
    /// The `q` substring filter, case-insensitive and literal; nil or empty means no filter.
    public var search: String?
    /// The order of the listing.
    public var sort: Sort

    /// A query; the defaults list every location, newest first.
    public init(
        page: PageRequest = PageRequest(), categoryID: UUID? = nil, isFavorite: Bool? = nil, search: String? = nil,
        sort: Sort = .createdAt
    ) {
        self.page = page
        self.categoryID = categoryID
        self.isFavorite = isFavorite
        self.search = search
        self.sort = sort
    }
}
