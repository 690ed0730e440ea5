import FirebaseAdmin
import JSON
import LocifyRules

extension FakeGoogle {
    /// The decoded `prefix` of every Storage list request that started a listing (no
    /// `pageToken`), in order: one entry per attempt at listing a folder.
    public var listedPrefixes: [String] {
        requests.compactMap { request in
            guard request.endpoint == .storageList else { return nil }
            let query = Self.parseForm(Array(request.query.utf8))
            guard query["pageToken"] == nil else { return nil }
            return query["prefix"] ?? ""
        }
    }

    /// The decoded object name of every Storage DELETE request received (injected failures and
    /// 404s included), in order.
    public var deleteRequestNames: [String] {
        requests.compactMap { request in
            guard request.endpoint == .storageDelete, let marker = request.path.range(of: "/o/") else { return nil }
            return PercentEncoding.decode(request.path[marker.upperBound...])
        }
    }

    /// The `localId` of every `accounts:delete` request received, in order.
    public var accountDeleteRequestUIDs: [String] {
        requests.compactMap { request in
            guard request.endpoint == .accountsDelete,
                let body = try? JSONParser.parse(request.body).objectValue
            else { return nil }
            return body["localId"]?.stringValue
        }
    }
}
