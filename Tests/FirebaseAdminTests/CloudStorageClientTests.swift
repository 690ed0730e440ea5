import FirebaseAdmin
import Foundation
import HTTPClient
import JSON
import Synchronization
import Testing
import TestSupport

/// Wraps a transport and records the highest number of requests in flight at once.
final class ConcurrencyProbe: HTTPTransport {
    private let inner: any HTTPTransport
    private let counts = Mutex((current: 0, peak: 0))

    init(_ inner: any HTTPTransport) {
        self.inner = inner
    }

    var peak: Int { counts.withLock { $0.peak } }

    func send(_ request: TransportRequest) throws -> TransportResponse {
        counts.withLock { counts in
            counts.current += 1
            counts.peak = max(counts.peak, counts.current)
        }
        defer { counts.withLock { $0.current -= 1 } }
        usleep(2_000)
        return try inner.send(request)
    }
}

@Suite("CloudStorageClient")
struct CloudStorageClientTests {
    static let bucket = "locify-test.appspot.com"

    private func client(_ bed: FirebaseTestBed, transport: (any HTTPTransport)? = nil) throws -> CloudStorageClient {
        let tokens = try ServiceAccountTokenProvider(
            account: TestServiceAccount.account(), transport: bed.transport, clock: bed.clock.wallClock, logger: bed.logs.logger())
        return CloudStorageClient(transport: transport ?? bed.transport, tokens: tokens)
    }

    private func failure(_ body: () throws(GoogleAPIError) -> Void) -> GoogleAPIError? {
        do throws(GoogleAPIError) {
            try body()
            return nil
        } catch {
            return error
        }
    }

