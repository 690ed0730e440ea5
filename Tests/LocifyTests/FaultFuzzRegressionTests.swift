import Foundation
import LocifyRules
import Primitives
import Testing

@testable import Locify

/// Regression tests for what fuzzing found (RELIABILITY.md, "Fuzzing"); the inputs themselves
/// live in `Fuzz/regressions/<target>/` and are replayed by the fuzz targets too. The decoding
/// side (drafts from JSON bodies) is in LocifyAPITests' `RequestDecodingFuzzRegressionTests`.
@Suite("Fuzz regressions: request decoding (timestamps)")
struct FaultFuzzRegressionTests {
    @Test(
        "an offset or a leap second that pushes a date outside 0000-9999 is not a timestamp (it cannot be written back)",
        arguments: [
            "0000-01-01T00:00:00+01:00", "0000-01-01T00:59:59.999+01:00", "0000-01-01T00:00:00+00:01",
            "9999-12-31T23:59:60Z", "9999-12-31T23:30:00-00:31", "9999-12-31T23:59:59.999-23:59",
        ])
    func outsideTheWritableRange(text: String) {
        #expect(Timestamp(rfc3339: text) == nil)
    }

    @Test(
        "the first and last writable instants are accepted and read back from their own output",
        arguments: [
            "0000-01-01T00:00:00Z", "0000-01-01T01:00:00+01:00", "0000-01-01T00:00:00-23:59",
            "9999-12-31T23:59:59.999Z", "9999-12-31T22:59:59.999-01:00", "1969-12-31T23:59:60Z",
        ])
    func writableEdges(text: String) throws {
        let timestamp = try #require(Timestamp(rfc3339: text))
        #expect(timestamp.rfc3339.utf8.count == 24)
        #expect(Timestamp(rfc3339: timestamp.rfc3339) == timestamp)
    }
}
