import Foundation
import JSON
import Locify
import LocifyRules
import Primitives
import Testing
import TestSupport

@testable import LocifyAPI

/// Regression tests for what fuzzing the request decoding found (RELIABILITY.md, "Fuzzing"); the
/// inputs live in `Fuzz/regressions/request-decoding/` and are replayed by the fuzz target too.
@Suite("Fuzz regressions: request decoding (drafts and delete options)")
struct RequestDecodingFuzzRegressionTests {
    @Test("drafts and delete options refuse a timestamp outside 0000-9999 with E001 naming the field")
    func draftsRefuse() {
        let id = "0b6a9e0e-0000-4000-8000-0000000000c9"
        let category: JSONValue = ["id": .string(id), "name": "Old", "created_at": "0000-01-01T00:00:00+01:00"]
        #expect(throws: RequestDecodingError.invalid("created_at", "must be an RFC 3339 timestamp")) {
            try CategoryDraft(json: category, userID: "user")
        }
        #expect(throws: RequestDecodingError.invalid("updated_at", "must be an RFC 3339 timestamp")) {
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
