import FirebaseAdmin
import Foundation
import HTTPServer
import Synchronization
import TestSupport

/// `FakeGoogle` served over real sockets by the project's own HTTP server, so the application
/// under test reaches "Google" through its real URLSession transport. Every Google base URL of
/// the application points here; the fake routes by path.
public final class FakeGoogleServer: Sendable {
    /// The fake behind the server: its state and scripted answers.
    public let fake: FakeGoogle
    private let server: HTTPTestServer

    /// The base URL (`http://127.0.0.1:<port>`).
    public var baseURL: String { "http://127.0.0.1:\(server.port)" }
    /// Where the application fetches ID-token certificates.
    public var certificatesURL: String { baseURL + FakeGoogle.certificatesPath }
    /// The OAuth token endpoint (the service account's `token_uri`).
    public var tokenURI: String { baseURL + "/token" }

    /// Starts a fake Google for `projectID` on a loopback port.
    public init(projectID: String = TestConstants.projectID) throws {
        let box = Mutex<FakeGoogle?>(nil)
        server = try HTTPTestServer(
            responder: HTTPClosureResponder { request, _ in
                guard let fake = box.withLock({ $0 }) else { return HTTPResponse(status: .serviceUnavailable) }
                let answer = fake.handle(
                    method: request.method.rawValue, path: request.path, query: request.query ?? "",
                    headers: request.headers.map { ($0.name, $0.value) }, body: request.body)
                let headers = HTTPHeaders(answer.headers.map { (name: $0.0, value: $0.1) })
                return HTTPResponse(status: HTTPStatus(code: answer.status, reasonPhrase: "Fake"), headers: headers, body: answer.body)
            })
        let tokenURI = "http://127.0.0.1:\(server.port)/token"
        fake = FakeGoogle(projectId: projectID, serviceAccount: TestServiceAccount.account(projectId: projectID, tokenURI: tokenURI))
        box.withLock { $0 = fake }
    }

    /// Writes a service-account key file whose `token_uri` is this server; returns its path.
    public func writeServiceAccountFile() throws -> String {
        try TestServiceAccount.writeFile(tokenURI: tokenURI)
    }

    /// Stops the server.
    public func stop() {
        server.stop(gracePeriod: .milliseconds(200))
    }
}
