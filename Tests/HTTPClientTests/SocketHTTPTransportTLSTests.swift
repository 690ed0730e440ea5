import HTTPClient
import Foundation
import Testing
import TestSupport

#if canImport(Glibc)
    import Glibc
#endif

/// Certificates made with the openssl CLI for these tests: a trusted test CA, certificates it
/// signed for `localhost` and for another name, and a `localhost` certificate of a CA nobody trusts.
private struct TestCertificates {
    let directory: URL
    var path: (String) -> String { { directory.appendingPathComponent($0).path } }

    static let shared: Result<TestCertificates, any Error> = Result { try TestCertificates() }

    private init() throws {
        directory = TestScratch.uniquePath("tls")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let script = """
            set -e
            cd '\(directory.path)'
            ca() { openssl req -x509 -newkey rsa:2048 -nodes -keyout "$1.key" -out "$1.pem" -subj "/CN=$1" -days 2 2>/dev/null; }
            leaf() { openssl req -x509 -newkey rsa:2048 -nodes -keyout "$1.key" -out "$1.pem" -subj "/CN=$2" \
                -addext "subjectAltName=DNS:$2" -CA "$3.pem" -CAkey "$3.key" -days 2 2>/dev/null; }
            ca test-ca
            ca untrusted-ca
            leaf localhost localhost test-ca
            leaf other other.example test-ca
            leaf stranger localhost untrusted-ca
            """
        guard try runProcess(["/bin/sh", "-c", script]).status == 0 else { throw TransportError("openssl could not make the test certificates") }
    }
}

/// `openssl s_server -www` on an ephemeral loopback port with one certificate: answers each GET
/// with an HTTP/1.0 page describing the TLS session, then closes. Stopped by `stop()`.
private final class OpenSSLServer {
    let port: Int
    private let pid: pid_t

    init(certificate: String, certificates: TestCertificates) throws {
        let log = TestScratch.uniquePath("s_server.log").path
        pid = try spawnProcess(
            [
                "/usr/bin/openssl", "s_server", "-accept", "127.0.0.1:0", "-www", "-cert", certificates.path("\(certificate).pem"),
                "-key", certificates.path("\(certificate).key"),
            ], logPath: log)
        var found: Int?
        _ = eventually(timeout: .seconds(20)) {
            let text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
            guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix("ACCEPT ") }), let colon = line.lastIndex(of: ":") else {
                return false
            }
            found = Int(line[line.index(after: colon)...])
            return found != nil
        }
        guard let found else {
            kill(pid, SIGKILL)
            var status: Int32 = 0
            waitpid(pid, &status, 0)
            throw TransportError("openssl s_server did not start")
        }
        port = found
    }

    /// SIGKILL: the test process's blocked signals (inherited through posix_spawn) may include SIGTERM.
    func stop() {
        kill(pid, SIGKILL)
        var status: Int32 = 0
        waitpid(pid, &status, 0)
    }
}

@Suite("SocketHTTPTransport: TLS against openssl s_server")
struct SocketHTTPTransportTLSTests {
    @Test("a request over TLS to a certificate of the trusted CA for the host gets the answer; the system store does not trust it")
    func trusted() throws {
        let certificates = try TestCertificates.shared.get()
        let server = try OpenSSLServer(certificate: "localhost", certificates: certificates)
        defer { server.stop() }
        let transport = SocketHTTPTransport(timeout: 10, trustedCertificatesFile: certificates.path("test-ca.pem"))
        let response = try transport.send(TransportRequest(method: "GET", url: "https://localhost:\(server.port)/"))
        #expect(response.status == 200)
        let page = String(decoding: response.body, as: UTF8.self)
        #expect(page.contains("New, TLSv1.3, Cipher is"))

        let untrusting = #expect(throws: TransportError.self) {
            try SocketHTTPTransport(timeout: 10).send(TransportRequest(method: "GET", url: "https://localhost:\(server.port)/"))
        }
        #expect(untrusting?.message.contains("certificate verify failed") == true)
    }

    @Test("a certificate for another host name is refused")
    func otherHost() throws {
        let certificates = try TestCertificates.shared.get()
        let server = try OpenSSLServer(certificate: "other", certificates: certificates)
        defer { server.stop() }
        let transport = SocketHTTPTransport(timeout: 10, trustedCertificatesFile: certificates.path("test-ca.pem"))
        let error = #expect(throws: TransportError.self) {
            try transport.send(TransportRequest(method: "GET", url: "https://localhost:\(server.port)/"))
        }
        #expect(error?.isTimeout == false)
        #expect(error?.message.contains("hostname mismatch") == true)
        // An IP address is checked against the certificate's addresses, not its names.
        let byAddress = #expect(throws: TransportError.self) {
            try transport.send(TransportRequest(method: "GET", url: "https://127.0.0.1:\(server.port)/"))
        }
        #expect(byAddress?.message.contains("mismatch") == true)
    }

    @Test("a certificate of an untrusted CA is refused")
    func untrustedCA() throws {
        let certificates = try TestCertificates.shared.get()
        let server = try OpenSSLServer(certificate: "stranger", certificates: certificates)
        defer { server.stop() }
        let transport = SocketHTTPTransport(timeout: 10, trustedCertificatesFile: certificates.path("test-ca.pem"))
        let error = #expect(throws: TransportError.self) {
            try transport.send(TransportRequest(method: "GET", url: "https://localhost:\(server.port)/"))
        }
        #expect(error?.isTimeout == false)
        #expect(error?.message.contains("certificate verify failed") == true)
    }

    @Test("a TLS server that never answers the handshake times out within the bound")
    func handshakeTimeout() throws {
        let server = try OneShotHTTPServer(response: "", holdOpen: 10)
        let started = ContinuousClock.now
        let error = #expect(throws: TransportError.self) {
            try SocketHTTPTransport(timeout: 0.5).send(TransportRequest(method: "GET", url: "https://127.0.0.1:\(server.port)/"))
        }
        #expect(error?.isTimeout == true)
        #expect(ContinuousClock.now - started < .seconds(5))
    }
}
