/// The Storage folders that belong to a user, the one statement of the folder policy
/// (openapi.yaml, `HttpsUrl`, "our rule"): a user's files live under `locations/<uid>/` and
/// `categories/<uid>/`, a record's under `<folder>/<uid>/<record id>/`. The server deletes only
/// inside them (`StorageObjectReference.isInsideUserFolders`) and queues their clean-up from them.
public enum UserStorageFolder: String, CaseIterable, Sendable {
    /// `locations/<uid>/`: the files of the user's locations.
    case locations
    /// `categories/<uid>/`: the files of the user's categories.
    case categories

    /// `<folder>/<uid>/`: every file of this kind of record of user `uid`.
    public func prefix(uid: String) -> String {
        "\(rawValue)/\(uid)/"
    }

    /// `<folder>/<uid>/<record>/`: the files of one record, `record` its id as written in the path.
    public func prefix(uid: String, record: String) -> String {
        "\(rawValue)/\(uid)/\(record)/"
    }
}
