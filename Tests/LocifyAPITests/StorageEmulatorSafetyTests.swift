import Foundation
import LocifyAPI
import Testing
import TestSupport
import TestSupportDatabase
import TestSupportServer

/// Issue 23, item 5: `FIREBASE_STORAGE_EMULATOR_HOST` sends the deletions of users' files to the
/// emulator instead of the real bucket, so alone (without Auth emulator mode) it follows the Auth
/// emulator's rule: refused unless the project id starts with `demo-` or the override is set.
@Suite("Hostile configuration: the Storage emulator alone is refused outside demo- projects")
struct StorageEmulatorSafetyTests {
    static func configuration(project: String, _ extra: [String: String] = [:]) throws -> Configuration {
        try Configuration(
            environment: [
                "DATABASE_URL": "postgres://locify@db/locify", "FIREBASE_PROJECT_ID": project,
                "FIREBASE_STORAGE_EMULATOR_HOST": "127.0.0.1:9199",
            ].merging(extra) { $1 })
    }

    @Test("a real project id with the Storage emulator is refused, naming the variable, the project and the override")
    func realProjectRefused() throws {
        let configuration = try Self.configuration(project: "locify-prod")
        #expect {
            try configuration.validateEmulatorSafety()
        } throws: { error in
            let text = "\(error)"
            return (error as? ConfigurationError)?.variable == "FIREBASE_STORAGE_EMULATOR_HOST" && text.contains("demo-")
                && text.contains("locify-prod") && text.contains("LOCIFY_ALLOW_EMULATOR_WITH_REAL_PROJECT")
        }
    }

    @Test("a demo- project, or the explicit override, may use the Storage emulator")
    func demoProjectOrOverrideAllowed() throws {
        try Self.configuration(project: "demo-locify").validateEmulatorSafety()
        try Self.configuration(project: "locify-staging", ["LOCIFY_ALLOW_EMULATOR_WITH_REAL_PROJECT": "1"]).validateEmulatorSafety()
    }

    @Test("the real binary with the Storage emulator and a real project exits 1 with one line, before touching the database")
    func serverRefusesToStart() throws {
        let database = try TestDatabase.create(migrationsDirectory: ProjectPaths.migrations, poolSize: 1)
        defer { try? database.drop() }
        let result = try HostileConfigurationTests.refusedStart(
            databaseURL: database.connectionString,
            [
                "FIREBASE_PROJECT_ID": "locify-prod", "FIREBASE_AUTH_EMULATOR_HOST": "",
                "FIREBASE_STORAGE_EMULATOR_HOST": "127.0.0.1:9199",
            ])
        HostileConfigurationTests.expectOneClearLine(result, mentions: ["FIREBASE_STORAGE_EMULATOR_HOST", "demo-", "locify-prod"])
    }
}
