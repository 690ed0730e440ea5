/// One page of a paginated listing and what the client needs to page further (API.md section 6).
public struct Page<Record: Sendable>: Sendable {
    public var records: [Record]
    public var totalCount: Int64
    public var page: Int
    public var size: Int

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
    public static let maxSize = 100
    public static let defaultSize = 20

    public var page: Int
    public var size: Int

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
