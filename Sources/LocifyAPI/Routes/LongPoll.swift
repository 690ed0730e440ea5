import ChangeNotifications
import HTTPServer
import Locify

/// The long-poll of the change feed (`GET /v1/sync/changes?wait=`, openapi.yaml): a pull that
/// finds nothing after its cursor is held, with no thread and no database connection, until a
/// change of its user commits (through any instance: `LiveChanges`) or the wait ends; then it is
/// answered exactly as a pull at that moment. A wait that ends without a change answers what the
/// last read found: no changes and a cursor that continues from the same position.
///
/// The waiter is registered before the first read, so a change that commits between that read
/// and the hold still wakes it; a wake that finds nothing new (its change was already read) waits
/// again until the first deadline.
struct LongPoll: Sendable {
    let changes: LiveChanges
    /// The longest wait granted, seconds (`LOCIFY_MAX_WAIT_SECONDS`, `max_wait_seconds` of
    /// `/v1/info`); a longer `wait` is shortened to it.
    let maxWaitSeconds: Int

    /// `read`s the feed, waiting up to `seconds` for `userID`'s next change when it has nothing.
    /// Throws 429 S001 when the user already has the most waits allowed.
    func pull(
        userID: String, seconds: Int, read: @escaping @Sendable () throws -> FeedPage,
        render: @escaping @Sendable (FeedPage) -> HTTPResponse
    ) throws -> RouteAnswer {
        let changes = self.changes
        let waiter = HTTPWaiter { waiter in changes.remove(waiter, for: userID) }
        guard changes.add(waiter, for: userID) else { throw APIError.tooManyWaits }
        let timeout = Duration.seconds(min(seconds, maxWaitSeconds))
        do {
            return Self.answer(try read(), waiter: waiter, timeout: timeout, read: read, render: render)
        } catch {
            waiter.end()
            throw error
        }
    }

    /// The page when it holds anything, else a wait whose recheck reads again.
    private static func answer(
        _ page: FeedPage, waiter: HTTPWaiter, timeout: Duration, read: @escaping @Sendable () throws -> FeedPage,
        render: @escaping @Sendable (FeedPage) -> HTTPResponse
    ) -> RouteAnswer {
        guard page.changes.isEmpty && !page.hasMore else {
            waiter.end()
            return .response(render(page))
        }
        return .wait(
            RouteWait(
                waiter: waiter, timeout: timeout, expire: render(page),
                recheck: { answer(try read(), waiter: waiter, timeout: timeout, read: read, render: render) }))
    }
}

extension HTTPWaiter: ChangeWaiter {}
