import Primitives

/// A strict RFC 8259 parser working directly on bytes.
///
/// Accepts exactly one value surrounded by optional whitespace. Rejects duplicate object keys,
/// invalid UTF-8, unescaped control characters, lone surrogate escapes, leading zeros, `+`
/// signs, `NaN`/`Infinity`, trailing commas, comments and numbers that overflow `Double`.
/// `\u0000` is accepted (it is valid JSON). Nesting is limited by `maxDepth` and handled with an
/// explicit stack, so hostile nesting cannot exhaust the thread's stack.
public enum JSONParser {
    /// Parses a complete document. `maxDepth` is the number of nested arrays/objects allowed.
    public static func parse(_ bytes: [UInt8], maxDepth: Int = 64) throws(JSONParseError) -> JSONValue {
        let result: Result<JSONValue, JSONParseError> = bytes.withUnsafeBufferPointer { buffer in
            var parser = Parser(input: buffer, maxDepth: maxDepth)
            do throws(JSONParseError) {
                return .success(try parser.parseDocument())
            } catch {
                return .failure(error)
            }
        }
        return try result.get()
    }

    /// Parses a complete document held in raw memory (e.g. a request body buffer).
    public static func parse(_ bytes: UnsafeRawBufferPointer, maxDepth: Int = 64) throws(JSONParseError)
        -> JSONValue
    {
        var parser = Parser(input: bytes.bindMemory(to: UInt8.self), maxDepth: maxDepth)
        return try parser.parseDocument()
    }

    /// Parses a complete document given as text.
    public static func parse(_ text: String, maxDepth: Int = 64) throws(JSONParseError) -> JSONValue {
        try parse(Array(text.utf8), maxDepth: maxDepth)
    }
}

private enum ASCII {
    static let quote: UInt8 = 0x22
    static let backslash: UInt8 = 0x5C
    static let slash: UInt8 = 0x2F
    static let comma: UInt8 = 0x2C
    static let colon: UInt8 = 0x3A
    static let openBrace: UInt8 = 0x7B
    static let closeBrace: UInt8 = 0x7D
    static let openBracket: UInt8 = 0x5B
    static let closeBracket: UInt8 = 0x5D
    static let minus: UInt8 = 0x2D
    static let plus: UInt8 = 0x2B
    static let dot: UInt8 = 0x2E
    static let zero: UInt8 = 0x30
    static let nine: UInt8 = 0x39
    static let lowerE: UInt8 = 0x65
    static let upperE: UInt8 = 0x45
    static let space: UInt8 = 0x20
    static let tab: UInt8 = 0x09
    static let newline: UInt8 = 0x0A
    static let carriageReturn: UInt8 = 0x0D
}

/// Exact powers of ten representable in a Double (Clinger's fast path).
private let exactPowersOfTen: [Double] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
    1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
]

/// One open array or object on the explicit parse stack.
private struct Frame {
    let isObject: Bool
    var elements: [JSONValue] = []
    var members: [JSONObject.Member] = []
    var keySet: Set<JSONKey>? = nil
    var pendingKey: String = ""

    /// Objects with more members than this detect duplicates with a set instead of a scan.
    static let keySetThreshold = 16
}

private struct Parser {
    let input: UnsafeBufferPointer<UInt8>
    let maxDepth: Int
    var position = 0
    var scratch: [UInt8] = []

    init(input: UnsafeBufferPointer<UInt8>, maxDepth: Int) {
        self.input = input
        self.maxDepth = maxDepth
    }

    func failure(_ reason: String) -> JSONParseError {
        JSONParseError(offset: position, reason: reason)
    }

