import Foundation
import Glibc

/// Hostile-client tooling: `count` slow uploads kept going, from one thread. Upload `index`
/// connects from `source(index)`, sends `head(index)` (announcing a body) and then `trickleBytes`
/// of body every `trickleInterval`; once the server answers or closes, the outcome is counted and
/// the upload starts again `reconnectPause` later, as a determined attacker would.
public final class SlowUploadFlood: Sendable {
    private struct Outcome {
        var statuses: [Int: Int] = [:]
        var unanswered = 0
        var started = 0
        var connectFailures = 0
    }

    private let outcome = Locked(Outcome())
    private let stopRequested = Locked(false)
    private let thread: BackgroundThread<Void>

    /// Answers received, per status code.
    public var statuses: [Int: Int] { outcome.value.statuses }
    /// Uploads closed or reset by the server before a status line arrived.
    public var unanswered: Int { outcome.value.unanswered }
    /// Uploads started (connected and head sent), restarts included.
    public var started: Int { outcome.value.started }
    /// Connects that failed (the upload is retried after the pause).
    public var connectFailures: Int { outcome.value.connectFailures }

    /// Starts the uploads against `127.0.0.1:port`.
    public init(
        port: Int, count: Int, source: @escaping @Sendable (Int) -> String, head: @escaping @Sendable (Int) -> String,
        trickleBytes: Int = 1, trickleInterval: Duration = .seconds(2), reconnectPause: Duration = .seconds(1)
    ) {
        let outcome = self.outcome
        let stopRequested = self.stopRequested
        thread = BackgroundThread {
            Self.run(
                port: port, count: count, source: source, head: head, trickleBytes: trickleBytes,
                trickleInterval: trickleInterval, reconnectPause: reconnectPause, outcome: outcome, stopRequested: stopRequested)
        }
    }

    /// Stops the uploads and closes their connections.
    public func stop() {
        stopRequested.withLock { $0 = true }
        _ = try? thread.join(timeout: .seconds(120))
    }

    private struct Upload {
        var client: RawHTTPClient?
        var received: [UInt8] = []
        var nextTrickle = ContinuousClock.now
        var restartAt = ContinuousClock.now
    }

    private static func run(
        port: Int, count: Int, source: (Int) -> String, head: (Int) -> String, trickleBytes: Int, trickleInterval: Duration,
        reconnectPause: Duration, outcome: Locked<Outcome>, stopRequested: Locked<Bool>
    ) {
        var uploads = [Upload](repeating: Upload(), count: count)
        defer { for upload in uploads { upload.client?.close() } }
        let trickle = [UInt8](repeating: UInt8(ascii: "a"), count: trickleBytes)
        var buffer = [UInt8](repeating: 0, count: 4096)
        while !stopRequested.value {
            let now = ContinuousClock.now
            for index in uploads.indices {
                guard let client = uploads[index].client else {
                    guard now >= uploads[index].restartAt else { continue }
                    do {
                        let client = try RawHTTPClient(port: port, sourceHost: source(index))
                        try client.send(head(index))
                        _ = fcntl(client.fd, F_SETFL, fcntl(client.fd, F_GETFL) | O_NONBLOCK)
                        uploads[index] = Upload(client: client, nextTrickle: now + trickleInterval)
                        outcome.withLock { $0.started += 1 }
                    } catch {
                        uploads[index].restartAt = now + reconnectPause
                        outcome.withLock { $0.connectFailures += 1 }
                    }
                    continue
                }
                let received = buffer.withUnsafeMutableBytes { recv(client.fd, $0.baseAddress, $0.count, 0) }
                var status: Int?
                var ended = false
                if received > 0 {
                    uploads[index].received += buffer[0..<received]
                    status = SlowUploads.statusCode(uploads[index].received)
                } else if received == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
                    ended = true
                }
                if status != nil || ended {
                    outcome.withLock { outcome in
                        if let status { outcome.statuses[status, default: 0] += 1 } else { outcome.unanswered += 1 }
                    }
                    client.close()
                    uploads[index] = Upload(restartAt: now + reconnectPause)
                    continue
                }
                if now >= uploads[index].nextTrickle {
                    _ = trickle.withUnsafeBytes { send(client.fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                    uploads[index].nextTrickle = now + trickleInterval
                }
            }
            Thread.sleep(forTimeInterval: 0.05)
        }
    }
}
