import Foundation
import Glibc
import TestSupport

/// Many requests sent fast: each connection writes a batch of requests back to back (HTTP/1.1
/// pipelining) and then reads their responses, so tens of thousands of requests take seconds.
public enum PipelinedFlood {
    /// Sends `count` requests, `request(i)` making the i-th (a complete request head, keep-alive),
    /// over `connections` connections from `sourceHost` (default 127.0.0.1) in batches of `batch`,
    /// and returns every response in order of `i` within each connection (collected per connection).
    public static func send(
        port: Int, count: Int, connections: Int = 4, batch: Int = 50, sourceHost: String? = nil,
        request: @escaping @Sendable (Int) -> String
    ) throws -> [RawHTTPResponse] {
        let results = Locked<[[RawHTTPResponse]]>(Array(repeating: [], count: connections))
        try runOnThreads(connections) { lane in
            var client = try RawHTTPClient(port: port, sourceHost: sourceHost)
            var responses: [RawHTTPResponse] = []
            var index = lane
            while index < count {
                var indices: [Int] = []
                var bytes: [UInt8] = []
                while indices.count < batch && index < count {
                    indices.append(index)
                    bytes += Array(request(index).utf8)
                    index += connections
                }
                try client.send(bytes)
                for _ in indices {
                    let response = try client.readResponse(timeout: .seconds(30))
                    responses.append(response)
                    if response.headers["Connection"]?.lowercased() == "close" {
                        // The server closes after this response: the rest of the batch is lost.
                        throw RawHTTPClientError.closed(received: [])
                    }
                }
                if responses.count % 5_000 < batch {
                    client = try RawHTTPClient(port: port, sourceHost: sourceHost)  // fresh connection now and then
                }
            }
            results.withLock { $0[lane] = responses }
        }
        return results.withLock { $0.flatMap { $0 } }
    }
}

extension ServerProcess {
    /// The child's resident set size (`VmRSS` of /proc/<pid>/status), bytes; 0 when unreadable.
    public var residentBytes: Int { statusBytes("VmRSS") }

    /// The anonymous part of the child's resident set (`RssAnon`: heap and stacks, not mapped
    /// files), bytes; 0 when unreadable.
    public var anonymousResidentBytes: Int { statusBytes("RssAnon") }

    private func statusBytes(_ key: String) -> Int {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return 0 }
        for line in status.split(separator: "\n") where line.hasPrefix(key + ":") {
            let kilobytes = line.split(separator: " ").dropFirst().first.flatMap { Int($0) } ?? 0
            return kilobytes * 1024
        }
        return 0
    }
}
