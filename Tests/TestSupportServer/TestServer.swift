import FirebaseAdmin
import Foundation
import HTTPClient
import HTTPServer
import JSON
import Locify
import LocifyAPI
import LocifyServer
import Logging
import Postgres
import Primitives
import Synchronization
import TestSupport
import TestSupportDatabase

/// The whole server for API tests, over a fresh migrated database, in one of two ways (as
/// Hummingbird tests an application `.live` or through its `.router`):
/// - `start(.sockets)` (the default): end to end over sockets. The application built by `buildApplication` listens on an
///   ephemeral port and reaches a fake Google served over real sockets. For tests whose subject is
///   the socket: HTTP framing, keep-alive, pipelining, slow clients, connection limits, long-poll
///   waits held by the event loop, several instances.
/// - `start(.inProcess)`: the same application, not listening: each request is parsed by the server's
///   parser, answered by its request pipeline (`Application.responder`) on the calling thread and
///   serialized as the server writes it (`InProcessPipeline`); Google is the in-process fake
///   (`InProcessTransport`). For every test that only needs requests and responses.
/// Both run the background work (clean-up worker, purge, live changes) and share the real
/// PostgreSQL; `request` and the other helpers behave the same on both. `LOCIFY_TEST_SOCKETS=1`
/// sends the in-process tests over sockets as well.
public final class TestServer: Sendable {
    /// The server under test.
    public let application: Application
    /// Its database.
    public let database: TestDatabase
    /// The fake Google it talks to: its state and scripted answers.
    public let fake: FakeGoogle
    /// The configuration it was built with.
    public let configuration: Configuration
    /// Mints RS256 ID tokens the server accepts (key `TestKeys.primary`, published by the fake).
    public let minter: TokenMinter
    /// The server's wall clock (`ApplicationDependencies.wallClock`): tokens are minted on it, so
    /// a test that moves it keeps its tokens valid.
    public let wallClock: WallClock
    /// The fake Google's sockets; nil in process, where the Google URLs of the
    /// configuration keep their defaults and the transport ignores their hosts.
    private let googleServer: FakeGoogleServer?
    /// Answers the requests in process; nil when they go over sockets.
    private let pipeline: InProcessPipeline?

    /// The port it listens on (loopback); 0 in process.
    public var port: Int { application.port }
    /// A pool on its database, for direct checks.
    public var pool: ConnectionPool { database.pool }
    /// The OAuth token endpoint of the service account the server signs in with.
    public var googleTokenURI: String { googleServer?.tokenURI ?? TestServiceAccount.tokenURI }

    /// How requests reach the application.
    public enum Transport: Sendable {
        /// Over loopback sockets, to the listening server; Google's fake over sockets too.
        case sockets
        /// Through the request pipeline, called in process (`InProcessPipeline`); the application
        /// does not listen, and reaches the fake Google in process. Long-poll waits are not
        /// served (`request` throws: the event loop holds them; use `.sockets`).
        case inProcess
    }

