import Foundation
import Synchronization
import Testing
import TestSupport
import TestSupportDatabase

@testable import Postgres

/// What a listener under test reported.
private final class ListenerLog: Sendable {
    private let state = Mutex((listening: 0, payloads: [String]()))

    func listened() {
        state.withLock { $0.listening += 1 }
    }

    func received(_ payload: String) {
        state.withLock { $0.payloads.append(payload) }
    }

    var listening: Int { state.withLock { $0.listening } }
    var payloads: [String] { state.withLock { $0.payloads } }
}

@Suite("PostgresListener: LISTEN on one connection, reconnect, probes")
struct PostgresListenerTests {
    private static let channel = "listener_test"

    private func listener(_ database: TestDatabase, log: ListenerLog, timing: PostgresListener.Timing = fastTiming) -> PostgresListener {
        PostgresListener(
            configuration: database.configuration, channel: Self.channel, timing: timing, logger: TestDatabase.logger,
            onListening: { log.listened() }, onNotification: { log.received($0) })
    }

    private static var fastTiming: PostgresListener.Timing {
        var timing = PostgresListener.Timing()
        timing.minimumBackoff = .milliseconds(20)
        timing.maximumBackoff = .milliseconds(200)
        return timing
    }

    private func notify(_ database: TestDatabase, _ payload: String, commit: Bool = true) throws {
        try database.pool.withConnection { connection in
            try connection.execute(unsafeSQL: "BEGIN")
            try connection.query("SELECT pg_notify(\(Self.channel), \(payload))")
            try connection.execute(unsafeSQL: commit ? "COMMIT" : "ROLLBACK")
        }
    }

    /// Terminates this database's backends named `applicationName`; returns how many.
    private func terminate(_ database: TestDatabase, applicationName: String) throws -> Int {
        try database.pool.withConnection { connection in
            try connection.query(
                """
                SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) FROM pg_stat_activity
                WHERE application_name = \(applicationName) AND datname = current_database()
                """
            ).first?.decode(0, as: Int.self) ?? 0
        }
    }

    /// The last statement of this database's backend named `applicationName`.
    private func lastQuery(_ database: TestDatabase, applicationName: String) throws -> String? {
        try database.pool.withConnection { connection in
            try connection.query(
                """
                SELECT query FROM pg_stat_activity
                WHERE application_name = \(applicationName) AND datname = current_database()
                """
            ).first?.decode(0, as: String.self)
        }
    }

    @Test("a notification arrives when its transaction commits, with its payload; a rolled-back one never does")
    func deliversCommittedNotifications() throws {
        try TestDatabase.with { database in
            let log = ListenerLog()
            let listener = listener(database, log: log)
            listener.start()
            defer { listener.stop() }
            #expect(eventually { log.listening == 1 && listener.statistics.isListening })
            try notify(database, "rolled back", commit: false)
            try notify(database, "alice")
            try notify(database, "bob ünïcode")
            #expect(eventually { log.payloads.count == 2 })
            #expect(log.payloads == ["alice", "bob ünïcode"])
            #expect(listener.statistics.notifications == 2)
            #expect(listener.statistics.reconnects == 0)
        }
    }

    @Test("a terminated listening backend is replaced: onListening runs again, the reconnect is counted, notifications flow")
    func reconnectsAfterTermination() throws {
        try TestDatabase.with { database in
            let log = ListenerLog()
            let listener = listener(database, log: log)
            listener.start()
            defer { listener.stop() }
            #expect(eventually { log.listening == 1 })
            for round in 1...3 {
                #expect(try terminate(database, applicationName: "locify-listen") == 1)
                #expect(eventually { log.listening == round + 1 && listener.statistics.isListening })
                #expect(listener.statistics.reconnects == round)
            }
            try notify(database, "after")
            #expect(eventually { log.payloads == ["after"] })
        }
    }

