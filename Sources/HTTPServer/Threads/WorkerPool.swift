import Dispatch
import FoundationEssentials
import Glibc
import Primitives

/// The bounded pool of dedicated threads that run `.worker` handlers, pulling from one FIFO queue
/// (a mutex-protected queue plus a semaphore counting queued jobs). Never Dispatch's global pool.
final class WorkerPool: Sendable {
    /// A request to answer (or a head whose body to decide about) and the connection (now owned
    /// by the job) it came from.
    struct Job: Sendable {
        /// What the worker does with the request.
        enum Purpose: Sendable, Equatable {
            /// Run the handler and queue its response.
            case respond
            /// Ask the application about the body of this head, allowed to block
            /// (`HTTPResponder.admitBody` with `mayBlock`).
            case decideAboutBody
        }

        let connection: Connection
        let request: HTTPRequest
        let loop: EventLoop
        var purpose: Purpose = .respond
        /// The held request's wait whose `recheck` this job runs (a wake); nil: a new request.
        var recheck: HTTPWait? = nil
    }

    private struct Queue {
        var jobs: [Job] = []
        var head = 0
        var stopped = false

        mutating func pop() -> Job? {
            guard head < jobs.count else { return nil }
            let job = jobs[head]
            head += 1
            if head == jobs.count {
                jobs.removeAll(keepingCapacity: true)
                head = 0
            } else if head >= 1024 && head * 2 >= jobs.count {
                jobs.removeFirst(head)
                head = 0
            }
            return job
        }
    }

    private let queue = HandoffLock(Queue())
    private let available = DispatchSemaphore(value: 0)
    private let context: ServerContext
    private let threadCount: Int

    init(context: ServerContext, threads: Int) {
        self.context = context
        self.threadCount = threads
    }

    /// Starts the worker threads.
    func start() {
        for index in 0..<threadCount {
            DedicatedThread.startOrStop(name: "http-worker-\(index)", stackSize: 1 << 20) { [self] in self.runWorker() }
        }
    }

    /// What became of a submitted job.
    enum Submission {
        /// Queued: the pool owns the connection now.
        case accepted
        /// `maxQueuedRequests` jobs already wait; the caller still owns the connection.
        case full
        /// The pool has stopped; the caller still owns the connection.
        case stopped
    }

    /// Queues a job; a free worker picks it up in arrival order. Refused when the pool has
    /// stopped or the queue is full.
    func submit(_ job: Job) -> Submission {
        let limit = context.configuration.maxQueuedRequests
        let outcome = queue.withLock { queue -> Submission in
            guard !queue.stopped else { return .stopped }
            guard queue.jobs.count - queue.head < limit else { return .full }
            queue.jobs.append(job)
            return .accepted
        }
        guard case .accepted = outcome else { return outcome }
        context.counters.queuedRequests.add(1, ordering: .relaxed)
        available.signal()
        return .accepted
    }

    /// Stops the workers once their current handler returns; queued jobs are dropped and their
    /// connections closed.
    func stop() {
        let dropped = queue.withLock { queue -> [Job] in
            queue.stopped = true
            var dropped: [Job] = []
            while let job = queue.pop() { dropped.append(job) }
            return dropped
        }
        for job in dropped {
            context.counters.queuedRequests.subtract(1, ordering: .relaxed)
            job.recheck?.waiter.end()
            closeOrphan(job.connection)
        }
        for _ in 0..<threadCount { available.signal() }
    }

    private func runWorker() {
        while true {
            available.wait()
            let next = queue.withLock { queue -> (job: Job?, stopped: Bool) in
                (queue.stopped ? nil : queue.pop(), queue.stopped)
            }
            guard let job = next.job else {
                if next.stopped { return }
                continue
            }
            context.counters.queuedRequests.subtract(1, ordering: .relaxed)
            run(job)
        }
    }

    private func run(_ job: Job) {
        let connection = job.connection
        switch job.purpose {
        case .respond:
            let answer = job.recheck?.recheck() ?? context.responder.answer(to: job.request, connection: connection.info)
            switch answer {
            case .response(let response):
                job.recheck?.waiter.end()
                connection.queueResponse(response, to: job.request, context: context)
                // Try the write here, saving the loop a wake-up; the loop finishes partial writes
                // and closes on failure.
                _ = connection.output.write(to: connection.fd)
                connection.settleBufferedBytes(context: context)
            case .wait(let wait):
                if let previous = job.recheck?.waiter, previous !== wait.waiter { previous.end() }
                connection.releaseBodyBudget(context: context)
                connection.arrivingWait = HeldRequest(answering: job.request, wait: wait)
            }
        case .decideAboutBody:
            connection.decideAboutBody(of: job.request, context: context)
        }
        if !job.loop.handBack(connection) {
            closeOrphan(connection)
        }
    }

    /// Closes a connection whose loop is gone (or whose job was dropped at stop).
    private func closeOrphan(_ connection: Connection) {
        connection.arrivingWait?.wait.waiter.end()
        connection.closeSocket(context: context)
    }
}
