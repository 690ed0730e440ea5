import Foundation
import JSON
import LocifyAPI
import Testing
import TestSupport
import TestSupportServer

/// Auth emulator mode (`FIREBASE_AUTH_EMULATOR_HOST`, the README's `FIREBASE_AUTH_EMULATOR_HOST`): the emulator's
/// unsigned tokens are accepted, their claims are still checked, the server warns loudly, and
/// admin calls go to the emulators.
@Suite("Authentication: Firebase Auth emulator mode")
struct AuthEmulatorTests {
    /// A server in emulator mode whose "emulator" is the fake Google (same host and port), for an
    /// emulator-only `demo-` project and without Google credentials (the server refuses both
    /// otherwise).
    static func startEmulatorServer(
        storageEmulator: Bool = false, log: CapturedLog? = nil
    ) throws -> TestServer {
        try TestServer.start(.inProcess, 
            projectID: TestConstants.emulatorProjectID,
            configure: { configuration in
                let host = String(configuration.identityAPIURL.split(separator: "://").last ?? "")
                configuration.authEmulatorHost = host
                configuration.googleApplicationCredentials = nil
                if storageEmulator {
                    configuration.storageEmulatorHost = host
                }
            },
            google: { fake in
                fake.acceptOwnerToken = true
                fake.storageRequiresAuth = !storageEmulator
            },
            logger: log?.logger)
    }

    /// Runs `scripts/dev-token` with `arguments` for `project`; returns the token it prints.
    static func devToken(_ arguments: [String], project: String = TestConstants.emulatorProjectID) throws -> String {
        var environment = ProcessInfo.processInfo.environment
        environment["FIREBASE_PROJECT_ID"] = project
        let run = try runProcess(
            [ProjectPaths.root.appendingPathComponent("scripts/dev-token").path] + arguments, environment: environment)
        guard run.status == 0 else { throw AuthTestError("scripts/dev-token exited with \(run.status): \(run.standardError)") }
        return run.standardOutput.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    @Test("a token printed by scripts/dev-token is accepted, with email and name from its claims")
    func devTokenIsAccepted() throws {
        let server = try Self.startEmulatorServer()
        defer { server.stop() }
        let token = try Self.devToken(["emu-dev-user", "dev@example.com", "Dev User"])
        #expect(token.hasSuffix("."), "an emulator token has an empty signature segment")
        let response = try server.request("GET", "/v1/users/me", token: token)
        #expect(response.status == 200)
        #expect(response.object["id"] == "emu-dev-user")
        #expect(response.object["email"] == "dev@example.com")
        #expect(response.object["name"] == "Dev User")
        let categories = try server.request("GET", "/v1/categories", token: token)
        #expect(categories.status == 200 && categories.meta["total_count"] == 4)
    }

    @Test("a dev token minted for another project is refused")
    func devTokenForAnotherProject() throws {
        let server = try Self.startEmulatorServer()
        defer { server.stop() }
        let token = try Self.devToken(["emu-other-project"], project: "demo-locify-other")
        let response = try server.request("GET", "/v1/users/me", token: token)
        #expect(response.status == 401 && response.errorCode == "E005")
    }

    @Test("emulator tokens are accepted, yet aud, iss, sub and the times are still checked")
    func claimsStillChecked() throws {
        let server = try Self.startEmulatorServer()
        defer { server.stop() }
        let minter = server.minter
        let now = Date().timeIntervalSince1970
        let claims = minter.claims(uid: "emu-claims", issuedAt: now)
        func with(_ change: (inout JSONObject) -> Void) -> JSONObject {
            var copy = claims
            change(&copy)
            return copy
        }
        #expect(try server.request("GET", "/v1/users/me", token: minter.emulatorToken(claims: claims)).status == 200)

        let refused: [(String, String)] = [
            ("wrong aud", try minter.emulatorToken(claims: with { $0["aud"] = "another-project" })),
            ("wrong iss", try minter.emulatorToken(claims: with { $0["iss"] = "https://securetoken.google.com/another-project" })),
            ("empty sub", try minter.emulatorToken(claims: with { $0["sub"] = "" })),
            ("129-character sub", try minter.emulatorToken(claims: with { $0["sub"] = .string(String(repeating: "b", count: 129)) })),
            ("expired", try minter.emulatorToken(claims: minter.claims(uid: "emu-claims", issuedAt: now - 7200))),
            ("iat in the future", try minter.emulatorToken(claims: minter.claims(uid: "emu-claims", issuedAt: now + 600))),
            ("non-empty signature", try minter.emulatorToken(claims: claims) + "c2ln"),
            ("two segments", String(try minter.emulatorToken(claims: claims).dropLast())),
        ]
        for (name, token) in refused {
            let response = try server.request("GET", "/v1/users/me", token: token)
            #expect(response.status == 401, "\(name)")
            #expect(response.errorCode == "E005", "\(name)")
            #expect(response.headers["WWW-Authenticate"] == #"Bearer error="invalid_token""#, "\(name)")
        }
    }

    @Test("outside emulator mode an emulator token is refused")
    func emulatorTokenRefusedInProduction() throws {
        let server = try TestServer.start(.inProcess)
        defer { server.stop() }
        let token = try server.minter.emulatorToken(claims: server.minter.claims(uid: "emu-prod", issuedAt: Date().timeIntervalSince1970))
        let response = try server.request("GET", "/v1/users/me", token: token)
        #expect(response.status == 401 && response.errorCode == "E005")
    }

    @Test("the server warns loudly at start that unsigned tokens are accepted")
    func loudWarning() throws {
        let log = CapturedLog()
        let server = try Self.startEmulatorServer(log: log)
        defer { server.stop() }
        let warnings = log.all.filter { $0.message.contains("FIREBASE_AUTH_EMULATOR_HOST") }
        #expect(!warnings.isEmpty)
        #expect(warnings.allSatisfy { $0.level >= .warning })
        #expect(warnings.contains { $0.level == .critical })
    }

    @Test("with both emulators, account deletion calls the emulators' paths with the owner token and no service account")
    func deletionGoesToTheEmulators() throws {
        let server = try Self.startEmulatorServer(storageEmulator: true)
        defer { server.stop() }
        let uid = "emu-deleted"
        server.fake.addObjects(["locations/\(uid)/l1/a.jpg", "categories/\(uid)/c1/icon.png"], bucket: TestConstants.bucket)
        server.fake.addAccounts([uid])
        let token = try Self.devToken([uid])
        #expect(try server.request("GET", "/v1/users/me", token: token).status == 200)
        #expect(try server.request("DELETE", "/v1/users/me", token: token).status == 204)
        #expect(eventually { server.fake.deletedAccounts == [uid] })
        #expect(server.fake.objects(bucket: TestConstants.bucket).isEmpty)
        #expect(server.fake.issuedTokenCount == 0, "no service-account token is needed with the emulators")
        let identityCalls = server.fake.requests.filter { $0.endpoint == .accountsDelete }
        #expect(identityCalls.count == 1)
        #expect(identityCalls.first?.path == "/identitytoolkit.googleapis.com/v1/projects/\(TestConstants.emulatorProjectID)/accounts:delete")
        #expect(identityCalls.first?.header("Authorization") == "Bearer owner")
        let storageCalls = server.fake.requests.filter { $0.endpoint == .storageList || $0.endpoint == .storageDelete }
        #expect(!storageCalls.isEmpty)
        #expect(storageCalls.allSatisfy { $0.path.hasPrefix("/storage/v1/b/\(TestConstants.bucket)/o") })
    }
}
