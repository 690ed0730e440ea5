import Foundation
import Glibc
import JSON
import Synchronization
import TestSupport
import TestSupportDatabase

/// `locify-server` as a child process (the binary SwiftPM builds next to the test bundle), for the
/// faults only a real process can suffer: `kill -9` and SIGTERM. It runs in Auth emulator mode
/// (tokens from `ServerProcess.token(for:)`), logs JSON lines to a file, and is killed when the
/// test forgets to.
public final class ServerProcess: Sendable {
    /// The child's process id.
    public let pid: pid_t
    /// The port it listens on (127.0.0.1).
    public let port: Int
    /// Its stdout and stderr.
    public let logPath: String
    private let exitStatus = Mutex<Int32?>(nil)

    /// The Firebase project id the child verifies tokens for (an emulator-only `demo-` id: the
    /// server refuses emulator mode with any other).
    public static let projectID = "demo-locify-test"

    private init(pid: pid_t, port: Int, logPath: String) {
        self.pid = pid
        self.port = port
        self.logPath = logPath
    }

    deinit {
        if exitStatus.withLock({ $0 }) == nil {
            Glibc.kill(pid, SIGKILL)
            var status: Int32 = 0
            waitpid(pid, &status, 0)
        }
    }

    /// The built server binary: `locify-server` beside the running test bundle.
    public static func binaryPath() throws -> String {
        let folder = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        let candidates = [folder.appendingPathComponent("locify-server").path, ProjectPaths.root.appendingPathComponent(".build/debug/locify-server").path]
        guard let found = candidates.first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else {
            throw TestDatabaseError("no locify-server binary at \(candidates): build it first (`swift build`; scripts/test does)")
        }
        return found
    }

    /// Starts the server on `databaseURL` with `environment` added (e.g. `LOCIFY_SHUTDOWN_GRACE_SECONDS`)
    /// on `port` (a free one when nil), under an open-file limit of `openFileLimit` (soft and hard;
    /// nil: this process's), and waits until `/health` answers.
    public static func start(
        databaseURL: String, port: Int? = nil, environment: [String: String] = [:], openFileLimit: Int? = nil
    ) throws -> ServerProcess {
        let process = try launch(databaseURL: databaseURL, port: port, environment: environment, openFileLimit: openFileLimit)
        let healthy = eventually(timeout: .seconds(60)) {
            guard process.exitStatusIfExited() == nil else { return true }
            return (try? process.get("/health").status) == 200
        }
        guard healthy, process.exitStatusIfExited() == nil else {
            throw TestDatabaseError("locify-server did not come up: \(process.logText.suffix(2000))")
        }
        return process
    }

    /// Starts the server like `start` without waiting for it to come up (for configurations it
    /// must refuse). `environment` values replace the defaults; an empty value unsets a variable.
    public static func launch(
        databaseURL: String, port: Int? = nil, environment: [String: String] = [:], openFileLimit: Int? = nil
    ) throws -> ServerProcess {
        let port = try port ?? freePort()
        let logPath = TestScratch.uniquePath("locify-server.log").path
        // Nothing of the test runner's own Google or Firebase set-up may leak into the child.
        var variables = ProcessInfo.processInfo.environment.filter {
            !$0.key.hasPrefix("LOCIFY_") && !$0.key.hasPrefix("FIREBASE_") && $0.key != "DATABASE_URL"
                && $0.key != "GOOGLE_APPLICATION_CREDENTIALS"
        }
        variables["DATABASE_URL"] = databaseURL
        variables["PORT"] = String(port)
        variables["HOST"] = "127.0.0.1"
        variables["FIREBASE_PROJECT_ID"] = projectID
        variables["FIREBASE_AUTH_EMULATOR_HOST"] = "127.0.0.1:9"
        variables["LOCIFY_MIGRATIONS_DIR"] = ProjectPaths.migrations
        variables["LOCIFY_RATE_LIMIT_PER_SECOND"] = "0"
        variables["DB_POOL_SIZE"] = "4"
        variables["LOG_LEVEL"] = "info"
        for (key, value) in environment { variables[key] = value.isEmpty ? nil : value }

        let binary = try binaryPath()
        // The shell's `ulimit -n` lowers both limits, then the server replaces the shell.
        let command = openFileLimit.map { ["/bin/sh", "-c", "ulimit -n \($0) && exec \"$0\"", binary] } ?? [binary]
        let pid = try spawnProcess(command, environment: variables, logPath: logPath)
        return ServerProcess(pid: pid, port: port, logPath: logPath)
    }

    /// An Auth-emulator token the child accepts for `uid`, issued now.
    public static func token(for uid: String) throws -> String {
        let minter = TokenMinter(projectId: projectID)
        return try minter.emulatorToken(claims: minter.claims(uid: uid, issuedAt: Date().timeIntervalSince1970))
    }

    /// Sends `signal` to the child.
    public func send(_ signal: Int32) {
        Glibc.kill(pid, signal)
    }

    /// `kill -9`, then reaps the child (nothing when it already exited).
    public func killHard() {
        guard exitStatusIfExited() == nil else { return }
        send(SIGKILL)
        _ = waitForExit(timeout: .seconds(30))
    }

    /// Waits for the child to exit; returns its wait status (see `exitCode`), nil on timeout.
    public func waitForExit(timeout: Duration) -> Int32? {
        _ = eventually(timeout: timeout) { exitStatusIfExited() != nil }
        return exitStatusIfExited()
    }

    /// The exit code when the child exited normally, nil when it was killed by a signal.
    public static func exitCode(_ status: Int32) -> Int32? {
        status & 0x7f == 0 ? (status >> 8) & 0xff : nil
    }

    /// The child's wait status once it has exited, nil while it runs.
    public func exitStatusIfExited() -> Int32? {
        exitStatus.withLock { known in
            if let known { return known }
            var status: Int32 = 0
            if waitpid(pid, &status, WNOHANG) == pid {
                known = status
            }
            return known
        }
    }

    /// Everything the child wrote so far.
    public var logText: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }

    /// The child's JSON log lines, parsed.
    public var logLines: [JSONObject] {
        logText.split(separator: "\n").compactMap { (try? JSONParser.parse(String($0)))?.objectValue }
    }

    /// One request on a fresh connection (`Connection: close`).
    public func request(_ method: String, _ target: String, token: String? = nil, json: JSONValue? = nil) throws -> TestResponse {
        try TestServer.send(port: port, method, target, token: token, json: json, body: nil, headers: [])
    }

    private func get(_ target: String) throws -> TestResponse { try request("GET", target) }

    /// A TCP port that was free a moment ago.
    public static func freePort() throws -> Int {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw TestDatabaseError("socket failed: errno \(errno)") }
        defer { close(descriptor) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0 else { throw TestDatabaseError("bind failed: errno \(errno)") }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let named = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
        }
        guard named == 0 else { throw TestDatabaseError("getsockname failed: errno \(errno)") }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}
