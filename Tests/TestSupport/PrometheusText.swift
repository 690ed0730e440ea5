import Foundation

/// A problem in a Prometheus text exposition, with the offending line.
public struct PrometheusTextError: Error, Sendable, CustomStringConvertible {
    /// The offending line.
    public var line: String
    /// What is wrong with it.
    public var problem: String

    /// The problem and the line.
    public var description: String { "\(problem): \(line)" }
}

/// A Prometheus text exposition (format 0.0.4) parsed strictly, so tests catch malformed output:
/// every sample belongs to a family declared by a `# TYPE` line before it, label values are
/// correctly quoted and escaped, values are numbers, and no series appears twice.
public struct PrometheusText: Sendable {
    /// One sample line: metric name, labels and value.
    public struct Sample: Sendable, Equatable {
        /// The metric name.
        public var name: String
        /// The labels, by name.
        public var labels: [String: String]
        /// The value.
        public var value: Double
    }

    /// Every sample, in the order of the text.
    public private(set) var samples: [Sample] = []
    /// Metric family name to its declared type (`counter`, `gauge`, `histogram`, ...).
    public private(set) var types: [String: String] = [:]
    /// Metric family name to its help text.
    public private(set) var help: [String: String] = [:]

    /// Parses and checks a text exposition; throws on the first malformed line.
    public init(_ text: String) throws(PrometheusTextError) {
        var seen = Set<String>()
        for line in text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init) {
            if line.isEmpty { continue }
            if line.hasPrefix("#") {
                try readComment(line)
                continue
            }
            let sample = try Self.parseSample(line)
            guard let family = family(of: sample.name) else {
                throw PrometheusTextError(line: line, problem: "sample without a preceding # TYPE")
            }
            if types[family] == "histogram", sample.name.hasSuffix("_bucket"), sample.labels["le"] == nil {
                throw PrometheusTextError(line: line, problem: "histogram bucket without le")
            }
            let key = sample.name + "|" + sample.labels.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: ",")
            guard seen.insert(key).inserted else { throw PrometheusTextError(line: line, problem: "duplicate series") }
            samples.append(sample)
        }
    }

    /// The samples of the metric `name` (for a histogram: `x_bucket`, `x_sum` or `x_count`).
    public func samples(named name: String) -> [Sample] {
        samples.filter { $0.name == name }
    }

    /// The value of the series `name` whose labels are exactly `labels`.
    public func value(_ name: String, _ labels: [String: String] = [:]) -> Double? {
        samples.first { $0.name == name && $0.labels == labels }?.value
    }

    /// The sum over the series of `name` whose labels include `labels`.
    public func sum(_ name: String, matching labels: [String: String] = [:]) -> Double {
        samples.filter { sample in
            sample.name == name && labels.allSatisfy { sample.labels[$0.key] == $0.value }
        }.reduce(0) { $0 + $1.value }
    }

    private mutating func readComment(_ line: String) throws(PrometheusTextError) {
        let parts = line.split(separator: " ", maxSplits: 3, omittingEmptySubsequences: false).map(String.init)
        guard parts.count >= 3, parts[0] == "#", parts[1] == "HELP" || parts[1] == "TYPE" else { return }
        let name = parts[2]
        guard Self.isMetricName(name) else { throw PrometheusTextError(line: line, problem: "bad metric name") }
        let rest = parts.count > 3 ? parts[3] : ""
        if parts[1] == "HELP" {
            guard help[name] == nil else { throw PrometheusTextError(line: line, problem: "second HELP") }
            help[name] = rest
        } else {
            guard types[name] == nil else { throw PrometheusTextError(line: line, problem: "second TYPE") }
            guard ["counter", "gauge", "histogram", "summary", "untyped"].contains(rest) else {
                throw PrometheusTextError(line: line, problem: "unknown type")
            }
            guard !samples.contains(where: { family(of: $0.name) == name }) else {
                throw PrometheusTextError(line: line, problem: "TYPE after the family's samples")
            }
            types[name] = rest
        }
    }

    /// The declared family a sample name belongs to (histogram and summary suffixes stripped).
    private func family(of name: String) -> String? {
        if types[name] != nil { return name }
        for suffix in ["_bucket", "_sum", "_count"] where name.hasSuffix(suffix) {
            let base = String(name.dropLast(suffix.count))
            if let type = types[base], type == "histogram" || (type == "summary" && suffix != "_bucket") {
                return base
            }
        }
        return nil
    }

    private static func isMetricName(_ name: String) -> Bool {
        guard let first = name.unicodeScalars.first, first.isASCII,
            first.properties.isAlphabetic || first == "_" || first == ":"
        else { return false }
        return name.unicodeScalars.allSatisfy { scalar in
            scalar.isASCII && (scalar.properties.isAlphabetic || ("0"..."9").contains(scalar) || scalar == "_" || scalar == ":")
        }
    }

    private static func parseSample(_ line: String) throws(PrometheusTextError) -> Sample {
        let scalars = Array(line.unicodeScalars)
        var index = 0
        while index < scalars.count, scalars[index] != "{", scalars[index] != " " { index += 1 }
        let name = String(String.UnicodeScalarView(scalars[0..<index]))
        guard isMetricName(name) else { throw PrometheusTextError(line: line, problem: "bad metric name") }
        var labels: [String: String] = [:]
        if index < scalars.count, scalars[index] == "{" {
            index += 1
            while true {
                guard index < scalars.count else { throw PrometheusTextError(line: line, problem: "unterminated labels") }
                if scalars[index] == "}" {
                    index += 1
                    break
                }
                let nameStart = index
                while index < scalars.count, scalars[index] != "=" { index += 1 }
                let labelName = String(String.UnicodeScalarView(scalars[nameStart..<index]))
                guard isMetricName(labelName), !labelName.contains(":"), index + 1 < scalars.count, scalars[index + 1] == "\"" else {
                    throw PrometheusTextError(line: line, problem: "bad label")
                }
                index += 2
                var value = ""
                while true {
                    guard index < scalars.count else { throw PrometheusTextError(line: line, problem: "unterminated label value") }
                    let scalar = scalars[index]
                    index += 1
                    if scalar == "\"" { break }
                    if scalar == "\\" {
                        guard index < scalars.count else { throw PrometheusTextError(line: line, problem: "bad escape") }
                        switch scalars[index] {
                        case "\\": value.append("\\")
                        case "\"": value.append("\"")
                        case "n": value.append("\n")
                        default: throw PrometheusTextError(line: line, problem: "bad escape")
                        }
                        index += 1
                    } else {
                        value.unicodeScalars.append(scalar)
                    }
                }
                guard labels.updateValue(value, forKey: labelName) == nil else {
                    throw PrometheusTextError(line: line, problem: "repeated label")
                }
                if index < scalars.count, scalars[index] == "," { index += 1 }
            }
        }
        let rest = String(String.UnicodeScalarView(scalars[index...])).split(separator: " ").map(String.init)
        guard (1...2).contains(rest.count), let value = parseValue(rest[0]) else {
            throw PrometheusTextError(line: line, problem: "bad value")
        }
        if rest.count == 2, Int64(rest[1]) == nil { throw PrometheusTextError(line: line, problem: "bad timestamp") }
        return Sample(name: name, labels: labels, value: value)
    }

    private static func parseValue(_ text: String) -> Double? {
        switch text {
        case "+Inf": return .infinity
        case "-Inf": return -.infinity
        case "NaN": return .nan
        default: return Double(text)
        }
    }
}
