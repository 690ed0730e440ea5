import Foundation
import LocifyAPI
import Postgres
import Testing
import TestSupport
import TestSupportDatabase
import TestSupportServer

/// Issue 23, item 4: no secret in any log line. Every spelling of a password that libpq's own
/// `PQconninfoParse` accepts (and a few it refuses or reads differently from a human) is in the
/// table below; each row is first parsed by libpq, so the table states libpq's truth, and then
/// the text of every error `PostgresConfiguration` throws for it, its description, the redacted
/// string and the printed `Configuration` must not contain the password in any spelling.
@Suite("Hostile configuration: no spelling of the database password reaches a log line")
struct ConnectionStringRedactionTests {
    /// How libpq reads a row.
    enum LibpqReading: Sendable {
        /// libpq accepts the string and its password (or `sslpassword`) is the row's first secret.
        case password
        /// libpq accepts the string but reads no password: part of the intended one lands in
        /// another field (an unencoded `/` or `@`).
        case misread
        /// libpq refuses the string.
        case refused
    }

    struct Row: Sendable, CustomTestStringConvertible {
        var spelling: String
        /// The password as libpq reads it (or as meant), then every other spelling or part of it
        /// that must not appear either (raw percent-encoded form, the pieces around a `/`).
        var secrets: [String]
        var libpq: LibpqReading
        var keyword = "password"
        /// Whether `PostgresConfiguration` accepts it: what libpq reads, except a raw `@` left in
        /// the host or database name (the tail of a password with an unencoded `@` or `/`).
        var accepted: Bool?
        var testDescription: String { spelling }
        var isAccepted: Bool { accepted ?? (libpq == .password) }
    }

