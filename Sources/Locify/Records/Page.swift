/// One page of a paginated listing and what the client needs to page further (openapi.yaml).
public struct Page<Record: Sendable>: Sendable {
    /// The records of this page, in the listing's order.
    public var records: [Record]
    /// How many records the whole listing has (`total_count`).
    public var totalCount: Int64
    /// The 1-based page number this is.
    public var page: Int
    /// The page size that was asked for (records per page).
    public var size: Int

    /// A page of `records` out of `totalCount`, as page `page` of size `size`.
    public init(records: [Record], totalCount: Int64, page: Int, size: Int) {
        self.records = records
        self.totalCount = totalCount
        self.page = page
        self.size = size
    }

    /// `ceil(total_count / size)`: 0 when there is nothing.
    public var totalPages: Int64 { (totalCount + Int64(size) - 1) / Int64(size) }
}

/// Which page of a listing to read; validated by the API layer (page >= 1, size 1-100).
public struct PageRequest: Sendable, Equatable {
    /// The largest page size a client may ask for.
    public static let maxSize = 100
    /// The page size when the client names none.
    public static let defaultSize = 20

    /// The 1-based page number.
    public var page: Int
    /// Records per page, 1 to `maxSize`.
    public var size: Int

    /// A request for page `page` (1-based) of `size` records.
    public init(page: Int = 1, size: Int = PageRequest.defaultSize) {
        self.page = page
        self.size = size
    }

    /// The rows to skip; saturates for pages too far out to reach (they are past the end anyway).
    var offset: Int64 {
        let (offset, overflow) = Int64(page - 1).multipliedReportingOverflow(by: Int64(size))
        return overflow ? Int64.max : offset
    }
}