    mutating func parseDocument() throws(JSONParseError) -> JSONValue {
        var stack: [Frame] = []
        skipWhitespace()
        parsing: while true {
            guard position < input.count else { throw failure("unexpected end of input") }
            var value: JSONValue
            switch input[position] {
            case ASCII.openBrace:
                guard stack.count < maxDepth else { throw failure("nesting deeper than \(maxDepth)") }
                position += 1
                skipWhitespace()
                if position < input.count, input[position] == ASCII.closeBrace {
                    position += 1
                    value = .object(JSONObject())
                } else {
                    var frame = Frame(isObject: true)
                    try readKey(into: &frame)
                    stack.append(frame)
                    continue parsing
                }
            case ASCII.openBracket:
                guard stack.count < maxDepth else { throw failure("nesting deeper than \(maxDepth)") }
                position += 1
                skipWhitespace()
                if position < input.count, input[position] == ASCII.closeBracket {
                    position += 1
                    value = .array([])
                } else {
                    stack.append(Frame(isObject: false))
                    continue parsing
                }
            case ASCII.quote:
                value = .string(try parseString())
            case 0x74:  // t
                try expectLiteral("true")
                value = .bool(true)
            case 0x66:  // f
                try expectLiteral("false")
                value = .bool(false)
            case 0x6E:  // n
                try expectLiteral("null")
                value = .null
            case ASCII.minus, ASCII.zero...ASCII.nine:
                value = .number(try parseNumber())
            case ASCII.closeBracket, ASCII.closeBrace:
                throw failure(stack.isEmpty ? "unexpected closing bracket" : "trailing comma or missing value")
            default:
                throw failure("unexpected character")
            }

            // A value is complete: attach it to the enclosing containers, closing them as needed.
            while true {
                guard !stack.isEmpty else {
                    skipWhitespace()
                    guard position == input.count else { throw failure("unexpected data after the value") }
                    return value
                }
                let top = stack.count - 1
                if stack[top].isObject {
                    let key = stack[top].pendingKey
                    stack[top].members.append((key: key, value: value))
                } else {
                    stack[top].elements.append(value)
                }
                skipWhitespace()
                guard position < input.count else { throw failure("unexpected end of input") }
                let byte = input[position]
                if byte == ASCII.comma {
                    position += 1
                    skipWhitespace()
                    if stack[top].isObject {
                        try readKey(into: &stack[top])
                    }
                    continue parsing
                }
                let closing = stack[top].isObject ? ASCII.closeBrace : ASCII.closeBracket
                guard byte == closing else {
                    throw failure(stack[top].isObject ? "expected ',' or '}'" : "expected ',' or ']'")
                }
                position += 1
                let frame = stack.removeLast()
                value = frame.isObject ? .object(JSONObject(uniqueMembers: frame.members)) : .array(frame.elements)
            }
        }
    }

    /// Reads `"key" :` for the next member of the object in `frame`, rejecting duplicates.
    mutating func readKey(into frame: inout Frame) throws(JSONParseError) {
        guard position < input.count else { throw failure("unexpected end of input") }
        guard input[position] == ASCII.quote else {
            throw failure(input[position] == ASCII.closeBrace ? "trailing comma" : "expected a string key")
        }
        let keyOffset = position
        let key = try parseString()
        if frame.keySet == nil, frame.members.count >= Frame.keySetThreshold {
            frame.keySet = Set(frame.members.map { JSONKey($0.key) })
        }
        let duplicate: Bool
        if frame.keySet != nil {
            duplicate = !(frame.keySet?.insert(JSONKey(key)).inserted ?? true)
        } else {
            duplicate = frame.members.contains { JSONKey.same($0.key, key) }
        }
        guard !duplicate else { throw JSONParseError(offset: keyOffset, reason: "duplicate key") }
        frame.pendingKey = key
        skipWhitespace()
        guard position < input.count, input[position] == ASCII.colon else { throw failure("expected ':'") }
        position += 1
        skipWhitespace()
    }

    mutating func skipWhitespace() {
        while position < input.count {
            switch input[position] {
            case ASCII.space, ASCII.tab, ASCII.newline, ASCII.carriageReturn:
                position += 1
            default:
                return
            }
        }
    }

    mutating func expectLiteral(_ literal: StaticString) throws(JSONParseError) {
        let length = literal.utf8CodeUnitCount
        guard input.count - position >= length else { throw failure("invalid literal") }
        let bytes = UnsafeBufferPointer(start: literal.utf8Start, count: length)
        for offset in 0..<length where input[position + offset] != bytes[offset] {
            throw failure("invalid literal")
        }
        position += length
    }

    // MARK: Strings

