import Foundation
import LocifyAPI
import Testing
import TestSupport
import TestSupportServer

/// Issue 13, item 6: Google's endpoints must be `https://` unless the host is loopback (local
/// fakes and emulators); anything else is refused at start with a message naming the variable.
@Suite("Hostile configuration: Google endpoint URLs")
struct ConfigurationURLTests {
    static let variables = ["LOCIFY_ID_TOKEN_CERTS_URL", "LOCIFY_STORAGE_API_URL", "LOCIFY_IDENTITY_API_URL"]

    static func configuration(_ name: String, _ value: String) throws(ConfigurationError) -> Configuration {
        try Configuration(environment: ["DATABASE_URL": "postgres://localhost/x", "FIREBASE_PROJECT_ID": "p", name: value])
    }

    @Test("plain http to a non-loopback host is refused, naming the variable", arguments: variables)
    func httpRefused(variable: String) {
        for value in [
            "http://www.googleapis.com/robot/v1/metadata/x509/securetoken@system.gserviceaccount.com",
            "http://storage.example.com", "HTTP://10.0.0.7:8080", "http://127.0.0.1.evil.example/x",
            "http://localhost.example.com", "http://128.0.0.1", "ftp://127.0.0.1/", "127.0.0.1:9099",
        ] {
            do {
                _ = try Self.configuration(variable, value)
                Issue.record("\(variable)=\(value) was accepted")
            } catch {
                #expect(error.variable == variable)
                #expect(error.problem.contains("https"), "\(error)")
                #expect("\(error)".hasPrefix("\(variable): must be an https URL"))
            }
        }
    }

    @Test("https anywhere, and plain http to a loopback host, are accepted", arguments: variables)
    func accepted(variable: String) throws {
        for value in [
            "https://www.googleapis.com/robot/v1/metadata/x509/securetoken@system.gserviceaccount.com",
            "HTTPS://storage.googleapis.com", "http://127.0.0.1:9099/x", "http://127.1.2.3:80", "http://localhost:4000",
            "http://[::1]:9199",
        ] {
            let configuration = try Self.configuration(variable, value)
            let read = [configuration.idTokenCertsURL, configuration.storageAPIURL, configuration.identityAPIURL]
            #expect(read.contains(value), "\(variable)=\(value)")
        }
    }

    @Test("the server process refuses to start with plain http to a remote host (exit 1, one clear line)")
    func processRefuses() throws {
        let run = try runProcess(
            [try ServerProcess.binaryPath()],
            environment: [
                "DATABASE_URL": "postgres://127.0.0.1:1/none", "FIREBASE_PROJECT_ID": "locify-test",
                "LOCIFY_STORAGE_API_URL": "http://storage.googleapis.com",
            ])
        let output = run.standardError
        #expect(run.status == 1)
        let lines = output.split(separator: "\n")
        #expect(lines.count == 1, "\(output)")
        #expect(output.contains("invalid configuration: LOCIFY_STORAGE_API_URL: must be an https URL"), "\(output)")
    }
}
