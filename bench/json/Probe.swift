import Foundation
import JSON

/// `--probe`: how each parser treats the inputs the strict parser was written for (duplicate
/// keys, deep nesting, numbers out of range or needing exact rounding, malformed text), printed
/// as a table for docs/ARCHITECTURE.md. Observations, not assertions.
enum Probe {
    private struct Subject: Decodable {
        let sub: String
    }

    /// Arrays of arrays, any depth (the decoder parses the whole document before decoding).
    private struct NestedArrays: Decodable {
        init(from decoder: any Decoder) throws {
            var container = try decoder.unkeyedContainer()
            while !container.isAtEnd { _ = try container.decode(NestedArrays.self) }
        }
    }

    private struct Row {
        let input: String
        let bytes: [UInt8]
        /// What JSONDecoder decodes the input into.
        let decode: (JSONDecoder, Data) throws -> String
    }

    static func run() {
        let deep = { (depth: Int) -> [UInt8] in
            Array(repeating: UInt8(ascii: "["), count: depth) + Array(repeating: UInt8(ascii: "]"), count: depth)
        }
        let decodeSubject: (JSONDecoder, Data) throws -> String = { decoder, data in
            "sub = \(try decoder.decode(Subject.self, from: data).sub)"
        }
        let decodeNumbers: (JSONDecoder, Data) throws -> String = { decoder, data in
            try decoder.decode([Double].self, from: data).map(describe).joined(separator: ", ")
        }
        let decodeArrays: (JSONDecoder, Data) throws -> String = { decoder, data in
            _ = try decoder.decode(NestedArrays.self, from: data)
            return "nested arrays"
        }
        let decodeStrings: (JSONDecoder, Data) throws -> String = { decoder, data in
            try decoder.decode([String].self, from: data).map { "\"\($0.debugDescription.dropFirst().dropLast())\"" }
                .joined(separator: ", ")
        }
        let rows = [
            Row(input: #"{"sub":"alice","sub":"mallory"}"#, bytes: Array(#"{"sub":"alice","sub":"mallory"}"#.utf8), decode: decodeSubject),
            Row(input: "65 nested arrays", bytes: deep(65), decode: decodeArrays),
            Row(input: "513 nested arrays", bytes: deep(513), decode: decodeArrays),
            Row(input: "100,000 nested arrays", bytes: deep(100_000), decode: decodeArrays),
            Row(input: "[1e400]", bytes: Array("[1e400]".utf8), decode: decodeNumbers),
            Row(input: "[-0]", bytes: Array("[-0]".utf8), decode: decodeNumbers),
            Row(input: "[9007199254740993]", bytes: Array("[9007199254740993]".utf8), decode: decodeNumbers),
            Row(input: "[0.1, 2.2250738585072011e-308]", bytes: Array("[0.1, 2.2250738585072011e-308]".utf8), decode: decodeNumbers),
            Row(input: "[1,]", bytes: Array("[1,]".utf8), decode: decodeNumbers),
            Row(input: "[NaN]", bytes: Array("[NaN]".utf8), decode: decodeNumbers),
            Row(input: "[01]", bytes: Array("[01]".utf8), decode: decodeNumbers),
            Row(input: #"["\ud800"] (lone surrogate)"#, bytes: Array(#"["\ud800"]"#.utf8), decode: decodeStrings),
            Row(input: "[\"<0xFF>\"] (invalid UTF-8)", bytes: [0x5B, 0x22, 0xFF, 0x22, 0x5D], decode: decodeStrings),
            Row(input: "[\"<0x01>\"] (raw control character)", bytes: [0x5B, 0x22, 0x01, 0x22, 0x5D], decode: decodeStrings),
        ]

        print("| input | JSON (this repository) | Foundation JSONSerialization | Foundation JSONDecoder |")
        print("|---|---|---|---|")
        let decoder = JSONDecoder()
        for row in rows {
            let data = Data(row.bytes)
            let ours: String
            do {
                ours = "accepted: " + String(decoding: JSONWriter.encode(try JSONParser.parse(row.bytes)).prefix(48), as: UTF8.self)
            } catch {
                ours = "refused (\(error.reason))"
            }
            let serialization: String
            do {
                serialization = "accepted: " + describeFoundation(try JSONSerialization.jsonObject(with: data))
            } catch {
                serialization = "refused"
            }
            let decoded: String
            do {
                decoded = "accepted: " + (try row.decode(decoder, data))
            } catch {
                decoded = "refused"
            }
            print("| \(row.input) | \(ours) | \(serialization) | \(decoded) |")
        }
        print("")
        roundingSweep()
    }

    /// Parses many decimal texts and counts the results that are not the nearest double (Swift's
    /// `Double(String)`, which rounds correctly, is the reference).
    private static func roundingSweep() {
        var generator = SplitMix64(seed: 42)
        var groups: [(name: String, texts: [String])] = [
            (
                "known hard cases",
                [
                    "0.1", "0.2", "0.3", "2.2250738585072011e-308", "2.2250738585072012e-308", "1.7976931348623157e308",
                    "4.9e-324", "5e-324", "1e23", "8.98846567431158e307", "9007199254740993",
                    "123456789012345678901234567890", "0.30000000000000004",
                    "1.00000000000000011102230246251565404236316680908203125", "7.1e-10", "-0", "179.99999999999997",
                ]
            ),
            ("coordinates, 6 decimals", []), ("coordinates, 15 decimals", []),
            ("random doubles, shortest form", []), ("random doubles, 17 digits", []),
        ]
        for _ in 0..<20_000 {
            let coordinate = (Double(generator.next() % 360_000_000) / 1_000_000) - 180
            groups[1].texts.append(String(format: "%.6f", coordinate))
            groups[2].texts.append(String(format: "%.15f", coordinate))
            let value = Double(bitPattern: generator.next() & 0x7FEF_FFFF_FFFF_FFFF)
            groups[3].texts.append(value.description)
            groups[4].texts.append(String(format: "%.17g", value))
        }
        let decoder = JSONDecoder()
        var examples: [String] = []
        print("Numbers: each decimal text parsed as `[text]`, the result compared bit for bit with the nearest")
        print("double (Swift's `Double(String)`, which rounds correctly); \"wrong\" counts results that are not it:")
        print("")
        print("| texts | count | JSON (this repository) wrong | JSONSerialization wrong | JSONDecoder wrong |")
        print("|---|---:|---:|---:|---:|")
        for group in groups {
            var wrong = (ours: 0, serialization: 0, decoder: 0)
            for text in group.texts {
                guard let expected = Double(text) else { continue }
                let document = Array("[\(text)]".utf8)
                let data = Data(document)
                let ours = (try? JSONParser.parse(document))?.arrayValue?.first?.numberValue
                if ours?.bitPattern != expected.bitPattern { wrong.ours += 1 }
                let serialization = ((try? JSONSerialization.jsonObject(with: data)) as? [Any])?.first as? NSNumber
                if serialization?.doubleValue.bitPattern != expected.bitPattern {
                    wrong.serialization += 1
                    if examples.count < 4, let serialization {
                        examples.append("`\(text)` -> `\(describe(serialization.doubleValue))`")
                    }
                }
                let decoded = (try? decoder.decode([Double].self, from: data))?.first
                if decoded?.bitPattern != expected.bitPattern { wrong.decoder += 1 }
            }
            print("| \(group.name) | \(group.texts.count) | \(wrong.ours) | \(wrong.serialization) | \(wrong.decoder) |")
        }
        if !examples.isEmpty {
            print("")
            print("JSONSerialization examples: " + examples.joined(separator: ", "))
        }
    }

    private static func describe(_ value: Double) -> String {
        value.sign == .minus && value == 0 ? "-0.0" : "\(value)"
    }

    private static func describeFoundation(_ value: Any) -> String {
        switch value {
        case let dictionary as [String: Any]:
            if let subject = dictionary["sub"] { return "sub = \(subject)" }
            return "object of \(dictionary.count)"
        case let array as [Any]:
            if let numbers = array as? [NSNumber] {
                return numbers.map { "\($0) (doubleValue \(describe($0.doubleValue)))" }.joined(separator: ", ")
            }
            if let text = array.first as? String, array.count == 1 {
                return "\"\(text.debugDescription.dropFirst().dropLast())\" (\(text.unicodeScalars.map { String($0.value, radix: 16) }.joined(separator: " ")))"
            }
            return "array of \(array.count)"
        default:
            return "\(value)"
        }
    }
}
