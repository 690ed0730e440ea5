import Foundation
import JSON
import LocifyAPI
import Postgres
import Testing
import TestSupport
import TestSupportServer
import TestSupportDatabase

/// Issue 13 items 5 and 9: the real `locify-server` binary refuses the emulator configurations
/// that could reach production, says when it runs in emulator mode, and never logs the database
/// password.
@Suite("Hostile configuration: emulator mode and secrets in logs", .serialized)
struct HostileConfigurationTests {
    /// Launches the server with `environment` and waits for it to exit; returns its exit code and log.
    static func refusedStart(
        databaseURL: String, _ environment: [String: String], openFileLimit: Int? = nil
    ) throws -> (code: Int32?, log: String, lines: [JSONObject]) {
        let process = try ServerProcess.launch(databaseURL: databaseURL, environment: environment, openFileLimit: openFileLimit)
        guard let status = process.waitForExit(timeout: .seconds(60)) else {
            process.killHard()
            Issue.record("the server did not exit: \(process.logText.suffix(2000))")
            return (nil, process.logText, process.logLines)
        }
        return (ServerProcess.exitCode(status), process.logText, process.logLines)
    }

    /// The one log line of a refused start.
    static func expectOneClearLine(_ result: (code: Int32?, log: String, lines: [JSONObject]), mentions: [String]) {
        #expect(result.code == 1, "exit status: \(String(describing: result.code)); log: \(result.log)")
        let lines = result.log.split(separator: "\n")
        #expect(lines.count == 1, "one line, got: \(result.log)")
        for text in mentions {
            #expect(result.log.contains(text), "the line names \(text): \(result.log)")
        }
        #expect(result.lines.first?["level"] == "critical", "\(result.log)")
        #expect(!result.log.contains("listening"))
    }

    @Test("emulator mode with a project id not starting with demo- is refused: exit 1 and one log line")
    func emulatorWithRealProjectRefused() throws {
        let database = try TestDatabase.create(migrationsDirectory: ProjectPaths.migrations, poolSize: 1)
        defer { try? database.drop() }
        let result = try Self.refusedStart(
            databaseURL: database.connectionString, ["FIREBASE_PROJECT_ID": "locify-prod", "FIREBASE_AUTH_EMULATOR_HOST": "127.0.0.1:9099"])
        Self.expectOneClearLine(result, mentions: ["FIREBASE_AUTH_EMULATOR_HOST", "demo-", "locify-prod", "LOCIFY_ALLOW_EMULATOR_WITH_REAL_PROJECT"])
    }

    @Test("LOCIFY_ALLOW_EMULATOR_WITH_REAL_PROJECT=1 lets emulator mode run with another project id")
    func emulatorWithRealProjectAllowed() throws {
        let database = try TestDatabase.create(migrationsDirectory: ProjectPaths.migrations, poolSize: 1)
        defer { try? database.drop() }
        let server = try ServerProcess.start(
            databaseURL: database.connectionString,
            environment: ["FIREBASE_PROJECT_ID": "locify-staging", "LOCIFY_ALLOW_EMULATOR_WITH_REAL_PROJECT": "1"])
        defer { server.killHard() }
        let health = try server.request("GET", "/health")
        #expect(health.status == 200 && health.object["auth"] == "emulator")
    }

    @Test("emulator Auth with real Google credentials for Storage is refused, even when allowed for the project")
    func emulatorWithCredentialsRefused() throws {
        let database = try TestDatabase.create(migrationsDirectory: ProjectPaths.migrations, poolSize: 1)
        defer { try? database.drop() }
        let credentials = try TestServiceAccount.writeFile(tokenURI: "https://oauth2.googleapis.com/token")
        for extra in [[:], ["LOCIFY_ALLOW_EMULATOR_WITH_REAL_PROJECT": "1"]] {
            let result = try Self.refusedStart(
                databaseURL: database.connectionString, ["GOOGLE_APPLICATION_CREDENTIALS": credentials].merging(extra) { $1 })
            Self.expectOneClearLine(result, mentions: ["FIREBASE_AUTH_EMULATOR_HOST", "GOOGLE_APPLICATION_CREDENTIALS"])
        }
    }

    @Test("in emulator mode /health says auth emulator and /metrics exports auth_emulator_mode 1")
    func emulatorModeIsVisible() throws {
        let database = try TestDatabase.create(migrationsDirectory: ProjectPaths.migrations, poolSize: 1)
        defer { try? database.drop() }
        let server = try ServerProcess.start(databaseURL: database.connectionString)
        defer { server.killHard() }
        let health = try server.request("GET", "/health")
        #expect(health.status == 200)
        #expect(health.object["status"] == "ok" && health.object["auth"] == "emulator", "\(health.text)")
        let ready = try server.request("GET", "/health/ready")
        #expect(ready.status == 200 && ready.object["auth"] == "emulator")
        let metrics = try PrometheusText(try server.request("GET", "/metrics").text)
        #expect(metrics.types["auth_emulator_mode"] == "gauge")
        #expect(metrics.value("auth_emulator_mode", [:]) == 1)
    }

