import FirebaseAdmin
import LocifyRules
import Testing

@testable import LocifyAPI

@Suite("ID token errors: mapped to API errors in one place")
struct IDTokenErrorMappingTests {
    @Test("an invalid token is 401 E005 with invalid_token, unreachable keys are 503 S003, thrown or mapped")
    func mapsBothCases() throws {
        let invalid = try #require(APIError.mapping(IDTokenError.invalid("bad signature")))
        #expect(invalid.code == .unauthenticated && invalid.status == .unauthorized)
        #expect(invalid.headers["WWW-Authenticate"] == "Bearer error=\"invalid_token\"")
        #expect(invalid.message == APIError(IDTokenError.invalid("other")).message)

        let unavailable = try #require(APIError.mapping(IDTokenError.keysUnavailable("timeout")))
        #expect(unavailable.code == .unavailable && unavailable.status == .serviceUnavailable)
        #expect(unavailable.message == "cannot verify tokens right now, retry later")
        #expect(unavailable.headers["Retry-After"] == "1")
    }
}
