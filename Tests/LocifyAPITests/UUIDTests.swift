import Foundation
import Testing
import TestSupport

@testable import LocifyAPI

@Suite("UUIDs: any case in, lower case out")
struct UUIDTests {
    @Test("parses upper and lower case and prints lower case")
    func parsesAnyCase() throws {
        let upper = try #require(UUID(apiString: "1F3599BE-6E0E-5CF8-AA59-B97DFDC46AEC"))
        let lower = try #require(UUID(apiString: "1f3599be-6e0e-5cf8-aa59-b97dfdc46aec"))
        #expect(upper == lower)
        #expect(upper.lowercasedString == "1f3599be-6e0e-5cf8-aa59-b97dfdc46aec")
    }

    /// The space, sign and doubled-hyphen cases are ones Foundation's Linux `UUID(uuidString:)`
    /// accepts, which is why `init(apiString:)` keeps its own parser.
    @Test(
        "refuses other shapes",
        arguments: [
            "", "not-a-uuid", "1f3599be6e0e5cf8aa59b97dfdc46aec", "{1f3599be-6e0e-5cf8-aa59-b97dfdc46aec}",
            "1f3599be-6e0e-5cf8-aa59-b97dfdc46ae", "1f3599be-6e0e-5cf8-aa59-b97dfdc46aecc",
            "1f3599be_6e0e-5cf8-aa59-b97dfdc46aec", "1f3599bg-6e0e-5cf8-aa59-b97dfdc46aec",
            " 1f3599be-6e0e-5cf8-aa59-b97dfdc46ae", "1f3599be-6e0e-5cf8-aa59-b97dfdc46ae ",
            "1f3599be-6e0e-5cf8-aa59+b97dfdc46aec", "1f3599be-+e0e-5cf8-aa59-b97dfdc46aec",
            "1f3599be-6e0e-5cf8-aa59-b97dfdc46aé", "1f3599be--e0e-5cf8-aa59-b97dfdc46aec",
        ])
    func refusesMalformed(_ text: String) {
        #expect(UUID(apiString: text) == nil)
    }

    @Test("the text form is Foundation's, lower-cased, for every digit value and appends after what is there")
    func textForm() {
        var generator = SeededGenerator(seed: 16)
        for _ in 0..<200 {
            var bytes = [UInt8](repeating: 0, count: 16)
            for index in bytes.indices { bytes[index] = UInt8.random(in: 0...255, using: &generator) }
            let uuid = UUID(uuid: (bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7],
                                   bytes[8], bytes[9], bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]))
            #expect(uuid.lowercasedString == uuid.uuidString.lowercased())
            var text = Array("id=".utf8)
            uuid.appendLowercased(to: &text)
            #expect(String(decoding: text, as: UTF8.self) == "id=" + uuid.uuidString.lowercased())
        }
    }
}
