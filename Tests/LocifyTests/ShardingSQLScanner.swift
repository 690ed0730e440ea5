import Foundation

/// A static check that no SQL statement of the code joins rows of two users: in the text of every
/// SQL string literal of the Swift sources (and of the migrations' SQL), each join must equate a
/// user key of both sides (`x.user_id = y.user_id`, or `users.id` of an alias of `users`).
///
/// What it checks: explicit `JOIN`s (the `ON`/`USING` condition, or a `LATERAL` subquery's own
/// condition), comma joins of two or more relations in one `FROM`, `UPDATE ... FROM` and
/// `DELETE ... USING`. What it does not: uncorrelated subqueries (`IN (SELECT ...)`, scalar
/// subqueries), SQL assembled from separate literals at run time, and whether the user key
/// equated is the right one. It is a text scan, not a planner.
struct ShardingSQLScanner: Sendable {
    /// SQL text and where it comes from (`file:line`).
    struct Statement: Sendable {
        var location: String
        var text: String
    }

    /// A join the scanner looked at, and whether it found a user-key equality for it.
    struct Join: Sendable, CustomStringConvertible {
        var location: String
        var kind: String
        var snippet: String
        var linked: Bool

        var description: String { "\(location): \(kind) \(linked ? "on the user key" : "WITHOUT a user-key equality"): \(snippet)" }
    }

    // MARK: Swift string literals

    /// The string literals of a Swift source file that look like SQL (an upper-case `SELECT`,
    /// `INSERT`, `UPDATE`, `DELETE` or `JOIN`), interpolations replaced by `$?`.
    static func sqlLiterals(inSwift source: String, file: String) -> [Statement] {
        var lexer = SwiftLiteralLexer(Array(source.unicodeScalars))
        return lexer.literals().compactMap { literal in
            let words = Set(literal.text.split(whereSeparator: { !$0.isLetter && $0 != "_" }).map(String.init))
            guard !words.isDisjoint(with: ["SELECT", "INSERT", "UPDATE", "DELETE", "JOIN"]) else { return nil }
            return Statement(location: "\(file):\(literal.line)", text: literal.text)
        }
    }

    // MARK: Joins

    /// Every join of `statement`, with whether it is on the user key.
    static func joins(in statement: Statement) -> [Join] {
        let tokens = SQLToken.tokenize(statement.text)
        let usersAliases = aliases(of: "users", in: tokens)
        var joins: [Join] = []

        func linked(_ range: Range<Int>) -> Bool {
            guard range.count >= 3 else { return false }
            for index in range.dropFirst().dropLast() where tokens[index].text == "=" {
                if isUserKey(tokens[index - 1].text, usersAliases), isUserKey(tokens[index + 1].text, usersAliases) {
                    return true
                }
            }
            // JOIN ... USING (user_id, ...)
            for index in range where tokens[index].upper == "USING" && index + 1 < range.upperBound && tokens[index + 1].text == "(" {
                let list = tokens[(index + 1)..<end(of: index + 1, in: tokens)]
                if list.contains(where: { $0.text.lowercased() == "user_id" }) { return true }
            }
            return false
        }

        func snippet(_ range: Range<Int>) -> String {
            let text = tokens[range].map(\.text).joined(separator: " ")
            return text.count > 160 ? String(text.prefix(160)) + " ..." : text
        }

        for (index, token) in tokens.enumerated() {
            switch token.upper {
            case "JOIN":
                let segment = (index + 1)..<clauseEnd(after: index, in: tokens, stopAtComma: true, stopAtOn: false)
                // A set-returning function over the statement's own values (`JOIN unnest(...)`)
                // holds no rows of anyone.
                var first = segment.lowerBound
                if first < segment.upperBound, tokens[first].upper == "LATERAL" { first += 1 }
                if first + 1 < segment.upperBound, tokens[first].isWord, tokens[first + 1].text == "(" { continue }
                // So does a subquery that reads no table (`JOIN LATERAL (SELECT <expression> AS n)`).
                if first < segment.upperBound, tokens[first].text == "(", readsNoTable(from: first, in: tokens) { continue }
                joins.append(Join(location: statement.location, kind: "JOIN", snippet: snippet(segment), linked: linked(segment)))
            case "FROM":
                let clause = (index + 1)..<clauseEnd(after: index, in: tokens, stopAtComma: false)
                let items = split(clause, in: tokens)
                let relations = items.filter { isRelation($0, in: tokens) }
                if relations.count >= 2 {
                    let scope = (index + 1)..<statementEnd(after: index, in: tokens)
                    joins.append(Join(location: statement.location, kind: "comma join", snippet: snippet(scope), linked: linked(scope)))
                }
                // UPDATE ... FROM: the FROM item is joined with the updated table.
                if let update = enclosingStatementKeyword(before: index, in: tokens), update == "UPDATE", !relations.isEmpty {
                    let scope = (index + 1)..<statementEnd(after: index, in: tokens)
                    joins.append(Join(location: statement.location, kind: "UPDATE ... FROM", snippet: snippet(scope), linked: linked(scope)))
                }
            case "USING":
                if enclosingStatementKeyword(before: index, in: tokens) == "DELETE", index + 1 < tokens.count, tokens[index + 1].text != "(" {
                    let scope = (index + 1)..<statementEnd(after: index, in: tokens)
                    joins.append(Join(location: statement.location, kind: "DELETE ... USING", snippet: snippet(scope), linked: linked(scope)))
                }
            default:
                continue
            }
        }
        return joins
    }