    /// Starts everything, over `transport`. `configure` adjusts the configuration (rate limits are
    /// off by default; Google credentials point at the fake); `dependencies` the test hooks (short
    /// worker timings). `google` sets up the fake before the application starts (its start-up
    /// fetch of the ID-token keys sees it); `logger` receives the application's logs (default:
    /// quiet unless `LOCIFY_TEST_LOG` is set); `projectID` the Firebase project of the server, the
    /// fake and the minted tokens.
    public static func start(
        _ transport: Transport = .sockets,
        projectID: String = TestConstants.projectID,
        configure: (inout Configuration) -> Void = { _ in },
        dependencies configureDependencies: (inout ApplicationDependencies) -> Void = { _ in },
        google prepareGoogle: (FakeGoogle) -> Void = { _ in },
        logger: Logger? = nil
    ) throws -> TestServer {
        // LOCIFY_TEST_SOCKETS=1 runs the in-process tests over sockets too (to compare the two).
        let inProcess = transport == .inProcess && ProcessInfo.processInfo.environment["LOCIFY_TEST_SOCKETS"] != "1"
        let googleServer = try inProcess ? nil : FakeGoogleServer(projectID: projectID)
        let fake =
            googleServer?.fake
            ?? FakeGoogle(projectId: projectID, serviceAccount: TestServiceAccount.account(projectId: projectID))
        prepareGoogle(fake)
        let database: TestDatabase
        do {
            database = try TestDatabase.create(migrationsDirectory: ProjectPaths.migrations, poolSize: 2)
        } catch {
            googleServer?.stop()
            throw error
        }
        var configuration = Configuration(databaseURL: database.connectionString, firebaseProjectID: projectID)
        configuration.port = 0
        configuration.databasePoolSize = 4
        configuration.storageBucket = TestConstants.bucket
        if let googleServer {
            configuration.idTokenCertsURL = googleServer.certificatesURL
            configuration.storageAPIURL = googleServer.baseURL
            configuration.identityAPIURL = googleServer.baseURL
        }
        configuration.migrationsDirectory = ProjectPaths.migrations
        configuration.rateLimitPerSecond = 0
        configuration.addressRateLimitPerSecond = 0
        configuration.shutdownGraceSeconds = 2
        let application: Application
        let transport = inProcess ? InProcessTransport(fake: fake) : nil
        let pipeline: InProcessPipeline?
        var dependencies: ApplicationDependencies
        do {
            configuration.googleApplicationCredentials = try TestServiceAccount.writeFile(
                tokenURI: googleServer?.tokenURI ?? TestServiceAccount.tokenURI)
            configure(&configuration)
            dependencies = testDependencies(googleTransport: transport)
            configureDependencies(&dependencies)
            application = try buildApplication(
                configuration: configuration, logger: logger ?? testServerLogger, dependencies: dependencies)
            try application.start(listening: !inProcess)
            pipeline = inProcess ? InProcessPipeline(application: application, dependencies: dependencies) : nil
        } catch {
            googleServer?.stop()
            try? database.drop()
            throw error
        }
        return TestServer(
            application: application, database: database, fake: fake, googleServer: googleServer, pipeline: pipeline,
            configuration: configuration, minter: TokenMinter(projectId: projectID), wallClock: dependencies.wallClock)
    }

    private init(
        application: Application, database: TestDatabase, fake: FakeGoogle, googleServer: FakeGoogleServer?,
        pipeline: InProcessPipeline?, configuration: Configuration, minter: TokenMinter, wallClock: WallClock
    ) {
        self.wallClock = wallClock
        self.application = application
        self.database = database
        self.fake = fake
        self.googleServer = googleServer
        self.pipeline = pipeline
        self.configuration = configuration
        self.minter = minter
    }

    /// The test defaults of the application's hooks: short clean-up worker timings (100 ms poll,
    /// 50 ms base backoff, 0.5 s cap), two I/O threads, 50 ms timer resolution; Google through
    /// `googleTransport` when given (in process).
    static func testDependencies(googleTransport: (any HTTPTransport)? = nil) -> ApplicationDependencies {
        var dependencies = ApplicationDependencies()
        if let googleTransport { dependencies.googleTransport = googleTransport }
        dependencies.openAPIPath = ProjectPaths.root.appendingPathComponent("openapi.yaml").path
        dependencies.cleanupSettings.pollInterval = .milliseconds(100)
        dependencies.cleanupSettings.baseBackoff = 0.05
        dependencies.cleanupSettings.maxBackoff = 0.5
        dependencies.configureHTTP = { http in
            http.ioThreads = 2
            http.timerResolution = .milliseconds(50)
        }
        return dependencies
    }

