import Foundation
import LocifyRules

/// Uploads a photo taken offline to lasting storage and returns the URL the server will keep. The
/// app implements it with Firebase Storage: `putFile` into the user's folder
/// (`locations/<uid>/<location id>/<file name>`: named after the file, so that an upload retried
/// after a lost answer or a relaunch replaces the same object), then `downloadURL()`.
///
/// ```swift
/// struct StorageUploader: ImageUploader {
///     func upload(_ file: URL, locationID: UUID) async throws -> URL {
///         let uid = Auth.auth().currentUser!.uid
///         let object = Storage.storage().reference()
///             .child("locations/\(uid)/\(locationID.uuidString.lowercased())/\(file.lastPathComponent)")
///         _ = try await object.putFileAsync(from: file)
///         return try await object.downloadURL()
///     }
/// }
/// ```
public protocol ImageUploader: Sendable {
    /// Uploads `file` (a `file://` URL the app saved the photo at) of location `locationID` and
    /// returns its https download URL. Throwing (or not answering within the timeout) leaves the
    /// photo queued for another attempt.
    func upload(_ file: URL, locationID: UUID) async throws -> URL
}

/// How a ``SyncEngine`` uploads the photos of places edited offline (``SyncEngine/setImageUploader(_:settings:)``).
public struct ImageUploadSettings: Sendable {
    /// Uploads running at once (default 2).
    public var maxConcurrentUploads = 2
    /// Attempts per photo within one sync (default 3); a photo still not uploaded waits for the
    /// next sync, its place's change queued meanwhile.
    public var attemptsPerSync = 3
    /// The ceiling of the pause after a first failure (default 1 s); it doubles with each further
    /// failure of the same photo, up to ``maximumBackoff``, and the pause is drawn below it.
    public var initialBackoff: Duration = .seconds(1)
    /// The highest ceiling of a pause (default 30 s).
    public var maximumBackoff: Duration = .seconds(30)
    /// How long one upload may take before it counts as failed (default 120 s). An uploader that
    /// never answers is left behind, never waited for.
    public var timeout: Duration = .seconds(120)
    /// How the engine pauses between attempts; it throws when the task is cancelled.
    public var sleep: @Sendable (Duration) async throws -> Void = { try await Task.sleep(for: $0) }
    /// A random fraction in 0...1 for the jitter.
    public var random: @Sendable () -> Double = { Double.random(in: 0...1) }

    /// The default settings.
    public init() {}
}

/// The photo URLs of a place that are still files on the device (`file://`), not yet uploaded.
enum LocalImage {
    /// Whether `url` names a file on this device.
    static func isLocal(_ url: String) -> Bool {
        url.utf8.count >= 5 && url.prefix(5).lowercased() == "file:"
    }

    /// The file `url` names, when it is a well-formed `file://` URL with a path.
    static func fileURL(_ url: String) -> URL? {
        guard isLocal(url), let parsed = URL(string: url), parsed.isFileURL, !parsed.path.isEmpty else { return nil }
        return parsed
    }

    /// `urls` with each local file replaced by a stand-in https URL (the same file, the same
    /// stand-in), so that the server's rule checks the count and the duplicates of them all.
    static func standIns(_ urls: [String]) -> [String] {
        var numbers: [String: Int] = [:]
        return urls.map { url in
            guard isLocal(url) else { return url }
            let number = numbers[url] ?? numbers.count
            numbers[url] = number
            return "https://local-file.invalid/\(number)"
        }
    }
}

/// One photo to upload: the place and the file URL as the change holds it.
struct PendingImage: Hashable, Sendable {
    let locationID: UUID
    let url: String
}

extension OutboxState {
    /// Every photo still to upload, once each, in the order the changes were made.
    var pendingImages: [PendingImage] {
        var seen = Set<PendingImage>()
        var pending: [PendingImage] = []
        for entry in idsHoldingLocalImages.sorted().compactMap({ entries[$0] }) {
            for url in entry.change.localImageURLs {
                let image = PendingImage(locationID: entry.change.recordID, url: url)
                if seen.insert(image).inserted { pending.append(image) }
            }
        }
        return pending
    }
}

