/// A Cloud Storage object named by bucket and object path, recognised from a stored URL.
public struct StorageObjectReference: Sendable, Equatable {
    /// The bucket name.
    public var bucket: String
    /// The object name (decoded; may contain `/`).
    public var path: String

    /// The object `path` (decoded, as Cloud Storage names it) in `bucket`.
    public init(bucket: String, path: String) {
        self.bucket = bucket
        self.path = path
    }

    private static let firebaseHost = "firebasestorage.googleapis.com"
    private static let storageHost = "storage.googleapis.com"

    /// Recognises the three URL forms of openapi.yaml, `HttpsUrl`; nil for anything else:
    /// - `https://firebasestorage.googleapis.com/v0/b/<bucket>/o/<encoded path>?alt=media&token=...`
    ///   (path after `/o/` up to `?`/`#`, percent-decoded once),
    /// - `gs://<bucket>/<path>` (path as is),
    /// - `https://storage.googleapis.com/<bucket>/<path>` (path percent-decoded).
    public static func parse(_ url: String) -> StorageObjectReference? {
        if let rest = dropScheme("gs://", from: url) {
            guard let slash = rest.firstIndex(of: "/") else { return nil }
            let bucket = String(rest[..<slash])
            let path = String(rest[rest.index(after: slash)...])
            guard !bucket.isEmpty, !path.isEmpty else { return nil }
            return StorageObjectReference(bucket: bucket, path: path)
        }
        guard let rest = dropScheme("https://", from: url) else { return nil }
        let authorityEnd = rest.firstIndex { $0 == "/" || $0 == "?" || $0 == "#" } ?? rest.endIndex
        let host = rest[..<authorityEnd].lowercased()
        var target = rest[authorityEnd...]
        if let end = target.firstIndex(where: { $0 == "?" || $0 == "#" }) { target = target[..<end] }

        if host == firebaseHost {
            guard target.hasPrefix("/v0/b/") else { return nil }
            let afterPrefix = target.dropFirst("/v0/b/".count)
            guard let slash = afterPrefix.firstIndex(of: "/") else { return nil }
            let encodedBucket = afterPrefix[..<slash]
            let afterBucket = afterPrefix[slash...]
            guard afterBucket.hasPrefix("/o/") else { return nil }
            let encodedPath = afterBucket.dropFirst("/o/".count)
            guard let bucket = PercentEncoding.decode(encodedBucket), let path = PercentEncoding.decode(encodedPath),
                !bucket.isEmpty, !path.isEmpty
            else { return nil }
            return StorageObjectReference(bucket: bucket, path: path)
        }
        if host == storageHost {
            let afterSlash = target.dropFirst()
            guard target.hasPrefix("/"), let slash = afterSlash.firstIndex(of: "/") else { return nil }
            guard let bucket = PercentEncoding.decode(afterSlash[..<slash]),
                let path = PercentEncoding.decode(afterSlash[afterSlash.index(after: slash)...]),
                !bucket.isEmpty, !path.isEmpty
            else { return nil }
            return StorageObjectReference(bucket: bucket, path: path)
        }
        return nil
    }

    /// `text` after `scheme` when it starts with it (scheme compared case-insensitively).
    private static func dropScheme(_ scheme: String, from text: String) -> Substring? {
        guard text.utf8.count > scheme.utf8.count else { return nil }
        let head = text.prefix(scheme.count)
        guard head.lowercased() == scheme else { return nil }
        return text.dropFirst(scheme.count)
    }
}

extension StorageObjectReference {
    /// Why a text cannot be a Cloud Storage object name. The raw values are the `reason` label
    /// of `cleanup_jobs_skipped_total`.
    public enum ObjectNameProblem: String, Sendable, CaseIterable {
        /// Empty.
        case empty
        /// Longer than 1,024 bytes of UTF-8 (Google answers 400 for it).
        case tooLong = "name_too_long"
        /// Holds a control character (U+0000-U+001F, U+007F-U+009F): NUL cannot even be stored
        /// in PostgreSQL text, and Google refuses CR and LF.
        case controlCharacter = "control_character"
    }

    /// Longest object name Cloud Storage accepts, in bytes of UTF-8.
    public static let maximumObjectNameBytes = 1024

    /// Why `name` cannot name a Cloud Storage object, or nil when it can.
    public static func objectNameProblem(_ name: String) -> ObjectNameProblem? {
        let utf8 = name.utf8
        if utf8.isEmpty { return .empty }
        if utf8.count > maximumObjectNameBytes { return .tooLong }
        if name.unicodeScalars.contains(where: ControlCharacter.isControl) {
            return .controlCharacter
        }
        return nil
    }

    /// Whether the server may delete this object for user `uid` ("our rule" of openapi.yaml, `HttpsUrl`):
    /// the bucket is the configured one, the path is inside one of the user's folders
    /// (`UserStorageFolder`), and no segment is empty, `.` or `..`. Compared byte for byte.
    public func isInsideUserFolders(bucket configuredBucket: String, uid: String) -> Bool {
        guard bucket.utf8.elementsEqual(configuredBucket.utf8), !uid.isEmpty else { return false }
        let segments = path.utf8.split(separator: 0x2F, omittingEmptySubsequences: false)
        guard segments.count >= 3 else { return false }
        let folder = segments[0]
        guard UserStorageFolder.allCases.contains(where: { folder.elementsEqual($0.rawValue.utf8) }) else { return false }
        guard segments[1].elementsEqual(uid.utf8) else { return false }
        return segments.allSatisfy { segment in
            !segment.isEmpty && !segment.elementsEqual(".".utf8) && !segment.elementsEqual("..".utf8)
        }
    }
}