    @Test("outside emulator mode /health has no auth field and auth_emulator_mode is 0")
    func productionModeIsVisible() throws {
        let server = try TestServer.start(.inProcess)
        defer { server.stop() }
        let health = try server.request("GET", "/health")
        #expect(health.status == 200 && health.object["auth"] == nil && health.object["status"] == "ok")
        let metrics = try PrometheusText(try server.request("GET", "/metrics").text)
        #expect(metrics.value("auth_emulator_mode", [:]) == 0)
    }

    @Test("scripts/dev, scripts/dev-token, scripts/contract-test and the test helpers use a demo- project id")
    func scriptsUseDemoProjects() throws {
        func read(_ path: String) throws -> String {
            try String(contentsOf: ProjectPaths.root.appendingPathComponent(path), encoding: .utf8)
        }
        #expect(try read("scripts/dev").contains("FIREBASE_PROJECT_ID=${FIREBASE_PROJECT_ID:-demo-"))
        #expect(try read("scripts/dev-token").contains("project=${FIREBASE_PROJECT_ID:-demo-"))
        #expect(try read("scripts/contract-test").contains("project=demo-"))
        #expect(ServerProcess.projectID.hasPrefix("demo-"))
        #expect(TestConstants.emulatorProjectID.hasPrefix("demo-"))
    }

    // MARK: Item 9: secrets in logs

    static let password = "s3cr%t-pa%ss"
    static let malformedURL = "postgres://locify:\(password)@db.example.internal:5432/locify"

    @Test("libpq's parse error for a malformed DATABASE_URL is reported with the password redacted")
    func parseErrorIsRedacted() {
        do {
            _ = try PostgresConfiguration(connectionString: Self.malformedURL)
            Issue.record("a malformed percent-encoding must be refused")
        } catch {
            for text in ["\(error)", String(reflecting: error), error.message] {
                #expect(!text.contains("s3cr"), "\(text)")
                #expect(!text.contains("pa%ss"), "\(text)")
            }
            #expect(String(reflecting: error).contains("postgres://locify:***@db.example.internal:5432/locify"), "\(String(reflecting: error))")
            #expect(error.message.contains("percent-encoded"), "libpq's reason is kept: \(error.message)")
        }
    }

    @Test("key=value connection strings and URIs with a password parameter are redacted too")
    func otherFormsAreRedacted() {
        #expect(PostgresConfiguration.redacted("postgres://u:p%40ss@h/db") == "postgres://u:***@h/db")
        #expect(PostgresConfiguration.redacted("postgresql://u@h/db?password=x%zz&sslmode=require") == "postgresql://u@h/db?password=***&sslmode=require")
        #expect(PostgresConfiguration.redacted("host=h password='a b\\' c' dbname=d") == "host=h password=*** dbname=d")
        #expect(PostgresConfiguration.redacted("host=h password = secret dbname=d") == "host=h password=*** dbname=d")
        #expect(PostgresConfiguration.redacted("postgres://h/db") == "postgres://h/db")
        for string in ["host=h password='unterminated s3cr", "host=h password=s3cr junk", "postgresql://u:s3cr%zz@h/db?password=s3cr%zz"] {
            do {
                _ = try PostgresConfiguration(connectionString: string)
                Issue.record("\(string) must be refused")
            } catch {
                #expect(!String(reflecting: error).contains("s3cr"), "\(String(reflecting: error))")
            }
        }
    }

    @Test("the server started with a malformed DATABASE_URL exits 1 without the password in its log")
    func serverLogIsRedacted() throws {
        let result = try Self.refusedStart(databaseURL: Self.malformedURL, [:])
        #expect(result.code == 1, "\(result.log)")
        #expect(!result.log.contains("s3cr") && !result.log.contains("pa%ss"), "\(result.log)")
        #expect(result.log.contains("postgres://locify:***@db.example.internal:5432/locify"), "\(result.log)")
    }
}

@Suite("Hostile configuration: a printed Configuration hides the database password")
struct ConfigurationRedactionTests {
    @Test("description and debugDescription show DATABASE_URL with the password as ***")
    func configurationIsRedacted() throws {
        let configuration = try Configuration(environment: [
            "DATABASE_URL": "postgres://locify:s3cr%t@db/locify", "FIREBASE_PROJECT_ID": "demo-x",
        ])
        for text in ["\(configuration)", String(reflecting: configuration)] {
            #expect(!text.contains("s3cr"), "\(text)")
            #expect(text.contains("postgres://locify:***@db/locify"), "\(text)")
        }
    }
}
