import FirebaseAdmin
import Locify

/// Carries out clean-up jobs against Google. A protocol so tests can count and fail calls.
public protocol CleanupExecutor: Sendable {
    /// Deletes every object under `prefix` in the configured bucket (404s count as done).
    func deleteStorageFolder(prefix: String) throws(GoogleAPIError)
    /// Deletes one object of the configured bucket (404 counts as done).
    func deleteStorageObject(path: String) throws(GoogleAPIError)
    /// Deletes objects of the configured bucket (404s count as done) with the rules of a folder:
    /// one refused for good does not stop the others, a retryable failure does.
    func deleteStorageObjects(paths: [String]) throws(GoogleAPIError)
    /// Deletes every object under each prefix, with the same rules.
    func deleteStorageFolders(prefixes: [String]) throws(GoogleAPIError)
    /// Deletes the Firebase Auth account (`USER_NOT_FOUND` counts as done).
    func deleteAuthAccount(uid: String) throws(GoogleAPIError)
}

extension CleanupExecutor {
    /// One object after the other through `deleteStorageObject`, past permanent refusals.
    public func deleteStorageObjects(paths: [String]) throws(GoogleAPIError) {
        try Self.each(paths) { path throws(GoogleAPIError) in try deleteStorageObject(path: path) }
    }

    /// One folder after the other through `deleteStorageFolder`, past permanent refusals.
    public func deleteStorageFolders(prefixes: [String]) throws(GoogleAPIError) {
        try Self.each(prefixes) { prefix throws(GoogleAPIError) in try deleteStorageFolder(prefix: prefix) }
    }

    /// Runs `body` for each item in turn: a retryable error stops at once, a permanent one lets
    /// the others run and is thrown at the end.
    private static func each(_ items: [String], _ body: (String) throws(GoogleAPIError) -> Void) throws(GoogleAPIError) {
        var permanent: GoogleAPIError?
        for item in items {
            do throws(GoogleAPIError) {
                try body(item)
            } catch  where error.isPermanent {
                permanent = permanent ?? error
            }
        }
        if let permanent { throw permanent }
    }
}

/// The real executor: Cloud Storage JSON API and Identity Toolkit.
public struct GoogleCleanupExecutor: CleanupExecutor {
    /// The Cloud Storage client.
    public var storage: CloudStorageClient
    /// The Identity Toolkit (Firebase Auth admin) client.
    public var identity: IdentityToolkitClient
    /// The Storage bucket holding the users' files.
    public var bucket: String
    /// The Firebase project whose Auth accounts are deleted.
    public var projectID: String

    /// An executor calling Google with these clients, for this bucket and project.
    public init(storage: CloudStorageClient, identity: IdentityToolkitClient, bucket: String, projectID: String) {
        self.storage = storage
        self.identity = identity
        self.bucket = bucket
        self.projectID = projectID
    }

    /// Deletes every object under `prefix` in `bucket`.
    public func deleteStorageFolder(prefix: String) throws(GoogleAPIError) {
        _ = try storage.deleteFolder(bucket: bucket, prefix: prefix)
    }

    /// Deletes the object `path` of `bucket`.
    public func deleteStorageObject(path: String) throws(GoogleAPIError) {
        try storage.deleteObject(bucket: bucket, name: path)
    }

    /// Deletes the objects `paths` of `bucket`, several at once.
    public func deleteStorageObjects(paths: [String]) throws(GoogleAPIError) {
        _ = try storage.deleteObjects(bucket: bucket, names: paths)
    }

    /// Deletes the Auth account `uid` of `projectID`.
    public func deleteAuthAccount(uid: String) throws(GoogleAPIError) {
        try identity.deleteAccount(projectId: projectID, uid: uid)
    }
}
