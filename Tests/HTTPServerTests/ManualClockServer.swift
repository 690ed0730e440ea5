import HTTPServer
import Testing
import TestSupport

/// Runs `body` with a test server whose clock stands still until the test moves it (starting at
/// 1,000 s), configured by `configure`.
func withManualClockServer(
    configure: (inout HTTPServerConfiguration) -> Void, _ body: (HTTPTestServer, ManualClock<Duration>) throws -> Void
) throws {
    let manual = ManualClock<Duration>(.seconds(1000))
    try withHTTPTestServer(configure: {
        $0.clock = manual.httpClock
        configure(&$0)
    }) { server in
        try body(server, manual)
    }
}

/// Sends `bytes` and lets the server read them in real time before the test moves the clock
/// again (the connection must stay open meanwhile).
func sendLettingServerRead(_ bytes: String, on client: RawHTTPClient, sourceLocation: SourceLocation = #_sourceLocation) throws {
    try client.send(bytes)
    #expect(client.staysQuiet(for: .milliseconds(250)), "the server answered or closed early", sourceLocation: sourceLocation)
}
