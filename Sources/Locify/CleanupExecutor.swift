import FirebaseAdmin

/// Carries out clean-up jobs against Google. A protocol so tests can count and fail calls.
public protocol CleanupExecutor: Sendable {
    /// Deletes every object under `prefix` in the configured bucket (404s count as done).
    func deleteStorageFolder(prefix: String) throws(GoogleAPIError)
    /// Deletes one object of the configured bucket (404 counts as done).
    func deleteStorageObject(path: String) throws(GoogleAPIError)
    /// Deletes the Firebase Auth account (`USER_NOT_FOUND` counts as done).
    func deleteAuthAccount(uid: String) throws(GoogleAPIError)
}

/// The real executor: Cloud Storage JSON API and Identity Toolkit.
public struct GoogleCleanupExecutor: CleanupExecutor {
    public var storage: CloudStorageClient
    public var identity: IdentityToolkitClient
    public var bucket: String
    public var projectID: String

    public init(storage: CloudStorageClient, identity: IdentityToolkitClient, bucket: String, projectID: String) {
        self.storage = storage
        self.identity = identity
        self.bucket = bucket
        self.projectID = projectID
    }

    public func deleteStorageFolder(prefix: String) throws(GoogleAPIError) {
        _ = try storage.deleteFolder(bucket: bucket, prefix: prefix)
    }

    public func deleteStorageObject(path: String) throws(GoogleAPIError) {
        try storage.deleteObject(bucket: bucket, name: path)
    }

    public func deleteAuthAccount(uid: String) throws(GoogleAPIError) {
        try identity.deleteAccount(projectId: projectID, uid: uid)
    }
}
