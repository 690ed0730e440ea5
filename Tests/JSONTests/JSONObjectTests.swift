import JSON
import Testing

@Suite("JSONObject")
struct JSONObjectTests {
    @Test("keeps members in order and looks them up by key")
    func orderAndLookup() {
        var object: JSONObject = ["b": 1, "a": 2]
        object["c"] = "x"
        #expect(object.keys == ["b", "a", "c"])
        #expect(object["a"] == .number(2))
        #expect(object["missing"] == nil)
        object["b"] = nil
        #expect(object.keys == ["a", "c"])
        #expect(object.count == 2)
        object["null"] = .null
        #expect(object.contains(key: "null"))
        #expect(object["null"] == .some(.null))
    }

    @Test("large objects stay correct across inserts and removals")
    func largeObjects() {
        var object = JSONObject()
        for index in 0..<50 { object["k\(index)"] = .number(Double(index)) }
        #expect(object["k37"] == .number(37))
        object["k10"] = nil
        #expect(object["k10"] == nil)
        #expect(object["k49"] == .number(49))
        #expect(object.count == 49)
        object["k49"] = "replaced"
        #expect(object["k49"] == "replaced")
        #expect(object.keys.last == "k49")
    }

    @Test("equality ignores member order")
    func equality() {
        let first: JSONObject = ["a": 1, "b": [true]]
        let second: JSONObject = ["b": [true], "a": 1]
        #expect(first == second)
        #expect(first != ["a": 1, "b": [false]])
        #expect(first != ["a": 1])
    }

    @Test("iterates members as key-value pairs")
    func iteration() {
        let object: JSONObject = ["x": 1, "y": 2]
        let pairs = object.map { "\($0.key)=\($0.value.int64Value ?? -1)" }
        #expect(pairs == ["x=1", "y=2"])
    }
}