    /// Parses a string starting at its opening quote; leaves `position` after the closing quote.
    mutating func parseString() throws(JSONParseError) -> String {
        position += 1
        let start = position
        // Fast path: no escapes, so the bytes can become the String directly once validated.
        while position < input.count {
            let byte = input[position]
            if byte == ASCII.quote {
                let text = String(decoding: UnsafeBufferPointer(rebasing: input[start..<position]), as: UTF8.self)
                position += 1
                return text
            }
            if byte == ASCII.backslash { break }
            if byte < 0x20 { throw failure("unescaped control character in string") }
            if byte < 0x80 {
                position += 1
            } else {
                try skipUTF8Sequence()
            }
        }
        guard position < input.count else { throw failure("unterminated string") }

        scratch.removeAll(keepingCapacity: true)
        scratch.append(contentsOf: UnsafeBufferPointer(rebasing: input[start..<position]))
        while position < input.count {
            let byte = input[position]
            if byte == ASCII.quote {
                position += 1
                return String(decoding: scratch, as: UTF8.self)
            }
            if byte == ASCII.backslash {
                try parseEscape()
            } else if byte < 0x20 {
                throw failure("unescaped control character in string")
            } else {
                let runStart = position
                while position < input.count {
                    let next = input[position]
                    if next == ASCII.quote || next == ASCII.backslash || next < 0x20 { break }
                    if next < 0x80 {
                        position += 1
                    } else {
                        try skipUTF8Sequence()
                    }
                }
                scratch.append(contentsOf: UnsafeBufferPointer(rebasing: input[runStart..<position]))
            }
        }
        throw failure("unterminated string")
    }

