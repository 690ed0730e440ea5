import Foundation
import Glibc
import JSON
import Testing
import TestSupport
import TestSupportServer

/// Ctrl-C and container stops work at every moment (issue 16 item 6): the real `locify-server`
/// started against a database that is down waits for it (migrations are retried for about 30 s);
/// a SIGTERM or SIGINT during that wait ends the process at once, with the shell's status for a
/// process ended by that signal and one log line saying why.
@Suite("Startup: signals while the database is down", .serialized)
struct StartupSignalTests {
    @Test("a SIGTERM or SIGINT while the server waits for its database ends it within seconds with status 128 + signal", arguments: [SIGTERM, SIGINT])
    func signalWhileWaitingForDatabase(signal: Int32) throws {
        // Nobody listens on this port: every connection attempt is refused, so start-up retries.
        let downDatabase = "postgres://locify@127.0.0.1:\(try ServerProcess.freePort())/locify"
        let process = try ServerProcess.launch(databaseURL: downDatabase)
        defer { process.killHard() }
        let waiting = eventually(timeout: .seconds(20)) { process.logText.contains("database not reachable yet") }
        try #require(waiting, "the server never reported waiting for the database: \(process.logText.suffix(2000))")

        let sent = ContinuousClock.now
        process.send(signal)
        let status = process.waitForExit(timeout: .seconds(10))
        let elapsed = ContinuousClock.now - sent

        let exited = try #require(status, "still running 10 s after the signal: \(process.logText.suffix(2000))")
        #expect(ServerProcess.exitCode(exited) == 128 + signal, "wait status \(exited)")
        // Generous for a shared machine: the fix exits in milliseconds; the old code kept retrying for ~30 s.
        #expect(elapsed < .seconds(5))
        let line = process.logLines.first { $0["msg"]?.stringValue == "received signal before the server started; exiting" }
        #expect(line?["signal"]?.stringValue == "\(signal)", "log: \(process.logText.suffix(2000))")
        #expect(!process.logText.contains("cannot start"))
    }
}
