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
    /// Where the app saves photos taken offline (default: `Locify Photos` in Application Support).
    /// A place keeps such a photo as `file:` and its path relative to this folder, resolved at
    /// upload time, because iOS moves the app's container on every update and restore. A
    /// `file://` URL outside this folder is refused (E001).
    public var photoDirectory: URL = ImageUploadSettings.defaultPhotoDirectory
    /// Uploads running at once (default 2).
    public var maxConcurrentUploads = 2
    /// Attempts per photo within one round of uploads (default 3); a photo still not uploaded
    /// waits for the next round (the next ``SyncEngine/sync()``).
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

    /// `Locify Photos` in the app's Application Support folder.
    public static var defaultPhotoDirectory: URL {
        let support = FileManager.default.urls(for: .applicationSupportDirectory, in: .userDomainMask).first
        return (support ?? FileManager.default.temporaryDirectory).appendingPathComponent("Locify Photos", isDirectory: true)
    }

    /// The file on this device that photo `imageURL` of a place names (to show it before it is
    /// uploaded), or nil for an https URL. `file:<relative path>` is found in ``photoDirectory``;
    /// a `file://` URL of an older version whose container has moved since is found by its path
    /// after the photo folder's name.
    public func file(for imageURL: String) -> URL? {
        guard LocalImage.isLocal(imageURL) else { return nil }
        if let relative = LocalImage.relativePath(imageURL) { return photoDirectory.appendingPathComponent(relative) }
        guard let file = LocalImage.fileURL(imageURL) else { return nil }
        if FileManager.default.fileExists(atPath: file.path) { return file }
        let components = file.standardizedFileURL.pathComponents
        guard let folder = components.lastIndex(of: photoDirectory.lastPathComponent), folder + 1 < components.count else { return file }
        let moved = photoDirectory.appendingPathComponent(components[(folder + 1)...].joined(separator: "/"))
        return FileManager.default.fileExists(atPath: moved.path) ? moved : file
    }

    /// How a place keeps photo `imageURL` of a draft: an https URL as is, a file in
    /// ``photoDirectory`` as `file:<relative path>`; nil (refused) for any other file URL.
    func reference(for imageURL: String) -> String? {
        guard LocalImage.isLocal(imageURL) else { return imageURL }
        if LocalImage.relativePath(imageURL) != nil { return imageURL }
        guard let file = self.file(for: imageURL) else { return nil }
        let folder = photoDirectory.standardizedFileURL.path + "/"
        let path = file.standardizedFileURL.path
        guard path.hasPrefix(folder), path.count > folder.count,
            let relative = String(path.dropFirst(folder.count)).addingPercentEncoding(withAllowedCharacters: .urlPathAllowed)
        else { return nil }
        return "file:" + relative
    }
}

/// The photo URLs of a place that are still files on the device (`file:`), not yet uploaded.
enum LocalImage {
    /// Whether `url` names a file on this device.
    static func isLocal(_ url: String) -> Bool {
        url.utf8.count >= 5 && url.prefix(5).lowercased() == "file:"
    }

    /// The file `url` names, when it is a well-formed absolute `file://` URL with a path.
    static func fileURL(_ url: String) -> URL? {
        guard isLocal(url), let parsed = URL(string: url), parsed.isFileURL, !parsed.path.isEmpty else { return nil }
        return parsed
    }