extension PushChange {
    /// The `file://` URLs of a location write.
    var localImageURLs: [String] {
        switch self {
        case .createLocation(let write), .updateLocation(let write): write.imageURLs.filter(LocalImage.isLocal)
        default: []
        }
    }

    /// This change with photo `local` replaced by `remote` (or removed, when nil or already there).
    func replacingImage(_ local: String, with remote: String?) -> PushChange {
        switch self {
        case .createLocation(var write):
            write.imageURLs = write.imageURLs.replacing(local, with: remote)
            return .createLocation(write)
        case .updateLocation(var write):
            write.imageURLs = write.imageURLs.replacing(local, with: remote)
            return .updateLocation(write)
        default:
            return self
        }
    }
}

extension [String] {
    /// These URLs with `old` replaced by `new` in place, or removed when `new` is nil or already
    /// among them (no duplicates: the server refuses them).
    func replacing(_ old: String, with new: String?) -> [String] {
        guard let new, !contains(new) else { return filter { $0 != old } }
        return map { $0 == old ? new : $0 }
    }
}

extension StoreTransaction {
    /// Puts `remote` (the uploaded photo's URL; nil: the photo is gone) in place of `local` in
    /// place `id`'s pending changes and in its local copy.
    mutating func replaceImage(ofLocation id: UUID, _ local: String, with remote: String?) throws {
        for var entry in outbox.entries(of: RecordKey(kind: .location, id: id)) where entry.change.localImageURLs.contains(local) {
            entry.change = entry.change.replacingImage(local, with: remote)
            putOutbox(entry)
        }
        if var location = try location(id), location.imageURLs.contains(local) {
            location.imageURLs = location.imageURLs.replacing(local, with: remote)
            upsert(location)
        }
    }
}

/// The outcome of one photo's upload.
enum ImageUploadOutcome: Sendable {
    /// Uploaded: the URL to keep.
    case uploaded(String)
    /// The file is gone from the device: the photo cannot be uploaded, ever.
    case fileMissing
    /// Every attempt of this sync failed (the last error); it is tried again at the next sync.
    case failed(LocifyError)
}

extension SyncEngine {
    /// The photos of places edited offline that wait for their upload (each place's change waits
    /// with them).
    public func pendingImageUploads() async throws -> Int {
        try loaded().outbox.pendingImages.count
    }

    /// Uploads every pending photo (at most ``ImageUploadSettings/maxConcurrentUploads`` at once)
    /// and puts each download URL in place of its file in the queued change and the local copy,
    /// one commit per photo; the uploaded file is then removed. A photo whose attempts all fail
    /// stays queued; a photo whose file is gone is dropped from its place and reported.
    func uploadLocalImages(report: inout SyncReport) async throws {
        guard let (uploader, settings) = imageUploads else { return }
        var queue = try loaded().outbox.pendingImages[...]
        guard !queue.isEmpty else { return }
        try await withThrowingTaskGroup(of: (PendingImage, ImageUploadOutcome).self) { group in
            func startNext() {
                guard let image = queue.popFirst() else { return }
                group.addTask { (image, await Self.upload(image, with: uploader, settings)) }
            }
            for _ in 0..<max(settings.maxConcurrentUploads, 1) { startNext() }
            while let (image, outcome) = try await group.next() {
                try settle(image, outcome, report: &report)
                startNext()
            }
        }
        if Task.isCancelled { throw LocifyError.cancelled }
    }

    /// Takes in one photo's outcome.
    private func settle(_ image: PendingImage, _ outcome: ImageUploadOutcome, report: inout SyncReport) throws {
        switch outcome {
        case .uploaded(let remote):
            var transaction = try begin()
            try transaction.replaceImage(ofLocation: image.locationID, image.url, with: remote)
            try commit(&transaction)
            report.imagesUploaded += 1
            if let file = LocalImage.fileURL(image.url) { try? FileManager.default.removeItem(at: file) }
        case .fileMissing:
            var transaction = try begin()
            try transaction.replaceImage(ofLocation: image.locationID, image.url, with: nil)
            transaction.events.append(.imageMissing(locationID: image.locationID, url: image.url))
            try commit(&transaction)
        case .failed(.cancelled):
            return
        case .failed(let error):
            report.imageUploadsFailed += 1
            emit(.imageUploadFailed(locationID: image.locationID, url: image.url, error))
        }
    }