    /// Builds and starts another application on this server's database and fake Google (a
    /// second instance, or a restarted one), listening on its own ephemeral port, with this
    /// server's configuration adjusted by `configure`. The caller shuts it down.
    public func startApplication(
        configure: (inout Configuration) -> Void = { _ in },
        dependencies configureDependencies: (inout ApplicationDependencies) -> Void = { _ in },
        logger: Logger? = nil
    ) throws -> Application {
        var configuration = self.configuration
        configuration.port = 0
        configure(&configuration)
        var dependencies = Self.testDependencies(googleTransport: pipeline.map { _ in InProcessTransport(fake: fake) })
        configureDependencies(&dependencies)
        let application = try buildApplication(
            configuration: configuration, logger: logger ?? testServerLogger, dependencies: dependencies)
        try application.start()
        return application
    }

    /// Writes a service-account key file whose `token_uri` is the fake's; returns its path.
    public func writeServiceAccountFile() throws -> String {
        try TestServiceAccount.writeFile(tokenURI: googleTokenURI)
    }

    /// Shuts the server down and drops its database.
    public func stop() {
        application.shutdown()
        googleServer?.stop()
        try? database.drop()
    }

    /// A valid ID token for `uid`, issued now on the server's wall clock (or `issuedAt`, unix seconds).
    public func token(
        for uid: String, issuedAt: Double? = nil, email: String? = "user@example.com", name: String? = "Test User"
    ) throws -> String {
        try minter.sign(
            header: minter.header(),
            claims: minter.claims(uid: uid, issuedAt: issuedAt ?? wallClock.seconds(), email: email, name: name))
    }

    /// Sends one request (on a fresh connection, or in process) and reads the response.
    /// - Parameters:
    ///   - json: a body serialised as JSON (Content-Type set unless `headers` name one).
    ///   - body: raw body bytes (for malformed bodies).
    public func request(
        _ method: String, _ target: String, token: String? = nil, json: JSONValue? = nil, body: [UInt8]? = nil,
        headers: [(String, String)] = []
    ) throws -> TestResponse {
        guard let pipeline else {
            return try Self.send(port: port, method, target, token: token, json: json, body: body, headers: headers)
        }
        let bytes = Self.requestBytes(
            host: "localhost", method, target, token: token, json: json, body: body, headers: headers)
        return TestResponse(try pipeline.send(bytes))
    }

    /// `request` with a token minted for `uid`.
    public func request(
        _ method: String, _ target: String, as uid: String, json: JSONValue? = nil, headers: [(String, String)] = []
    ) throws -> TestResponse {
        try request(method, target, token: token(for: uid), json: json, headers: headers)
    }

    /// `request` to another application (e.g. one from `startApplication`) listening on `port`.
    public func request(
        port: Int, _ method: String, _ target: String, token: String? = nil, json: JSONValue? = nil,
        headers: [(String, String)] = []
    ) throws -> TestResponse {
        try Self.send(port: port, method, target, token: token, json: json, body: nil, headers: headers)
    }

    /// Sends one request to `127.0.0.1:<port>` on a fresh connection and reads the response.
    static func send(
        port: Int, _ method: String, _ target: String, token: String?, json: JSONValue?, body: [UInt8]?,
        headers: [(String, String)]
    ) throws -> TestResponse {
        let bytes = requestBytes(
            host: "127.0.0.1:\(port)", method, target, token: token, json: json, body: body, headers: headers)
        let client = try RawHTTPClient(port: port)
        defer { client.close() }
        try client.send(bytes)
        return TestResponse(try client.readResponse(timeout: .seconds(30), isResponseToHead: method == "HEAD"))
    }