    @Test("a listener that cannot connect retries until it can, then calls onListening")
    func retriesUntilItCanConnect() throws {
        try TestDatabase.with { database in
            var configuration = database.configuration
            configuration.database = database.name + "_not_yet"
            let log = ListenerLog()
            let listener = PostgresListener(
                configuration: configuration, channel: Self.channel, timing: Self.fastTiming, logger: TestDatabase.logger,
                onListening: { log.listened() }, onNotification: { log.received($0) })
            listener.start()
            #expect(!listener.statistics.isListening)
            try database.pool.withConnection { connection in
                try connection.execute(unsafeSQL: "CREATE DATABASE \(database.name)_not_yet")
            }
            defer {
                listener.stop()
                _ = try? database.pool.withConnection { connection in
                    try connection.execute(unsafeSQL: "DROP DATABASE IF EXISTS \(database.name)_not_yet WITH (FORCE)")
                }
            }
            #expect(eventually { log.listening == 1 && listener.statistics.isListening })
            #expect(listener.statistics.reconnects == 0, "the first listen is not a reconnect")
        }
    }

    @Test("an idle listener probes its connection (SELECT 1) and keeps listening while the probes are answered")
    func probesWhileIdle() throws {
        try TestDatabase.with { database in
            var timing = Self.fastTiming
            timing.probeInterval = .milliseconds(20)
            let log = ListenerLog()
            let listener = listener(database, log: log, timing: timing)
            listener.start()
            defer { listener.stop() }
            #expect(eventually { log.listening == 1 })
            #expect(eventually { (try? lastQuery(database, applicationName: "locify-listen")) == "SELECT 1" })
            try notify(database, "between probes")
            #expect(eventually { log.payloads == ["between probes"] })
            #expect(listener.statistics.reconnects == 0)
            #expect(log.listening == 1)
        }
    }

    @Test("stop ends the thread, even while it waits to retry a connect; stop twice is harmless")
    func stopWhileRetrying() throws {
        var configuration = try TestDatabase.serverConfiguration()
        configuration.database = "locify_no_such_database"
        var timing = Self.fastTiming
        timing.minimumBackoff = .seconds(600)
        timing.maximumBackoff = .seconds(600)
        let log = ListenerLog()
        let listener = PostgresListener(
            configuration: configuration, channel: Self.channel, timing: timing, logger: TestDatabase.logger,
            onListening: { log.listened() }, onNotification: { log.received($0) })
        listener.start()
        let stopping = BackgroundThread { listener.stop() }
        #expect(stopping.wait(timeout: .seconds(60)), "stop did not wait out the 600 s backoff")
        listener.stop()
        #expect(log.listening == 0)
    }
}

@Suite("PostgresNotifier: notifications sent after the commit, batched, from a connection of its own")
struct PostgresNotifierTests {
    private static let channel = "notifier_test"

    private static var fastTiming: PostgresListener.Timing {
        var timing = PostgresListener.Timing()
        timing.minimumBackoff = .milliseconds(20)
        timing.maximumBackoff = .milliseconds(200)
        return timing
    }

    /// A listener that splits each notification into the payloads packed into it.
    private func listener(_ database: TestDatabase, log: ListenerLog) -> PostgresListener {
        PostgresListener(
            configuration: database.configuration, channel: Self.channel, timing: Self.fastTiming, logger: TestDatabase.logger,
            onListening: { log.listened() },
            onNotification: { packed in
                for payload in packed.split(separator: "\n") { log.received(String(payload)) }
            })
    }

    /// Runs `body` with a database, a listener on it already listening, and a notifier not started.
    private func withListeningNotifier(
        minimumInterval: Duration = .milliseconds(5), _ body: (TestDatabase, ListenerLog, PostgresListener, PostgresNotifier) throws -> Void
    ) throws {
        try TestDatabase.with { database in
            let log = ListenerLog()
            let listener = listener(database, log: log)
            listener.start()
            defer { listener.stop() }
            #expect(eventually { log.listening == 1 })
            let notifier = PostgresNotifier(
                configuration: database.configuration, channel: Self.channel, timing: Self.fastTiming,
                minimumInterval: minimumInterval, logger: TestDatabase.logger)
            try body(database, log, listener, notifier)
        }
    }

    @Test("payloads are packed in order into as few notifications as fit 7,900 bytes; a longer one goes alone")
    func packing() {
        #expect(PostgresNotifier.packed(["a", "b", "c"], separator: "\n") == ["a\nb\nc"])
        #expect(PostgresNotifier.packed([], separator: "\n") == [])
        let big = String(repeating: "x", count: 4000)
        let packed = PostgresNotifier.packed([big, big, "y", String(repeating: "z", count: 9000)], separator: "\n")
        #expect(packed == [big, big + "\ny", String(repeating: "z", count: 9000)])
        #expect(packed.dropLast().allSatisfy { $0.utf8.count <= 7900 })
    }