    static let rows: [Row] = [
        // URI userinfo.
        Row(spelling: "postgres://locify:Secr3tPlain@db/locify", secrets: ["Secr3tPlain"], libpq: .password),
        Row(spelling: "postgresql://locify:Secr3tPlain@db:5432/locify?sslmode=disable", secrets: ["Secr3tPlain"], libpq: .password),
        Row(spelling: "postgres://:Secr3tNoUser@db/locify", secrets: ["Secr3tNoUser"], libpq: .password),
        Row(spelling: "postgres://locify:Secr3t%2FT4il@db/locify", secrets: ["Secr3t/T4il", "Secr3t%2FT4il", "T4il"], libpq: .password),
        Row(spelling: "postgres://locify:Secr3t%25pct@db/locify", secrets: ["Secr3t%pct", "Secr3t%25pct"], libpq: .password),
        Row(spelling: "postgres://locify:Secr3t?T4il@db/locify", secrets: ["Secr3t?T4il", "Secr3t", "T4il"], libpq: .password),
        Row(spelling: "postgres://locify:Secr3t?T4il&x=1@db/locify?sslmode=disable", secrets: ["Secr3t?T4il&x=1", "Secr3t", "T4il"], libpq: .password),
        Row(spelling: "postgres://locify:Secr3t:T4il@db/locify", secrets: ["Secr3t:T4il", "Secr3t", "T4il"], libpq: .password),
        Row(spelling: "postgres://locify:Secr3t#T4il@db/locify", secrets: ["Secr3t#T4il", "Secr3t"], libpq: .password),
        Row(spelling: "postgres://locify:Secr3t T4il@db/locify", secrets: ["Secr3t T4il", "Secr3t"], libpq: .password),
        Row(spelling: "postgres://locify:Secr3t\"Q@db/locify", secrets: ["Secr3t\"Q", "Secr3t"], libpq: .password),
        Row(spelling: "postgres://locify:Secr3tHosts@[::1]:5432,db2:5433/locify", secrets: ["Secr3tHosts"], libpq: .password),
        // An unencoded `/` ends libpq's userinfo search: "Secr3t" becomes the port, the rest the
        // database name (the issue's example); an unencoded second `@` leaves the tail in the host.
        Row(spelling: "postgres://locify:Secr3t/T4il@db/locify", secrets: ["Secr3t", "T4il"], libpq: .misread),
        Row(spelling: "postgres://locify:5432/T4ilSecr3t@db/locify", secrets: ["T4ilSecr3t"], libpq: .misread),
        Row(spelling: "postgres://locify:Secr3t@T4il@db/locify", secrets: ["Secr3t", "T4il"], libpq: .password, accepted: false),
        // URI query parameters, the keyword percent-encoded or not.
        Row(spelling: "postgres://db/locify?password=Secr3tQuery", secrets: ["Secr3tQuery"], libpq: .password),
        Row(spelling: "postgres://db/locify?sslmode=disable&password=Secr3tQuery&application_name=x", secrets: ["Secr3tQuery"], libpq: .password),
        Row(spelling: "postgres://db/locify?%70assword=Secr3tEncodedKey", secrets: ["Secr3tEncodedKey"], libpq: .password),
        Row(spelling: "postgres://db/locify?pass%77ord=Secr3tEncodedKey", secrets: ["Secr3tEncodedKey"], libpq: .password),
        Row(spelling: "postgres://db/locify?%70%61%73%73%77%6f%72%64=Secr3tEncodedKey", secrets: ["Secr3tEncodedKey"], libpq: .password),
        Row(spelling: "postgres://db/locify?password=Secr3t%26amp", secrets: ["Secr3t&amp", "Secr3t%26amp"], libpq: .password),
        Row(spelling: "postgres://db/locify?password=Secr3t?T4il", secrets: ["Secr3t?T4il", "Secr3t"], libpq: .password),
        Row(spelling: "postgres://locify:Secr3tOne@db/locify?password=Secr3tTwo", secrets: ["Secr3tTwo", "Secr3tOne"], libpq: .password),
        Row(spelling: "postgres://db/locify?sslpassword=Secr3tKey", secrets: ["Secr3tKey"], libpq: .password, keyword: "sslpassword"),
        // Refused by libpq: its error quotes the token it could not read.
        Row(spelling: "postgres://locify:Secr3t%zz@db/locify", secrets: ["Secr3t"], libpq: .refused),
        Row(spelling: "postgres://locify:Secr3t\"%zz@db/locify", secrets: ["Secr3t"], libpq: .refused),
        Row(spelling: "postgres://locify:Secr3t%00@db/locify", secrets: ["Secr3t"], libpq: .refused),
        Row(spelling: "postgres://db/locify?password=Secr3t=eq", secrets: ["Secr3t"], libpq: .refused),
        Row(spelling: "postgres://db/locify?password=Secr3t%zz", secrets: ["Secr3t"], libpq: .refused),
        Row(spelling: "postgres://db/locify?Password=Secr3tCase", secrets: ["Secr3tCase"], libpq: .refused),
        Row(spelling: "POSTGRES://locify:Secr3tUpper@db/locify", secrets: ["Secr3tUpper"], libpq: .refused),
        // key=value.
        Row(spelling: "host=db password=Secr3tKV dbname=locify", secrets: ["Secr3tKV"], libpq: .password),
        Row(spelling: "password=Secr3tFirst host=db", secrets: ["Secr3tFirst"], libpq: .password),
        Row(spelling: "host=db password = Secr3tSpaced dbname=locify", secrets: ["Secr3tSpaced"], libpq: .password),
        Row(spelling: "host=db\tpassword=Secr3tTab\tdbname=locify", secrets: ["Secr3tTab"], libpq: .password),
        Row(spelling: "host=db password='Secr3t T4il' dbname=locify", secrets: ["Secr3t T4il", "Secr3t", "T4il"], libpq: .password),
        Row(spelling: "host=db password='Secr3t\\'T4il' dbname=locify", secrets: ["Secr3t'T4il", "Secr3t", "T4il"], libpq: .password),
        Row(spelling: "host=db password=Secr3t\\ T4il dbname=locify", secrets: ["Secr3t T4il", "Secr3t", "T4il"], libpq: .password),
        Row(spelling: "host=db password=Secr3t\\\\T4il", secrets: ["Secr3t\\T4il", "Secr3t", "T4il"], libpq: .password),
        Row(spelling: "host=db password=Secr3t\u{00A0}T4il dbname=locify", secrets: ["Secr3t\u{00A0}T4il", "Secr3t", "T4il"], libpq: .password),
        Row(spelling: "host='db'password=Secr3tGlued dbname=locify", secrets: ["Secr3tGlued"], libpq: .password),
        Row(spelling: "host=db password=Secr3t=eq'q", secrets: ["Secr3t=eq'q", "Secr3t"], libpq: .password),
        Row(spelling: "host=db dbname=password=x password=Secr3tLast", secrets: ["Secr3tLast"], libpq: .password),
        Row(spelling: "host=db password=Secr3tOne password=Secr3tTwo", secrets: ["Secr3tTwo", "Secr3tOne"], libpq: .password),
        Row(spelling: "host=db sslpassword=Secr3tKey", secrets: ["Secr3tKey"], libpq: .password, keyword: "sslpassword"),
        Row(spelling: "host=db password=Secr3t T4il", secrets: ["Secr3t", "T4il"], libpq: .refused),
        Row(spelling: "host=db password='Secr3tUnterminated", secrets: ["Secr3tUnterminated"], libpq: .refused),
        Row(spelling: "host='db password=Secr3tInQuote", secrets: ["Secr3tInQuote"], libpq: .refused),
    ]