    /// The path in the photo folder of a `file:<relative path>` reference (nil for an absolute
    /// URL, or a path that would leave the folder).
    static func relativePath(_ url: String) -> String? {
        guard isLocal(url) else { return nil }
        let rest = url.dropFirst(5)
        guard !rest.hasPrefix("/"), let path = String(rest).removingPercentEncoding, !path.isEmpty,
            !path.split(separator: "/").contains("..")
        else { return nil }
        return path
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

/// A photo taken offline that waits for its upload: its place, and the photo as the place holds
/// it (`file:<path in the photo folder>`, or an absolute `file://` URL kept by an older version).
/// The queue of them is kept in the store (``StoreMetadata/pendingImages``).
public struct PendingImage: Codable, Hashable, Sendable {
    /// The place the photo belongs to.
    public var locationID: UUID
    /// The photo's `file:` URL as the place holds it.
    public var url: String

    /// Photo `url` of place `locationID`.
    public init(locationID: UUID, url: String) {
        self.locationID = locationID
        self.url = url
    }
}

extension PushChange {
    /// The `file:` URLs of a location write.
    var localImageURLs: [String] {
        switch self {
        case .createLocation(let write), .updateLocation(let write): write.imageURLs.filter(LocalImage.isLocal)
        case .patchLocation(let patch): patch.values.imageURLs.filter(LocalImage.isLocal)
        default: []
        }
    }

    /// This change without its `file:` URLs: the server is sent a place without the photos
    /// still to upload (they follow in an edit of their own once uploaded).
    var withoutLocalImages: PushChange {
        switch self {
        case .createLocation(var write):
            write.imageURLs.removeAll(where: LocalImage.isLocal)
            return .createLocation(write)
        case .updateLocation(var write):
            write.imageURLs.removeAll(where: LocalImage.isLocal)
            return .updateLocation(write)
        case .patchLocation(let patch):
            return .patchLocation(patch.with(imageURLs: patch.values.imageURLs.filter { !LocalImage.isLocal($0) }))
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
    /// `change` as queued: a place's photos still to upload join the upload queue, and the
    /// change goes without them; photos of the place the change no longer holds (an edit that
    /// dropped them, a delete) leave the queue.
    mutating func queuingLocalImages(of change: PushChange) -> PushChange {
        guard change.kind == .location else { return change }
        let id = change.recordID
        let kept: Set<String>
        switch change {
        case .createLocation(let write), .updateLocation(let write): kept = Set(write.imageURLs)
        case .patchLocation(let patch) where patch.fields.contains(.imageURLs): kept = Set(patch.values.imageURLs)
        case .patchLocation: return change  // the photos stay as they are
        default: kept = []
        }
        var queue = metadata.pendingImages.filter { $0.locationID != id || kept.contains($0.url) }
        for url in change.localImageURLs where !queue.contains(PendingImage(locationID: id, url: url)) {
            queue.append(PendingImage(locationID: id, url: url))
        }
        if queue != metadata.pendingImages { setPendingImages(queue) }
        return change.withoutLocalImages
    }

    /// `location` (the server's copy) with the photos of it still waiting for their upload, so
    /// that the device keeps showing them until their URLs follow: each where the local copy has
    /// it (after the photo it follows there), else last.
    func keepingPendingImages(_ location: Location) throws -> Location {
        let pending = metadata.pendingImages.filter { $0.locationID == location.id && !location.imageURLs.contains($0.url) }
        guard !pending.isEmpty else { return location }
        let local = try self.location(location.id)?.imageURLs ?? []
        var kept = location
        for image in pending {
            guard let index = local.firstIndex(of: image.url) else {
                kept.imageURLs.append(image.url)
                continue
            }
            let previous = local[..<index].last(where: kept.imageURLs.contains).flatMap { kept.imageURLs.firstIndex(of: $0) }
            kept.imageURLs.insert(image.url, at: previous.map { $0 + 1 } ?? 0)
        }
        return kept
    }

    /// Takes photo `image` out of the queue.
    mutating func dequeue(_ image: PendingImage) {
        setPendingImages(metadata.pendingImages.filter { $0 != image })
    }
}

/// The outcome of one photo's upload.
enum ImageUploadOutcome: Sendable {
    /// Uploaded: the URL to keep.
    case uploaded(String)
    /// The file is gone from the device: the photo cannot be uploaded, ever.
    case fileMissing
    /// Every attempt of this round failed (the last error); it is tried again in the next round.
    case failed(LocifyError)
}

/// The engine's photo uploads: the round running (one at a time) and what rounds did since the
/// last ``SyncReport``.
struct ImageUploadWork {
    var round: (id: UUID, task: Task<Void, Never>)?
    var uploaded = 0
    var failed = 0

    /// The counts since the last call, for a sync's report.
    mutating func takeCounts() -> (uploaded: Int, failed: Int) {
        defer { (uploaded, failed) = (0, 0) }
        return (uploaded, failed)
    }
}

extension SyncEngine {
    /// The photos of places edited offline that wait for their upload.
    public func pendingImageUploads() async throws -> Int {
        try loaded().metadata.pendingImages.count
    }

    /// Uploads the photos waiting for it now, and returns when this round of uploads has ended
    /// (joining the round ``sync()`` started, if one runs). ``sync()`` starts a round by itself
    /// and never waits for it; this is for a screen that wants the photos online now, and tests.
    public func uploadPendingImages() async {
        startImageUploads()
        await imageWork.round?.task.value
    }

    /// Starts a round of uploads in the background, unless one runs or nothing waits: every
    /// pending photo (at most ``ImageUploadSettings/maxConcurrentUploads`` at once, each with its
    /// own attempts and deadline), those queued while it runs included. No sync waits for it.
    func startImageUploads() {
        guard let (uploader, settings) = imageUploads, imageWork.round == nil,
            let queue = try? loaded().metadata.pendingImages, !queue.isEmpty
        else { return }
        let id = UUID()
        let task = Task {
            await self.runImageRound(uploader, settings)
            self.endImageRound(id)
        }
        imageWork.round = (id, task)
    }

    private func endImageRound(_ id: UUID) {
        if imageWork.round?.id == id { imageWork.round = nil }
    }

    /// Cancels the round of uploads running, if any (a sign-out, a reset).
    func stopImageUploads() {
        imageWork.round?.task.cancel()
        imageWork.round = nil
    }

    private func runImageRound(_ uploader: any ImageUploader, _ settings: ImageUploadSettings) async {
        var attempted = Set<PendingImage>()
        await withTaskGroup(of: (PendingImage, ImageUploadOutcome).self) { group in
            func startNext() -> Bool {
                while !Task.isCancelled, let image = (try? loaded().metadata.pendingImages)?.first(where: { !attempted.contains($0) }) {
                    attempted.insert(image)
                    guard placeHolds(image) else {
                        // Its place was deleted (with its category) or no longer holds it.
                        try? drop(image)
                        continue
                    }
                    let file = settings.file(for: image.url)
                    group.addTask { (image, await Self.upload(image, file: file, with: uploader, settings)) }
                    return true
                }
                return false
            }
            var running = 0
            while running < max(settings.maxConcurrentUploads, 1), startNext() { running += 1 }
            while let (image, outcome) = await group.next() {
                running -= 1
                settle(image, outcome)
                while running < max(settings.maxConcurrentUploads, 1), startNext() { running += 1 }
            }
        }
    }

    /// Takes in one photo's outcome. An uploaded photo's URL replaces its file in the place as
    /// it is now (an edit of its own, pushed like any other), and the file is removed. A photo
    /// whose file is gone leaves the place (which the server never had it in) and is reported.
    private func settle(_ image: PendingImage, _ outcome: ImageUploadOutcome) {
        switch outcome {
        case .uploaded(let remote):
            imageWork.uploaded += 1
            do {
                guard placeHolds(image), let current = try reading({ try $0.location(id: image.locationID) }) else {
                    try drop(image)
                    return
                }
                var draft = LocationDraft(editing: current)
                draft.imageURLs = draft.imageURLs.replacing(image.url, with: remote)
                try saveLocation(draft, resolving: nil)
            } catch {
                // The place can no longer take it (its category is gone): the photo goes with it.
                try? drop(image)
            }
        case .fileMissing:
            do {
                var transaction = try begin()
                transaction.dequeue(image)
                if var current = try transaction.location(image.locationID), current.imageURLs.contains(image.url) {
                    current.imageURLs.removeAll { $0 == image.url }
                    transaction.upsert(current, clock: try transaction.clock(of: current))
                }
                transaction.events.append(.imageMissing(locationID: image.locationID, url: image.url))
                try commit(&transaction)
            } catch {
                emit(.imageUploadFailed(locationID: image.locationID, url: image.url, Self.locifyError(error)))
            }
        case .failed(.cancelled):
            return
        case .failed(let error):
            imageWork.failed += 1
            emit(.imageUploadFailed(locationID: image.locationID, url: image.url, error))
        }
    }

    /// Whether the local copy of `image`'s place still holds it.
    private func placeHolds(_ image: PendingImage) -> Bool {
        (try? reading { try $0.location(id: image.locationID) })??.imageURLs.contains(image.url) == true
    }

    /// Takes `image` out of the queue and removes its file (its place is gone or no longer holds it).
    private func drop(_ image: PendingImage) throws {
        var transaction = try begin()
        transaction.dequeue(image)
        try commit(&transaction)
        removeFiles(of: [image.url])
    }

    /// One photo's attempts within a round, with backoff between them.
    private static func upload(
        _ image: PendingImage, file: URL?, with uploader: any ImageUploader, _ settings: ImageUploadSettings
    ) async -> ImageUploadOutcome {
        guard let file, FileManager.default.fileExists(atPath: file.path) else { return .fileMissing }
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

    /// A draft's photo URLs as the place keeps them (``ImageUploadSettings/reference(for:)``); a
    /// file URL the place already holds stays as it is. Throws E001 for any other file URL, or
    /// any file URL without an uploader.
    func imageReferences(_ urls: [String], holding held: [String]) throws -> [String] {
        try urls.map { url in
            guard LocalImage.isLocal(url), !held.contains(url) else { return url }
            guard let settings = imageUploads?.settings else {
                throw LocifyError(RuleViolation.invalidInput(field: "image_urls", reason: "a file:// URL needs an image uploader (setImageUploader): \(url)"))
            }
            guard let reference = settings.reference(for: url) else {
                let reason = "must be a file in the photo directory \(settings.photoDirectory.path) (ImageUploadSettings.photoDirectory)"
                throw LocifyError(RuleViolation.invalidInput(field: "image_urls", reason: "\(reason): \(url)"))
            }
            return reference
        }
    }

    /// `draft` with its photo URLs as the place keeps them (``imageReferences(_:holding:)``).
    func withImageReferences(_ draft: LocationDraft) throws -> LocationDraft {
        guard draft.imageURLs.contains(where: LocalImage.isLocal) else { return draft }
        var draft = draft
        let held = try reading { try $0.location(id: draft.id) }?.imageURLs ?? []
        draft.imageURLs = try imageReferences(draft.imageURLs, holding: held)
        return draft
    }

    /// `draft` (a change the server refused, retried) with its place's photos still to upload,
    /// which the change went without.
    func withPendingImages(_ draft: LocationDraft) throws -> LocationDraft {
        var draft = draft
        for image in try loaded().metadata.pendingImages where image.locationID == draft.id && !draft.imageURLs.contains(image.url) {
            draft.imageURLs.append(image.url)
        }
        return draft
    }

    /// Removes the files of local photos `urls` (dropped before their upload, or uploaded).
    func removeFiles(of urls: [String]) {
        let settings = imageUploads?.settings ?? ImageUploadSettings()
        for url in urls where LocalImage.isLocal(url) {
            if let file = settings.file(for: url) { try? FileManager.default.removeItem(at: file) }
        }
    }

    /// Removes the files of the photos a place's edit or delete dropped before they were uploaded.
    func discardLocalFiles(of old: Location?, keeping kept: [String]) {
        removeFiles(of: (old?.imageURLs ?? []).filter { !kept.contains($0) })
    }

    /// Moves the photos an older version kept in queued changes (`file://` URLs, the change held
    /// until their upload) to the upload queue, so that their places are pushed at once.
    func queueImagesOfOlderVersion() throws {
        guard try loaded().outbox.ordered.contains(where: { !$0.change.localImageURLs.isEmpty }) else { return }
        var transaction = try begin()
        for var entry in transaction.outbox.ordered where !entry.change.localImageURLs.isEmpty {
            entry.change = transaction.queuingLocalImages(of: entry.change)
            transaction.putOutbox(entry)
        }
        try commit(&transaction)
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
