import Foundation
import JSON
import Testing
import TestSupport

@testable import Locify

/// Regression tests for what fuzzing found (RELIABILITY.md, "Fuzzing"); the inputs themselves
/// live in `Fuzz/regressions/<target>/` and are replayed by the fuzz targets too.
@Suite("Fuzz regressions: request decoding")
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

    @Test("drafts and delete options refuse such timestamps with E001 naming the field")
    func draftsRefuse() {
        let id = "0b6a9e0e-0000-4000-8000-0000000000c9"
        let category: JSONValue = ["id": .string(id), "name": "Old", "created_at": "0000-01-01T00:00:00+01:00"]
        #expect(throws: LocifyError.invalid("created_at", "must be an RFC 3339 timestamp")) {
            try CategoryDraft(json: category, userID: "user")
        }
        #expect(throws: LocifyError.invalid("updated_at", "must be an RFC 3339 timestamp")) {
            try DeleteOptions(body: nil, query: [(name: "updated_at", value: "9999-12-31T23:59:60Z")])
        }
    }

    @Test("every committed regression input of the request-decoding target decodes without a trap, and its timestamps read back")
    func replayRegressionInputs() throws {
        let folder = ProjectPaths.root.appendingPathComponent("Fuzz/regressions/request-decoding")
        let files = try FileManager.default.contentsOfDirectory(atPath: folder.path)
        #expect(!files.isEmpty)
        for file in files {
            let bytes = try #require(FileManager.default.contents(atPath: folder.appendingPathComponent(file).path))
            let body = try JSONParser.parse(Array(bytes))
            if let draft = try? CategoryDraft(json: body, userID: "user") {
                for timestamp in [draft.createdAt, draft.updatedAt].compactMap({ $0 }) {
                    #expect(Timestamp(rfc3339: timestamp.rfc3339) == timestamp, "\(file)")
                }
            }
        }
    }
}