    @Test("libpq reads each row as the table says", arguments: rows)
    func libpqTruth(_ row: Row) {
        switch (row.libpq, LibpqConninfo.parse(row.spelling)) {
        case (.password, .success(let values)):
            #expect(values[row.keyword] == row.secrets[0], "libpq read \(values)")
        case (.misread, .success(let values)):
            #expect(values["password"] == nil, "libpq read \(values)")
            #expect(values.values.contains { value in row.secrets.contains { value.contains($0) } }, "libpq read \(values)")
        case (.refused, .failure):
            break
        case (_, let reading):
            Issue.record("libpq's reading \(reading) is not \(row.libpq)")
        }
    }

    @Test("no error, description, redacted string or printed Configuration holds the password", arguments: rows)
    func nothingLeaks(_ row: Row) throws {
        var texts = [PostgresConfiguration.redacted(row.spelling)]
        do {
            let configuration = try PostgresConfiguration(connectionString: row.spelling)
            #expect(row.isAccepted, "a misread or refused string must be refused: \(configuration)")
            texts += ["\(configuration)", String(reflecting: configuration)]
        } catch {
            #expect(!row.isAccepted, "a string libpq reads must be accepted: \(String(reflecting: error))")
            #expect(error.kind == .invalidConfiguration)
            texts += ["\(error)", String(reflecting: error), error.message]
        }
        let configuration = try Configuration(environment: ["DATABASE_URL": row.spelling, "FIREBASE_PROJECT_ID": "demo-x"])
        texts += ["\(configuration)", String(reflecting: configuration)]
        for text in texts {
            for secret in row.secrets {
                #expect(!text.contains(secret), "\(secret) in: \(text)")
            }
        }
    }

    @Test("the redacted strings keep what an operator needs: user, host, port, database, other parameters")
    func redactedStringsStayUseful() {
        #expect(
            PostgresConfiguration.redacted("postgres://locify:Secr3t?T4il@db:5432/locify?sslmode=require")
                == "postgres://locify:***@db:5432/locify?sslmode=require")
        #expect(PostgresConfiguration.redacted("postgres://locify:Secr3t/T4il@db/locify") == "postgres://locify:***@db/locify")
        #expect(PostgresConfiguration.redacted("postgres://db/locify?%70assword=x&sslmode=require") == "postgres://db/locify?%70assword=***&sslmode=require")
        #expect(PostgresConfiguration.redacted("host=db password=Secr3t\\ T4il dbname=locify") == "host=db password=*** dbname=locify")
        #expect(PostgresConfiguration.redacted("host='db'password=x dbname=locify") == "host='db'password=*** dbname=locify")
        #expect(PostgresConfiguration.redacted("host=db password=x junk more") == "host=db password=*** ***")
    }

    @Test("a URI whose password has an unencoded / is refused with a clear reason that quotes no value")
    func unencodedSlashIsExplained() {
        do {
            _ = try PostgresConfiguration(connectionString: "postgres://locify:Secr3t/tail@db/locify")
            Issue.record("the string must be refused")
        } catch {
            #expect(error.message.contains("percent-encode"), "\(error.message)")
            #expect(error.message.contains("postgres://locify:***@db/locify"), "\(error.message)")
        }
    }

    @Test("the server started with the issue's DATABASE_URL exits 1 without the password in its log")
    func serverLogHasNoPassword() throws {
        let result = try HostileConfigurationTests.refusedStart(databaseURL: "postgres://locify:Secr3t/tail@db/locify", [:])
        #expect(result.code == 1, "\(result.log)")
        #expect(!result.log.contains("Secr3t") && !result.log.contains("tail"), "\(result.log)")
        #expect(result.log.contains("percent-encode"), "\(result.log)")
    }
}
