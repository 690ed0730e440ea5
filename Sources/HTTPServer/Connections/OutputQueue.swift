import Glibc

/// The bytes waiting to be written to a connection: a list of buffers written with one
/// `sendmsg` (gathering several pipelined responses) and resumed after a partial write.
struct OutputQueue {
    private var chunks: [[UInt8]] = []
    /// Bytes of `chunks[0]` already written.
    private var offset = 0
    /// Bytes waiting.
    private(set) var count = 0
    /// Bytes written since the queue was made (how fast the client reads).
    private(set) var written = 0

    /// Most buffers gathered into one system call.
    private static let maxGather = 64

    var isEmpty: Bool { count == 0 }

    /// Queues `bytes` after what is already waiting.
    mutating func append(_ bytes: [UInt8]) {
        guard !bytes.isEmpty else { return }
        count += bytes.count
        chunks.append(bytes)
    }

    /// The outcome of a write attempt.
    enum WriteResult: Equatable {
        /// Everything was written.
        case drained
        /// The socket is full (EAGAIN); `progressed` tells whether any byte went out.
        case blocked(progressed: Bool)
        /// The peer is gone or the socket failed (EPIPE, ECONNRESET...).
        case failed(errno: Int32)
    }

    /// Writes as much as the socket takes without blocking. `MSG_NOSIGNAL`: a closed peer gives
    /// EPIPE, never SIGPIPE.
    mutating func write(to fd: Int32) -> WriteResult {
        var progressed = false
        while !chunks.isEmpty {
            let written: Int
            if chunks.count == 1 {
                written = chunks[0].withUnsafeBytes { bytes in
                    guard let base = bytes.baseAddress else { return 0 }
                    return send(fd, base + offset, bytes.count - offset, Int32(MSG_NOSIGNAL))
                }
            } else {
                written = gatherWrite(to: fd)
            }
            if written < 0 {
                let code = errno
                if code == EINTR { continue }
                if code == EAGAIN || code == EWOULDBLOCK { return .blocked(progressed: progressed) }
                return .failed(errno: code)
            }
            progressed = progressed || written > 0
            consume(written)
        }
        return .drained
    }

    /// Takes everything waiting, as one buffer (`InProcessHTTPServer`, which has no socket).
    mutating func takeAll() -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(count)
        for (index, chunk) in chunks.enumerated() { bytes += index == 0 ? chunk[offset...] : chunk[...] }
        removeAll()
        return bytes
    }

    /// Discards everything waiting.
    mutating func removeAll() {
        chunks.removeAll()
        offset = 0
        count = 0
    }

    private func gatherWrite(to fd: Int32) -> Int {
        let gathered = min(chunks.count, Self.maxGather)
        var vectors = [iovec](repeating: iovec(), count: gathered)
        // The chunk arrays stay alive (self is not mutated) while sendmsg reads their storage.
        return withBufferPointers(count: gathered) { pointers in
            for index in 0..<gathered {
                let start = index == 0 ? offset : 0
                let buffer = pointers[index]
                vectors[index] = iovec(
                    iov_base: UnsafeMutableRawPointer(mutating: buffer.baseAddress.map { $0 + start }),
                    iov_len: buffer.count - start)
            }
            return vectors.withUnsafeMutableBufferPointer { vectorBuffer in
                var message = msghdr()
                message.msg_iov = vectorBuffer.baseAddress
                message.msg_iovlen = vectorBuffer.count
                return sendmsg(fd, &message, Int32(MSG_NOSIGNAL))
            }
        }
    }

    /// Calls `body` with the raw buffers of the first `count` chunks, all pinned at once.
    private func withBufferPointers<Result>(
        count: Int, _ body: ([UnsafeRawBufferPointer]) -> Result
    ) -> Result {
        func pin(_ index: Int, _ collected: [UnsafeRawBufferPointer]) -> Result {
            if index == count { return body(collected) }
            return chunks[index].withUnsafeBytes { pin(index + 1, collected + [$0]) }
        }
        return pin(0, [])
    }

    private mutating func consume(_ written: Int) {
        var remaining = written
        count -= written
        self.written += written
        while remaining > 0, !chunks.isEmpty {
            let available = chunks[0].count - offset
            if remaining >= available {
                remaining -= available
                chunks.removeFirst()
                offset = 0
            } else {
                offset += remaining
                remaining = 0
            }
        }
        if chunks.isEmpty {
            offset = 0
            chunks.removeAll(keepingCapacity: true)
        }
    }
}