    /// The bytes of one request with `Connection: close`, as a client sends them.
    static func requestBytes(
        host: String, _ method: String, _ target: String, token: String?, json: JSONValue?, body: [UInt8]?,
        headers: [(String, String)]
    ) -> [UInt8] {
        var fields = [("Host", host), ("Connection", "close")]
        if let token { fields.append(("Authorization", "Bearer \(token)")) }
        var payload = body ?? []
        if let json {
            payload = JSONWriter.encode(json)
            if !headers.contains(where: { $0.0.lowercased() == "content-type" }) {
                fields.append(("Content-Type", "application/json"))
            }
        }
        fields += headers
        if !payload.isEmpty || method == "POST" || method == "PUT" { fields.append(("Content-Length", String(payload.count))) }
        var head = "\(method) \(target) HTTP/1.1\r\n"
        for (name, value) in fields { head += "\(name): \(value)\r\n" }
        head += "\r\n"
        return Array(head.utf8) + payload
    }
}

/// A response as tests look at it.
public struct TestResponse: Sendable {
    /// The status code.
    public let status: Int
    /// The response headers.
    public let headers: HTTPHeaders
    /// The response body.
    public let body: [UInt8]

    init(_ raw: RawHTTPResponse) {
        status = raw.status
        headers = raw.headers
        body = raw.body
    }

    /// The body as UTF-8 text.
    public var text: String { String(decoding: body, as: UTF8.self) }
    /// The body parsed as JSON (nil when it is not JSON).
    public var json: JSONValue? { try? JSONParser.parse(body) }
    /// The body's top-level object, or an empty one.
    public var object: JSONObject { json?.objectValue ?? JSONObject() }
    /// `error.code` of an error body.
    public var errorCode: String? { object["error"]?.objectValue?["code"]?.stringValue }
    /// `error.details[0].field` of an error body.
    public var errorField: String? {
        object["error"]?.objectValue?["details"]?.arrayValue?.first?.objectValue?["field"]?.stringValue
    }
    /// `data` of a list response.
    public var data: [JSONValue] { object["data"]?.arrayValue ?? [] }
    /// `meta` of a list response.
    public var meta: JSONObject { object["meta"]?.objectValue ?? JSONObject() }
}

/// Quiet unless `LOCIFY_TEST_LOG` names a level (e.g. `debug`).
public let testServerLogger: Logger = {
    guard let level = ProcessInfo.processInfo.environment["LOCIFY_TEST_LOG"].flatMap(Logger.Level.init(rawValue:)) else {
        return Logger(label: "locify-test") { _ in SwiftLogNoOpLogHandler() }
    }
    var logger = Logger(label: "locify-test") { StreamLogHandler.standardError(label: $0) }
    logger.logLevel = level
    return logger
}()

/// A log handler that keeps every message (and forwards it to the usual test logger), so tests
/// can assert what the server logged and how often.
public final class CapturedLog: Sendable {
    /// One logged message.
    public struct Entry: Sendable {
        /// The level the line was logged at.
        public var level: Logger.Level
        /// The message.
        public var message: String
        /// The metadata, rendered as strings.
        public var metadata: [String: String]
    }

    private let entries = Mutex<[Entry]>([])

    /// An empty capture.
    public init() {}

    /// A logger (trace level) whose messages land here.
    public var logger: Logger {
        var logger = Logger(label: "locify-test-captured") { _ in CapturingHandler(log: self) }
        logger.logLevel = .trace
        return logger
    }

    /// Every message so far.
    public var all: [Entry] { entries.withLock { $0 } }

    /// The messages containing `text`.
    public func messages(containing text: String) -> [Entry] {
        all.filter { $0.message.contains(text) }
    }

    fileprivate func append(_ entry: Entry) {
        entries.withLock { $0.append(entry) }
    }
}

private struct CapturingHandler: LogHandler {
    let log: CapturedLog
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .trace

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        var fields = metadata
        if let explicit = event.metadata { fields.merge(explicit) { $1 } }
        log.append(
            CapturedLog.Entry(
                level: event.level, message: event.message.description, metadata: fields.mapValues { "\($0)" }))
        testServerLogger.log(level: event.level, event.message, metadata: event.metadata)
    }
}