    @Test("lists every object under a prefix, following nextPageToken")
    func listsWithPaging() throws {
        let bed = FirebaseTestBed()
        let inside = (1...5).map { "locations/uid-1/loc-\($0)/photo.jpg" }
        bed.fake.addObjects(inside + ["locations/uid-10/x.jpg", "locations/uid-1", "categories/uid-1/a.png"], bucket: Self.bucket)
        bed.fake.listPageSize = 2
        let names = try client(bed).listObjects(bucket: Self.bucket, prefix: "locations/uid-1/")
        #expect(names == inside)
        #expect(bed.fake.requestCount(.storageList) == 3)
        let queries = bed.fake.requests.filter { $0.endpoint == .storageList }.map(\.query)
        #expect(
            queries == [
                "prefix=locations%2Fuid-1%2F", "prefix=locations%2Fuid-1%2F&pageToken=page-2", "prefix=locations%2Fuid-1%2F&pageToken=page-4",
            ])
        #expect(bed.fake.requests.filter { $0.endpoint == .storageList }.allSatisfy { $0.header("Authorization") == "Bearer fake-access-token-1" })
    }

    @Test("an empty folder lists nothing and deletes nothing")
    func emptyFolder() throws {
        let bed = FirebaseTestBed()
        #expect(try client(bed).listObjects(bucket: Self.bucket, prefix: "locations/nobody/") == [])
        #expect(try client(bed).deleteFolder(bucket: Self.bucket, prefix: "locations/nobody/") == 0)
    }

    @Test("deleting a folder deletes exactly the listed objects, at most ten at once")
    func deleteFolder() throws {
        let bed = FirebaseTestBed()
        let inside = (0..<25).map { "locations/uid-1/loc-\($0 % 5)/image \($0).jpg" }
        let outside = ["locations/uid-10/a.jpg", "locations/uid-2/b.jpg", "categories/uid-1/c.png"]
        bed.fake.addObjects(inside + outside, bucket: Self.bucket)
        bed.fake.addObjects(["locations/uid-1/other-bucket.jpg"], bucket: "another-bucket")
        bed.fake.listPageSize = 7
        let probe = ConcurrencyProbe(bed.transport)
        let deleted = try client(bed, transport: probe).deleteFolder(bucket: Self.bucket, prefix: "locations/uid-1/")
        #expect(deleted == 25)
        #expect(Set(bed.fake.deletions.map(\.name)) == Set(inside))
        #expect(bed.fake.deletions.count == 25)
        #expect(bed.fake.objects(bucket: Self.bucket) == outside.sorted())
        #expect(bed.fake.objects(bucket: "another-bucket") == ["locations/uid-1/other-bucket.jpg"])
        #expect(probe.peak <= 10)
    }

    /// Answers object lists with the page tokens of `tokens` in turn (nil: the last page), each
    /// page one object; counts the lists, and answers 500 after 20,000 of them so that a client
    /// that never stops still ends.
    final class PageTokenTransport: HTTPTransport {
        let tokens: @Sendable (Int) -> String?
        private let lists = Mutex(0)

        init(tokens: @escaping @Sendable (Int) -> String?) {
            self.tokens = tokens
        }

        var listCount: Int { lists.withLock { $0 } }

        func send(_ request: TransportRequest) throws -> TransportResponse {
            let page = lists.withLock { count in
                count += 1
                return count
            }
            guard page <= 20_000 else { return TransportResponse(status: 500) }
            var members: [(String, JSONValue)] = [("items", .array([.object(["name": .string("locations/u/\(page).jpg")])]))]
            if let token = tokens(page) { members.append(("nextPageToken", .string(token))) }
            return TransportResponse(status: 200, headers: [("Content-Type", "application/json")], body: JSONWriter.encode(.object(JSONObject(members))))
        }
    }

    @Test("a listing whose page tokens cycle (alternating A, B, A, ...) ends with a retryable error after three pages")
    func alternatingPageTokens() {
        let transport = PageTokenTransport { page in page % 2 == 1 ? "A" : "B" }
        let client = CloudStorageClient(transport: transport, tokens: nil)
        let error = failure { () throws(GoogleAPIError) in _ = try client.listObjects(bucket: Self.bucket, prefix: "locations/u/") }
        #expect(error?.retryable == true && error?.message.contains("repeated a page token") == true, "\(String(describing: error))")
        #expect(transport.listCount == 3)
    }

    @Test("a listing stops after CloudStorageClient.maximumListPages pages of ever new tokens")
    func boundedPages() throws {
        #expect(CloudStorageClient.maximumListPages == 10_000)
        let transport = PageTokenTransport { page in "token-\(page)" }
        let client = CloudStorageClient(transport: transport, tokens: nil)
        let error = failure { () throws(GoogleAPIError) in _ = try client.listObjects(bucket: Self.bucket, prefix: "locations/u/") }
        #expect(error?.retryable == true && error?.message.contains("10000 pages") == true, "\(String(describing: error))")
        #expect(transport.listCount == 10_000)
        let finite = PageTokenTransport { page in page < 5 ? "token-\(page)" : nil }
        #expect(try CloudStorageClient(transport: finite, tokens: nil).listObjects(bucket: Self.bucket, prefix: "locations/u/").count == 5)
    }

    @Test("a delete of an object that is already gone (404) succeeds")
    func deleteMissing() throws {
        let bed = FirebaseTestBed()
        try client(bed).deleteObject(bucket: Self.bucket, name: "locations/uid-1/gone.jpg")
        #expect(bed.fake.requests.last?.endpoint == .storageDelete)
    }

    @Test("object names with spaces, Unicode, reserved characters and slashes are encoded as one segment")
    func encodesNameAsOneSegment() throws {
        let bed = FirebaseTestBed()
        let name = "locations/uid 1/Zürich ☕/a?b#c%d+e&f.jpg"
        bed.fake.addObjects([name], bucket: Self.bucket)
        try client(bed).deleteObject(bucket: Self.bucket, name: name)
        #expect(bed.fake.deletions == [FakeGoogle.Deletion(bucket: Self.bucket, name: name)])
        let path = try #require(bed.fake.requests.last?.path)
        #expect(path == "/storage/v1/b/locify-test.appspot.com/o/locations%2Fuid%201%2FZ%C3%BCrich%20%E2%98%95%2Fa%3Fb%23c%25d%2Be%26f.jpg")
        #expect(bed.fake.requests.last?.query == "")
    }

    @Test("503 and 429 are retryable and carry Retry-After; other 4xx are not")
    func classification() throws {
        let bed = FirebaseTestBed()
        let client = try client(bed)
        bed.fake.failNext(.storageDelete, status: 429, retryAfter: "7")
        let throttled = failure { () throws(GoogleAPIError) in try client.deleteObject(bucket: Self.bucket, name: "a") }
        #expect(throttled?.status == 429)
        #expect(throttled?.retryable == true)
        #expect(throttled?.retryAfter == 7)

        bed.fake.failNext(.storageList, status: 503)
        let unavailable = failure { () throws(GoogleAPIError) in _ = try client.listObjects(bucket: Self.bucket, prefix: "p/") }
        #expect(unavailable?.status == 503)
        #expect(unavailable?.retryable == true)
        #expect(unavailable?.retryAfter == nil)

        for status in [408, 500, 502, 504] {
            bed.fake.failNext(.storageDelete, status: status)
            #expect(failure { () throws(GoogleAPIError) in try client.deleteObject(bucket: Self.bucket, name: "a") }?.retryable == true)
        }
        for status in [400, 401, 403, 409] {
            bed.fake.failNext(.storageDelete, status: status)
            let refused = failure { () throws(GoogleAPIError) in try client.deleteObject(bucket: Self.bucket, name: "a") }
            #expect(refused?.status == status)
            #expect(refused?.retryable == false)
        }
        bed.fake.dropNextConnections()
        let network = failure { () throws(GoogleAPIError) in try client.deleteObject(bucket: Self.bucket, name: "a") }
        #expect(network?.status == nil)
        #expect(network?.retryable == true)
    }

    @Test("one attempt per call: a failed delete is not retried by the client")
    func oneAttempt() throws {
        let bed = FirebaseTestBed()
        bed.fake.failNext(.storageDelete, status: 503)
        let storage = try client(bed)
        #expect(failure { () throws(GoogleAPIError) in try storage.deleteObject(bucket: Self.bucket, name: "a") } != nil)
        #expect(bed.fake.requestCount(.storageDelete) == 1)
    }

    @Test("a folder delete that hits a failure reports it and leaves the rest for the next attempt")
    func folderFailure() throws {
        let bed = FirebaseTestBed()
        bed.fake.addObjects((0..<30).map { "categories/uid-1/cat/\($0).png" }, bucket: Self.bucket)
        bed.fake.listPageSize = 100
        bed.fake.failNext(.storageDelete, status: 503, retryAfter: "3")
        let storage = try client(bed)
        let error = failure { () throws(GoogleAPIError) in _ = try storage.deleteFolder(bucket: Self.bucket, prefix: "categories/uid-1/") }
        #expect(error?.retryable == true)
        #expect(error?.retryAfter == 3)
        let remaining = bed.fake.objects(bucket: Self.bucket).count
        #expect(remaining == 30 - bed.fake.deletions.count)
        #expect(try client(bed).deleteFolder(bucket: Self.bucket, prefix: "categories/uid-1/") == remaining)
        #expect(bed.fake.objects(bucket: Self.bucket).isEmpty)
    }

    @Test("an access-token failure is retryable and sends nothing to Storage")
    func tokenFailure() throws {
        let bed = FirebaseTestBed()
        bed.fake.failNext(.token, status: 400)
        let storage = try client(bed)
        let error = failure { () throws(GoogleAPIError) in try storage.deleteObject(bucket: Self.bucket, name: "a") }
        #expect(error?.retryable == true)
        #expect(bed.fake.requestCount(.storageDelete) == 0)
    }

    @Test("the emulator client uses plain HTTP on the emulator host and no Authorization")
    func emulator() throws {
        let bed = FirebaseTestBed()
        bed.fake.storageRequiresAuth = false
        bed.fake.addObjects(["locations/u/a.jpg"], bucket: Self.bucket)
        let client = CloudStorageClient.emulator(host: "127.0.0.1:9199", transport: bed.transport)
        #expect(try client.deleteFolder(bucket: Self.bucket, prefix: "locations/u/") == 1)
        #expect(
            bed.fake.transportURLs == [
                "http://127.0.0.1:9199/storage/v1/b/locify-test.appspot.com/o?prefix=locations%2Fu%2F",
                "http://127.0.0.1:9199/storage/v1/b/locify-test.appspot.com/o/locations%2Fu%2Fa.jpg",
            ])
        #expect(bed.fake.requests.allSatisfy { $0.header("Authorization") == nil })
    }

    @Test("the base URL is configurable")
    func baseURL() throws {
        let bed = FirebaseTestBed()
        let client = CloudStorageClient(baseURL: "https://storage.example.test/", transport: bed.transport, tokens: StaticAccessToken("t"))
        bed.fake.storageRequiresAuth = false
        try client.deleteObject(bucket: "b", name: "n")
        #expect(bed.fake.transportURLs == ["https://storage.example.test/storage/v1/b/b/o/n"])
        #expect(bed.fake.requests.last?.header("Authorization") == "Bearer t")
    }

    @Test("an object Google refuses for good does not stop the others; the folder then fails with that permanent error")
    func permanentFailureDoesNotStopFolder() throws {
        let bed = FirebaseTestBed()
        bed.fake.listPageSize = 10
        bed.fake.addObjects(["u/a.jpg", "u/b.jpg", "u/c.jpg", "u/d.jpg"], bucket: "b")
        bed.fake.refuseDeletion(of: "u/b.jpg", status: 400)
        var oneAtATime = try client(bed)
        oneAtATime.maxConcurrentDeletes = 1
        let storage = oneAtATime
        let error = failure { () throws(GoogleAPIError) in _ = try storage.deleteFolder(bucket: "b", prefix: "u/") }
        #expect(error?.status == 400 && error?.isPermanent == true)
        #expect(bed.fake.objects(bucket: "b") == ["u/b.jpg"])
    }

    @Test("a retryable failure stops the folder run (the rest waits for the next attempt)")
    func retryableFailureStopsFolder() throws {
        let bed = FirebaseTestBed()
        bed.fake.listPageSize = 10
        bed.fake.addObjects(["u/a.jpg", "u/b.jpg", "u/c.jpg"], bucket: "b")
        bed.fake.failNext(.storageDelete, status: 503)
        var oneAtATime = try client(bed)
        oneAtATime.maxConcurrentDeletes = 1
        let storage = oneAtATime
        let error = failure { () throws(GoogleAPIError) in _ = try storage.deleteFolder(bucket: "b", prefix: "u/") }
        #expect(error?.status == 503 && error?.isPermanent == false)
        #expect(bed.fake.objects(bucket: "b") == ["u/a.jpg", "u/b.jpg", "u/c.jpg"])
    }
}