    @Test("every payload queued reaches a listener; one queued twice before it is sent goes out once")
    func delivers() throws {
        try withListeningNotifier { database, log, listener, notifier in
            // Queued before the thread runs: both copies of "alice" make one notification.
            notifier.notify("alice")
            notifier.notify("alice")
            notifier.notify("bob")
            notifier.start()
            defer { notifier.stop() }
            #expect(eventually { Set(log.payloads) == ["alice", "bob"] })
            #expect(log.payloads.count == 2)
            for index in 0..<200 { notifier.notify("user-\(index)") }
            #expect(eventually { log.payloads.count == 202 })
            #expect(Set(log.payloads).count == 202)
            #expect(notifier.statistics.sent == 202 && notifier.statistics.failures == 0)
            #expect(listener.statistics.notifications < 202, "payloads queued together share a notification")
        }
    }

    @Test("a terminated notifier backend is replaced; what was queued while it was down is sent")
    func reconnects() throws {
        try withListeningNotifier { database, log, listener, notifier in
            notifier.start()
            defer { notifier.stop() }
            notifier.notify("before")
            #expect(eventually { log.payloads == ["before"] })
            let terminated = try database.pool.withConnection { connection in
                try connection.query(
                    """
                    SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) FROM pg_stat_activity
                    WHERE application_name = 'locify-notify' AND datname = current_database()
                    """
                ).first?.decode(0, as: Int.self) ?? 0
            }
            #expect(terminated == 1)
            notifier.notify("after")
            #expect(eventually { log.payloads == ["before", "after"] })
            #expect(notifier.statistics.failures >= 1 || notifier.statistics.sent == 2)
        }
    }

    @Test("stop sends what is still queued: the wake-ups of the last writes before a SIGTERM go out")
    func stopSendsTheLastBatch() throws {
        // Sends at most every 600 s: "last" waits in the queue when stop comes.
        try withListeningNotifier(minimumInterval: .seconds(600)) { database, log, listener, notifier in
            notifier.start()
            notifier.notify("first")
            #expect(eventually { log.payloads == ["first"] })
            notifier.notify("last")
            let stopping = BackgroundThread { notifier.stop() }
            #expect(stopping.wait(timeout: .seconds(60)), "stop waited out the 600 s interval")
            #expect(eventually { log.payloads == ["first", "last"] })
            #expect(notifier.statistics.sent == 2)
        }
    }

    @Test("a notifier whose connection went silent (half-open: what it sends is accepted, never answered) reconnects and sends")
    func reconnectsFromASilentConnection() throws {
        try TestDatabase.with { database in
            let host = database.configuration.value(of: "hostaddr") ?? database.configuration.value(of: "host") ?? "127.0.0.1"
            let proxy = try SilentProxy(
                toHost: host == "localhost" ? "127.0.0.1" : host, port: Int(database.configuration.value(of: "port") ?? "") ?? 5432)
            var configuration = database.configuration
            configuration.setValue(nil, for: "hostaddr")
            configuration.setValue("127.0.0.1", for: "host")
            configuration.setValue("\(proxy.port)", for: "port")
            var timing = Self.fastTiming
            timing.answerTimeout = .seconds(1)
            let log = ListenerLog()
            let listener = listener(database, log: log)
            listener.start()
            let notifier = PostgresNotifier(configuration: configuration, channel: Self.channel, timing: timing, logger: TestDatabase.logger)
            notifier.start()
            defer {
                // The relay first: a notifier stuck on a silent connection gets its end of stream.
                proxy.close()
                notifier.stop()
                listener.stop()
            }
            #expect(eventually { log.listening == 1 })
            notifier.notify("before")
            #expect(eventually { log.payloads == ["before"] })
            proxy.silenceOpenConnections()
            notifier.notify("during")
            #expect(eventually { log.payloads == ["before", "during"] }, "the notifier never gave up its silent connection")
            #expect(notifier.statistics.failures >= 1)
            #expect(proxy.accepted == 2, "one connection, then one more after the silence")
        }
    }
}