    /// Parses one escape sequence starting at the backslash and appends its UTF-8 to `scratch`.
    mutating func parseEscape() throws(JSONParseError) {
        guard position + 1 < input.count else { throw failure("unterminated string") }
        let kind = input[position + 1]
        switch kind {
        case ASCII.quote, ASCII.backslash, ASCII.slash:
            scratch.append(kind)
        case 0x62: scratch.append(0x08)  // b
        case 0x66: scratch.append(0x0C)  // f
        case 0x6E: scratch.append(0x0A)  // n
        case 0x72: scratch.append(0x0D)  // r
        case 0x74: scratch.append(0x09)  // t
        case 0x75:  // u
            let first = try readHex4(at: position + 2)
            var scalar: UInt32
            var consumed = 6
            if (0xD800...0xDBFF).contains(first) {
                guard position + 7 < input.count, input[position + 6] == ASCII.backslash,
                    input[position + 7] == 0x75
                else { throw failure("lone surrogate in \\u escape") }
                let second = try readHex4(at: position + 8)
                guard (0xDC00...0xDFFF).contains(second) else { throw failure("lone surrogate in \\u escape") }
                scalar = 0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00)
                consumed = 12
            } else if (0xDC00...0xDFFF).contains(first) {
                throw failure("lone surrogate in \\u escape")
            } else {
                scalar = first
            }
            appendUTF8(scalar)
            position += consumed
            return
        default:
            throw failure("invalid escape sequence")
        }
        position += 2
    }

    func readHex4(at offset: Int) throws(JSONParseError) -> UInt32 {
        guard offset + 4 <= input.count else { throw failure("invalid \\u escape") }
        var value: UInt32 = 0
        for index in offset..<(offset + 4) {
            guard let digit = HexDigit.value(input[index]) else {
                throw JSONParseError(offset: index, reason: "invalid \\u escape")
            }
            value = value << 4 | UInt32(digit)
        }
        return value
    }

    mutating func appendUTF8(_ scalar: UInt32) {
        switch scalar {
        case 0..<0x80:
            scratch.append(UInt8(scalar))
        case 0x80..<0x800:
            scratch.append(UInt8(0xC0 | (scalar >> 6)))
            scratch.append(UInt8(0x80 | (scalar & 0x3F)))
        case 0x800..<0x10000:
            scratch.append(UInt8(0xE0 | (scalar >> 12)))
            scratch.append(UInt8(0x80 | ((scalar >> 6) & 0x3F)))
            scratch.append(UInt8(0x80 | (scalar & 0x3F)))
        default:
            scratch.append(UInt8(0xF0 | (scalar >> 18)))
            scratch.append(UInt8(0x80 | ((scalar >> 12) & 0x3F)))
            scratch.append(UInt8(0x80 | ((scalar >> 6) & 0x3F)))
            scratch.append(UInt8(0x80 | (scalar & 0x3F)))
        }
    }

    /// Validates one multi-byte UTF-8 sequence (Unicode Table 3-7) and steps over it.
    mutating func skipUTF8Sequence() throws(JSONParseError) {
        let lead = input[position]
        let length: Int
        var secondRange: ClosedRange<UInt8> = 0x80...0xBF
        switch lead {
        case 0xC2...0xDF: length = 2
        case 0xE0:
            length = 3
            secondRange = 0xA0...0xBF
        case 0xE1...0xEC, 0xEE...0xEF: length = 3
        case 0xED:
            length = 3
            secondRange = 0x80...0x9F
        case 0xF0:
            length = 4
            secondRange = 0x90...0xBF
        case 0xF1...0xF3: length = 4
        case 0xF4:
            length = 4
            secondRange = 0x80...0x8F
        default:
            throw failure("invalid UTF-8")
        }
        guard position + length <= input.count else { throw failure("invalid UTF-8") }
        guard secondRange.contains(input[position + 1]) else { throw failure("invalid UTF-8") }
        var index = position + 2
        while index < position + length {
            guard (0x80...0xBF).contains(input[index]) else { throw failure("invalid UTF-8") }
            index += 1
        }
        position += length
    }

    // MARK: Numbers

    mutating func isDigit(at index: Int) -> Bool {
        index < input.count && input[index] >= ASCII.zero && input[index] <= ASCII.nine
    }

    /// Parses an RFC 8259 number: exact fast path for short ones, the standard library otherwise.
    mutating func parseNumber() throws(JSONParseError) -> Double {
        let start = position
        var negative = false
        if input[position] == ASCII.minus {
            negative = true
            position += 1
        }
        guard isDigit(at: position) else { throw failure("invalid number") }
        var mantissa: UInt64 = 0
        var digitCount = 0
        var decimalExponent = 0
        if input[position] == ASCII.zero {
            position += 1
            if isDigit(at: position) { throw failure("leading zero in number") }
        } else {
            while isDigit(at: position) {
                if digitCount < 19 {
                    mantissa = mantissa &* 10 &+ UInt64(input[position] - ASCII.zero)
                }
                digitCount += 1
                position += 1
            }
        }
        if position < input.count, input[position] == ASCII.dot {
            position += 1
            guard isDigit(at: position) else { throw failure("expected a digit after '.'") }
            while isDigit(at: position) {
                if digitCount < 19 {
                    mantissa = mantissa &* 10 &+ UInt64(input[position] - ASCII.zero)
                    decimalExponent -= 1
                }
                digitCount += 1
                position += 1
            }
        }
        if position < input.count, input[position] == ASCII.lowerE || input[position] == ASCII.upperE {
            position += 1
            var exponentNegative = false
            if position < input.count, input[position] == ASCII.plus || input[position] == ASCII.minus {
                exponentNegative = input[position] == ASCII.minus
                position += 1
            }
            guard isDigit(at: position) else { throw failure("expected a digit in the exponent") }
            var exponent = 0
            while isDigit(at: position) {
                if exponent < 100_000 { exponent = exponent * 10 + Int(input[position] - ASCII.zero) }
                position += 1
            }
            decimalExponent += exponentNegative ? -exponent : exponent
        }

        if digitCount <= 19, mantissa <= 1 << 53, decimalExponent >= -22, decimalExponent <= 22 {
            var value = Double(mantissa)
            if decimalExponent < 0 {
                value /= exactPowersOfTen[-decimalExponent]
            } else {
                value *= exactPowersOfTen[decimalExponent]
            }
            if value.isFinite { return negative ? -value : value }
        }
        let text = String(decoding: UnsafeBufferPointer(rebasing: input[start..<position]), as: UTF8.self)
        guard let value = Double(text), value.isFinite else {
            throw JSONParseError(offset: start, reason: "number out of range")
        }
        return value
    }
}