    /// Whether the group opening at `open` is a `SELECT` without a `FROM` of its own (its nested
    /// groups aside): it reads no table.
    private static func readsNoTable(from open: Int, in tokens: [SQLToken]) -> Bool {
        let close = end(of: open, in: tokens)
        guard open + 1 < close, tokens[open + 1].upper == "SELECT" else { return false }
        var depth = 0
        for index in (open + 1)..<close {
            if tokens[index].text == "(" { depth += 1 }
            if tokens[index].text == ")" { depth -= 1 }
            if depth == 0, tokens[index].upper == "FROM" { return false }
        }
        return true
    }

    /// `user_id`, `x.user_id`, and `a.id` / `users.id` for an alias `a` of the users table.
    static func isUserKey(_ text: String, _ usersAliases: Set<String>) -> Bool {
        let parts = text.lowercased().split(separator: ".").map(String.init)
        guard let column = parts.last else { return false }
        if column == "user_id" { return true }
        return column == "id" && parts.count == 2 && usersAliases.contains(parts[0])
    }

    /// The names `table` is known by in the statement (itself and its aliases).
    static func aliases(of table: String, in tokens: [SQLToken]) -> Set<String> {
        var names: Set<String> = [table]
        for (index, token) in tokens.enumerated() where token.text.lowercased() == table && index + 1 < tokens.count {
            var next = index + 1
            if tokens[next].upper == "AS", next + 1 < tokens.count { next += 1 }
            if tokens[next].isWord, !SQLToken.keywords.contains(tokens[next].upper) {
                names.insert(tokens[next].text.lowercased())
            }
        }
        return names
    }

    /// The index of the `)` closing the `(` at `open` (or the end).
    private static func end(of open: Int, in tokens: [SQLToken]) -> Int {
        var depth = 0
        for index in open..<tokens.count {
            if tokens[index].text == "(" { depth += 1 }
            if tokens[index].text == ")" {
                depth -= 1
                if depth == 0 { return index + 1 }
            }
        }
        return tokens.count
    }

    /// Where the clause starting after `start` ends: the next clause keyword at the same depth,
    /// a `)` closing the enclosing group, or the end.
    private static func clauseEnd(after start: Int, in tokens: [SQLToken], stopAtComma: Bool, stopAtOn: Bool = true) -> Int {
        var depth = 0
        var index = start + 1
        while index < tokens.count {
            let token = tokens[index]
            if token.text == "(" { depth += 1 }
            if token.text == ")" {
                if depth == 0 { return index }
                depth -= 1
            }
            if depth == 0 {
                if SQLToken.clauseKeywords.contains(token.upper), stopAtOn || token.upper != "ON" { return index }
                if SQLToken.joinStarters.contains(token.upper) { return index }
                if stopAtComma, token.text == "," { return index }
                if token.text == ";" { return index }
            }
            index += 1
        }
        return tokens.count
    }

