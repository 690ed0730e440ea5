import Foundation
import Glibc
import Primitives

/// What became of a group of slow uploads: the status of each answered connection, and how many
/// ended without an answer (closed or reset before a status line arrived, or never finished).
public struct SlowUploadOutcome: Sendable {
    /// Answered connections per status code.
    public var statuses: [Int: Int] = [:]
    /// Connections closed or reset before a status line arrived.
    public var unanswered = 0
    /// Connections still uploading when the group was stopped or ran out of time.
    public var unfinished = 0

    /// No connection yet.
    public init() {}

    /// Adds another group's counts.
    public mutating func merge(_ other: SlowUploadOutcome) {
        statuses.merge(other.statuses, uniquingKeysWith: +)
        unanswered += other.unanswered
        unfinished += other.unfinished
    }
}

/// Hostile-client tooling: many connections that each announce a body and send it slowly, in
/// pieces, from one thread (non-blocking sockets, one piece per connection per round).
public enum SlowUploads {
    /// Opens `count` connections to `127.0.0.1:port` (`connectPause` apart), sends each
    /// `head(bodyBytes)` and then
    /// `bodyBytes` of body in `pieceBytes` pieces, one piece per connection per round with `pause`
    /// between rounds, until every connection is answered or closed, `shouldStop` returns true, or
    /// `timeout` passes. `connected` is called once every connection is open and has sent its
    /// header section. Blocking: run it on a `BackgroundThread`.
    public static func run(
        port: Int, count: Int, bodyBytes: Int, pieceBytes: Int = 16 * 1024, pause: Duration = .milliseconds(10),
        connectPause: Duration = .zero, timeout: Duration = .seconds(60), head: (Int) -> String,
        connected: () -> Void = {}, shouldStop: () -> Bool
    ) throws -> SlowUploadOutcome {
        struct Upload {
            let client: RawHTTPClient
            var sent = 0
            var received: [UInt8] = []
            var done = false
        }
        var uploads: [Upload] = []
        uploads.reserveCapacity(count)
        for _ in 0..<count {
            let client = try RawHTTPClient(port: port)
            try client.send(head(bodyBytes))
            _ = fcntl(client.fd, F_SETFL, fcntl(client.fd, F_GETFL) | O_NONBLOCK)
            uploads.append(Upload(client: client))
            if connectPause > .zero { Thread.sleep(forTimeInterval: Double(max(0, connectPause.milliseconds)) / 1000) }
        }
        connected()
        var outcome = SlowUploadOutcome()
        let piece = [UInt8](repeating: UInt8(ascii: "a"), count: pieceBytes)
        var readBuffer = [UInt8](repeating: 0, count: 4096)
        let deadline = ContinuousClock.now + timeout
        var live = count
        while live > 0 && !shouldStop() && ContinuousClock.now < deadline {
            for index in uploads.indices where !uploads[index].done {
                let fd = uploads[index].client.fd
                // An answer (or the end) first.
                let received = readBuffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
                if received > 0 {
                    uploads[index].received += readBuffer[0..<received]
                    if let status = statusCode(uploads[index].received) {
                        outcome.statuses[status, default: 0] += 1
                        uploads[index].done = true
                    }
                } else if received == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
                    outcome.unanswered += 1
                    uploads[index].done = true
                }
                if uploads[index].done {
                    uploads[index].client.close()
                    live -= 1
                    continue
                }
                let remaining = bodyBytes - uploads[index].sent
                guard remaining > 0 else { continue }
                let sent = piece.withUnsafeBytes { send(fd, $0.baseAddress, min(remaining, pieceBytes), Int32(MSG_NOSIGNAL)) }
                if sent > 0 {
                    uploads[index].sent += sent
                } else if sent < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR {
                    // Reset by the server: any answer is read on the next round.
                    uploads[index].sent = bodyBytes
                }
            }
            Thread.sleep(forTimeInterval: Double(max(0, pause.milliseconds)) / 1000)
        }
        outcome.unfinished = live
        for upload in uploads { upload.client.close() }
        return outcome
    }

    /// The status code once a whole status line has arrived.
    static func statusCode(_ bytes: [UInt8]) -> Int? {
        guard let end = bytes.firstIndex(of: 10) else { return nil }
        let line = String(decoding: bytes[0..<end], as: UTF8.self)
        let parts = line.split(separator: " ")
        guard parts.count >= 2 else { return nil }
        return Int(parts[1])
    }
}

/// The process's resident memory (the second field of /proc/self/statm times the page size).
public func residentMemoryBytes() -> Int {
    guard let statm = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
    let fields = statm.split(separator: " ")
    guard fields.count > 1, let pages = Int(fields[1]) else { return 0 }
    return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
}

/// Raises the soft open-file limit to at least `wanted` when the hard limit allows; returns the
/// soft limit in force afterwards.
@discardableResult
public func raiseOpenFileLimit(to wanted: Int) -> Int {
    var limit = rlimit()
    guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return 0 }
    if limit.rlim_cur < rlim_t(wanted) {
        limit.rlim_cur = min(rlim_t(wanted), limit.rlim_max)
        _ = setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        _ = getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
    }
    return Int(clamping: limit.rlim_cur)
}