    /// One photo's attempts within a sync, with backoff between them.
    private static func upload(
        _ image: PendingImage, with uploader: any ImageUploader, _ settings: ImageUploadSettings
    ) async -> ImageUploadOutcome {
        guard let file = LocalImage.fileURL(image.url), FileManager.default.fileExists(atPath: file.path) else {
            return .fileMissing
        }
        var backoff = LiveBackoff()
        var lastError = LocifyError.cancelled
        for attempt in 1...max(settings.attemptsPerSync, 1) {
            if Task.isCancelled { return .failed(.cancelled) }
            do {
                let remote = try await withDeadline(settings.timeout) { try await uploader.upload(file, locationID: image.locationID) }
                let text = remote.absoluteString
                _ = try checked { () throws(RuleViolation) in try LocationRules.imageURLs([text]) }
                return .uploaded(text)
            } catch {
                lastError =
                    error is CancellationError
                    ? .cancelled
                    : error as? LocifyError ?? .network(NetworkFailure(code: (error as? URLError)?.code, message: String(describing: error)))
            }
            guard attempt < settings.attemptsPerSync else { break }
            let pause = backoff.pause(retryAfter: nil, initial: settings.initialBackoff, maximum: settings.maximumBackoff, random: settings.random)
            do { try await settings.sleep(pause) } catch { return .failed(.cancelled) }
        }
        return .failed(lastError)
    }

    /// Removes the photo files a place's edit or delete dropped before they were uploaded.
    func discardLocalFiles(of old: Location?, keeping kept: [String]) {
        for url in old?.imageURLs ?? [] where LocalImage.isLocal(url) && !kept.contains(url) {
            if let file = LocalImage.fileURL(url) { try? FileManager.default.removeItem(at: file) }
        }
    }
}

/// `body`'s result, or ``DeadlineExceeded`` once `timeout` has passed: the body is then cancelled
/// and left behind (an uploader that ignores cancellation is never waited for).
func withDeadline<Result: Sendable>(
    _ timeout: Duration, _ body: @escaping @Sendable () async throws -> Result
) async throws -> Result {
    let race = DeadlineRace<Result>()
    return try await withTaskCancellationHandler {
        try await withCheckedThrowingContinuation { continuation in
            race.start(continuation)
            let work = Task {
                do {
                    race.finish(with: .success(try await body()))
                } catch {
                    race.finish(with: .failure(error))
                }
            }
            let timer = Task {
                try? await Task.sleep(for: timeout)
                race.finish(with: .failure(DeadlineExceeded(timeout: timeout)))
            }
            race.onFinish {
                work.cancel()
                timer.cancel()
            }
        }
    } onCancel: {
        race.finish(with: .failure(CancellationError()))
    }
}

/// A call that did not answer in time.
struct DeadlineExceeded: Error, CustomStringConvertible {
    let timeout: Duration
    var description: String { "no answer within \(timeout)" }
}

/// The first of a body, a timer and a cancellation to finish resumes the waiting caller, once.
private final class DeadlineRace<Result: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var continuation: CheckedContinuation<Result, any Error>?
    private var outcome: Swift.Result<Result, any Error>?
    private var cleanup: (@Sendable () -> Void)?

    func start(_ continuation: CheckedContinuation<Result, any Error>) {
        lock.lock()
        if let outcome {
            lock.unlock()
            continuation.resume(with: outcome)
            return
        }
        self.continuation = continuation
        lock.unlock()
    }

    func onFinish(_ cleanup: @escaping @Sendable () -> Void) {
        lock.lock()
        if outcome != nil {
            lock.unlock()
            cleanup()
            return
        }
        self.cleanup = cleanup
        lock.unlock()
    }

    func finish(with result: Swift.Result<Result, any Error>) {
        lock.lock()
        guard outcome == nil else {
            lock.unlock()
            return
        }
        outcome = result
        let waiting = continuation
        continuation = nil
        let cleanup = self.cleanup
        self.cleanup = nil
        lock.unlock()
        waiting?.resume(with: result)
        cleanup?()
    }
}