    /// Where the statement holding `start` ends: a `)` closing its group, a `;`, or the end.
    private static func statementEnd(after start: Int, in tokens: [SQLToken]) -> Int {
        var depth = 0
        for index in (start + 1)..<max(start + 1, tokens.count) {
            if tokens[index].text == "(" { depth += 1 }
            if tokens[index].text == ")" {
                if depth == 0 { return index }
                depth -= 1
            }
            if depth == 0, tokens[index].text == ";" { return index }
        }
        return tokens.count
    }

    /// The SELECT/INSERT/UPDATE/DELETE that `index` belongs to, at the same depth.
    private static func enclosingStatementKeyword(before index: Int, in tokens: [SQLToken]) -> String? {
        var depth = 0
        var position = index - 1
        while position >= 0 {
            let token = tokens[position]
            if token.text == ")" { depth += 1 }
            if token.text == "(" {
                if depth == 0 { return nil }
                depth -= 1
            }
            if depth == 0, ["SELECT", "INSERT", "UPDATE", "DELETE"].contains(token.upper) { return token.upper }
            if depth == 0, token.text == ";" { return nil }
            position -= 1
        }
        return nil
    }

    /// The comma-separated items of a FROM list.
    private static func split(_ range: Range<Int>, in tokens: [SQLToken]) -> [Range<Int>] {
        var items: [Range<Int>] = []
        var depth = 0
        var start = range.lowerBound
        for index in range {
            if tokens[index].text == "(" { depth += 1 }
            if tokens[index].text == ")" { depth -= 1 }
            if depth == 0, tokens[index].text == "," {
                items.append(start..<index)
                start = index + 1
            }
        }
        items.append(start..<range.upperBound)
        return items.filter { !$0.isEmpty }
    }

    /// Whether a FROM item is a relation (a table, view, CTE or subquery) rather than a function
    /// call such as `unnest(...)` or `now()`.
    private static func isRelation(_ item: Range<Int>, in tokens: [SQLToken]) -> Bool {
        let first = tokens[item.lowerBound]
        if first.upper == "LATERAL" { return true }
        if first.text == "(" {
            return item.count > 1 && ["SELECT", "WITH", "VALUES"].contains(tokens[item.lowerBound + 1].upper)
        }
        guard first.isWord else { return false }
        let next = item.lowerBound + 1
        return !(next < item.upperBound && tokens[next].text == "(")
    }
}

/// One SQL token: a word (identifiers, keywords, `a.b`), a placeholder, a quoted literal, or a
/// punctuation character. Comments are dropped.
struct SQLToken: Sendable {
    var text: String
    var isWord: Bool

    var upper: String { isWord ? text.uppercased() : text }

    static let joinStarters: Set<String> = ["JOIN", "LEFT", "RIGHT", "INNER", "FULL", "CROSS", "NATURAL"]
    static let clauseKeywords: Set<String> = [
        "WHERE", "GROUP", "ORDER", "LIMIT", "OFFSET", "RETURNING", "UNION", "INTERSECT", "EXCEPT", "HAVING", "WINDOW",
        "FOR", "SET", "ON", "VALUES",
    ]
    static let keywords: Set<String> = joinStarters.union(clauseKeywords).union([
        "JOIN", "LATERAL", "USING", "AS", "FROM", "WITH", "AND", "OR", "NOT", "IN", "IS", "NULL", "TRUE", "FALSE", "OUTER",
    ])

