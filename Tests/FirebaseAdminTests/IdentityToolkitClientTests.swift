import FirebaseAdmin
import JSON
import Testing
import TestSupport

@Suite("IdentityToolkitClient")
struct IdentityToolkitClientTests {
    private func client(_ bed: FirebaseTestBed) throws -> IdentityToolkitClient {
        let tokens = try ServiceAccountTokenProvider(
            account: TestServiceAccount.account(), transport: bed.transport, clock: bed.clock.wallClock, logger: bed.logs.logger())
        return IdentityToolkitClient(transport: bed.transport, tokens: tokens)
    }

    private func failure(_ body: () throws(GoogleAPIError) -> Void) -> GoogleAPIError? {
        do throws(GoogleAPIError) {
            try body()
            return nil
        } catch {
            return error
        }
    }

    @Test("deletes an account through the project-scoped path with a bearer token")
    func deletes() throws {
        let bed = FirebaseTestBed()
        bed.fake.addAccounts(["uid-1", "uid-2"])
        try client(bed).deleteAccount(projectId: "locify-test", uid: "uid-1")
        #expect(bed.fake.deletedAccounts == ["uid-1"])
        #expect(bed.fake.accounts == ["uid-2"])
        let request = try #require(bed.fake.requests.last)
        #expect(request.method == "POST")
        #expect(request.path == "/v1/projects/locify-test/accounts:delete")
        #expect(request.header("Authorization") == "Bearer fake-access-token-1")
        #expect(request.header("Content-Type") == "application/json")
        #expect(try JSONParser.parse(request.body) == ["localId": "uid-1"])
        #expect(bed.fake.transportURLs.last == "https://identitytoolkit.googleapis.com/v1/projects/locify-test/accounts:delete")
    }

    @Test("USER_NOT_FOUND counts as done, with or without a detail", arguments: ["USER_NOT_FOUND", "USER_NOT_FOUND : no user record"])
    func userNotFound(message: String) throws {
        let bed = FirebaseTestBed()
        bed.fake.userNotFoundMessage = message
        try client(bed).deleteAccount(projectId: "locify-test", uid: "never-existed")
        #expect(bed.fake.requestCount(.accountsDelete) == 1)
    }

    @Test("other errors are reported and classified")
    func errors() throws {
        let bed = FirebaseTestBed()
        let client = try client(bed)
        bed.fake.failNext(.accountsDelete, status: 503, retryAfter: "2")
        let unavailable = failure { () throws(GoogleAPIError) in try client.deleteAccount(projectId: "locify-test", uid: "u") }
        #expect(unavailable?.retryable == true)
        #expect(unavailable?.retryAfter == 2)
        let wrongProject = failure { () throws(GoogleAPIError) in try client.deleteAccount(projectId: "other-project", uid: "u") }
        #expect(wrongProject?.status == 403)
        #expect(wrongProject?.retryable == false)
        #expect(wrongProject?.message == "PERMISSION_DENIED")
        bed.fake.userNotFoundMessage = "USER_NOT_FOUNDISH"
        let lookalike = failure { () throws(GoogleAPIError) in try client.deleteAccount(projectId: "locify-test", uid: "u") }
        #expect(lookalike?.status == 400)
    }

    @Test("the emulator client targets the emulator host with Bearer owner")
    func emulator() throws {
        let bed = FirebaseTestBed()
        bed.fake.acceptOwnerToken = true
        bed.fake.addAccounts(["emu-user"])
        let client = IdentityToolkitClient.emulator(host: "localhost:9099", transport: bed.transport)
        try client.deleteAccount(projectId: "locify-test", uid: "emu-user")
        #expect(bed.fake.deletedAccounts == ["emu-user"])
        #expect(bed.fake.transportURLs == ["http://localhost:9099/identitytoolkit.googleapis.com/v1/projects/locify-test/accounts:delete"])
        #expect(bed.fake.requests.last?.header("Authorization") == "Bearer owner")
        #expect(bed.fake.issuedTokenCount == 0)
    }

    @Test("without a valid token the fake refuses (401, not retryable)")
    func unauthorized() throws {
        let bed = FirebaseTestBed()
        let client = IdentityToolkitClient(transport: bed.transport, tokens: StaticAccessToken("owner"))
        let error = failure { () throws(GoogleAPIError) in try client.deleteAccount(projectId: "locify-test", uid: "u") }
        #expect(error?.status == 401)
        #expect(error?.retryable == false)
    }
}