    static func tokenize(_ sql: String) -> [SQLToken] {
        let characters = Array(sql.unicodeScalars)
        var tokens: [SQLToken] = []
        var index = 0
        while index < characters.count {
            let character = characters[index]
            if character == "-" && index + 1 < characters.count && characters[index + 1] == "-" {
                while index < characters.count && characters[index] != "\n" { index += 1 }
            } else if character == "/" && index + 1 < characters.count && characters[index + 1] == "*" {
                index += 2
                while index + 1 < characters.count && !(characters[index] == "*" && characters[index + 1] == "/") { index += 1 }
                index += 2
            } else if character == "'" {
                var end = index + 1
                while end < characters.count {
                    if characters[end] == "'" {
                        if end + 1 < characters.count && characters[end + 1] == "'" { end += 2; continue }
                        break
                    }
                    end += 1
                }
                tokens.append(SQLToken(text: "'…'", isWord: false))
                index = end + 1
            } else if isWordCharacter(character) || character == "\"" || character == "$" {
                var end = index
                while end < characters.count
                    && (isWordCharacter(characters[end]) || characters[end] == "." || characters[end] == "\""
                        || characters[end] == "$" || characters[end] == "?")
                {
                    end += 1
                }
                let text = String(String.UnicodeScalarView(characters[index..<end])).replacingOccurrences(of: "\"", with: "")
                tokens.append(SQLToken(text: text, isWord: !text.hasPrefix("$")))
                index = end
            } else if character.properties.isWhitespace {
                index += 1
            } else {
                tokens.append(SQLToken(text: String(character), isWord: false))
                index += 1
            }
        }
        return tokens
    }

    private static func isWordCharacter(_ character: Unicode.Scalar) -> Bool {
        character.properties.isAlphabetic || ("0"..."9").contains(character) || character == "_"
    }
}

/// Finds the string literals of Swift source text (plain, multi-line and raw), their
/// interpolations replaced by `$?`, skipping comments.
struct SwiftLiteralLexer {
    private let characters: [Unicode.Scalar]
    private var index = 0
    private var line = 1
    private var found: [(line: Int, text: String)] = []

    init(_ characters: [Unicode.Scalar]) {
        self.characters = characters
    }

    mutating func literals() -> [(line: Int, text: String)] {
        code(untilClosingParenthesis: false)
        return found
    }

    private func peek(_ offset: Int = 0) -> Unicode.Scalar? {
        index + offset < characters.count ? characters[index + offset] : nil
    }

    private mutating func advance(_ count: Int = 1) {
        for _ in 0..<count where index < characters.count {
            if characters[index] == "\n" { line += 1 }
            index += 1
        }
    }

    /// Code, until the end (or the `)` closing an interpolation).
    private mutating func code(untilClosingParenthesis: Bool) {
        var depth = 0
        while let character = peek() {
            if character == "/" && peek(1) == "/" {
                while let next = peek(), next != "\n" { advance() }
            } else if character == "/" && peek(1) == "*" {
                var nesting = 0
                repeat {
                    if peek() == "/" && peek(1) == "*" { nesting += 1; advance(2) }
                    else if peek() == "*" && peek(1) == "/" { nesting -= 1; advance(2) }
                    else { advance() }
                } while nesting > 0 && peek() != nil
            } else if character == "#" || character == "\"" {
                var hashes = 0
                while peek(hashes) == "#" { hashes += 1 }
                if peek(hashes) == "\"" {
                    advance(hashes)
                    literal(hashes: hashes)
                } else {
                    advance(max(hashes, 1))
                }
            } else if character == "(" {
                depth += 1
                advance()
            } else if character == ")" {
                if untilClosingParenthesis && depth == 0 {
                    advance()
                    return
                }
                depth -= 1
                advance()
            } else {
                advance()
            }
        }
    }

    /// A literal starting at its opening quote(s), after `hashes` #'s.
    private mutating func literal(hashes: Int) {
        let multiline = peek(1) == "\"" && peek(2) == "\""
        let startLine = line
        advance(multiline ? 3 : 1)
        let closing = String(repeating: "\"", count: multiline ? 3 : 1) + String(repeating: "#", count: hashes)
        let escape = "\\" + String(repeating: "#", count: hashes)
        var text = ""
        while peek() != nil {
            if matches(closing) {
                advance(closing.unicodeScalars.count)
                break
            }
            if matches(escape) {
                advance(escape.unicodeScalars.count)
                if peek() == "(" {
                    advance()
                    code(untilClosingParenthesis: true)
                    text += "$?"
                } else if let escaped = peek() {
                    text.unicodeScalars.append(escaped == "n" ? "\n" : escaped)
                    advance()
                }
                continue
            }
            if let character = peek() { text.unicodeScalars.append(character) }
            advance()
        }
        found.append((startLine, text))
    }

    private func matches(_ text: String) -> Bool {
        for (offset, scalar) in text.unicodeScalars.enumerated() where peek(offset) != scalar {
            return false
        }
        return true
    }
}
