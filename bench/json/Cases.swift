import Foundation
import JSON

/// One thing to time: a workload done by one implementation. `run` does it once and returns a
/// number derived from the result, summed into a checksum so the work cannot be optimised away.
struct BenchmarkCase {
    let workload: String
    let implementation: String
    let bytes: Int
    let run: () throws -> Int
}

/// The implementation names, ours first in every workload.
enum Implementation {
    static let ours = "JSON (this repository)"
    static let oursTyped = "JSON + reading into structs"
    static let serialization = "Foundation JSONSerialization"
    static let decoder = "Foundation JSONDecoder"
    static let encoder = "Foundation JSONEncoder"
}

enum BenchmarkError: Error, CustomStringConvertible {
    case mismatch(String)

    var description: String {
        switch self {
        case .mismatch(let what): return "results differ: \(what)"
        }
    }
}

enum Cases {
    /// Every case, after checking that the implementations of a workload agree on the result.
    static func all(pageSize: Int) throws -> [BenchmarkCase] {
        let page = Workloads.locationPage(count: pageSize)
        let listBytes = writePage(page)
        let listData = Data(listBytes)
        let foundationPage = foundationObject(page)
        let tokenBytes = Workloads.tokenPayload
        let tokenData = Data(tokenBytes)
        let encoder = JSONEncoder()
        let decoder = JSONDecoder()

        // The implementations must agree before their speed means anything.
        let reference = try JSONParser.parse(listBytes)
        for (name, encoded) in [
            (Implementation.encoder, Array(try encoder.encode(page))),
            (Implementation.serialization, Array(try JSONSerialization.data(withJSONObject: foundationPage))),
        ] where try JSONParser.parse(encoded) != reference {
            throw BenchmarkError.mismatch("\(name) encodes another document than JSONWriter")
        }
        guard try decoder.decode(LocationPage.self, from: listData) == page else {
            throw BenchmarkError.mismatch("JSONDecoder reads another page")
        }
        guard try readPage(JSONParser.parse(listBytes)) == page else {
            throw BenchmarkError.mismatch("the JSONValue reader reads another page")
        }
        let claims = try [
            readClaimsOurs(tokenBytes), readClaimsSerialization(tokenData), readClaimsDecoder(decoder, tokenData),
        ]
        guard claims.allSatisfy({ $0 == claims[0] }), claims[0] != 0 else {
            throw BenchmarkError.mismatch("the token claims differ: \(claims)")
        }

        let list = "list of \(pageSize) locations"
        return [
            BenchmarkCase(workload: "\(list): encode", implementation: Implementation.ours, bytes: listBytes.count) {
                writePage(page).count
            },
            BenchmarkCase(workload: "\(list): encode", implementation: Implementation.encoder, bytes: listBytes.count) {
                try encoder.encode(page).count
            },
            BenchmarkCase(workload: "\(list): encode", implementation: Implementation.serialization, bytes: listBytes.count) {
                try JSONSerialization.data(withJSONObject: foundationPage).count
            },
            BenchmarkCase(workload: "\(list): parse", implementation: Implementation.ours, bytes: listBytes.count) {
                guard case .object(let object) = try JSONParser.parse(listBytes) else { return 0 }
                return object.count
            },
            BenchmarkCase(workload: "\(list): parse", implementation: Implementation.serialization, bytes: listBytes.count) {
                (try JSONSerialization.jsonObject(with: listData) as? [String: Any])?.count ?? 0
            },
            BenchmarkCase(workload: "\(list): parse to structs", implementation: Implementation.oursTyped, bytes: listBytes.count) {
                try readPage(JSONParser.parse(listBytes)).data.count
            },
            BenchmarkCase(workload: "\(list): parse to structs", implementation: Implementation.decoder, bytes: listBytes.count) {
                try decoder.decode(LocationPage.self, from: listData).data.count
            },
            BenchmarkCase(workload: "ID-token payload: parse + read claims", implementation: Implementation.ours, bytes: tokenBytes.count) {
                try readClaimsOurs(tokenBytes)
            },
            BenchmarkCase(
                workload: "ID-token payload: parse + read claims", implementation: Implementation.serialization, bytes: tokenBytes.count
            ) {
                try readClaimsSerialization(tokenData)
            },
            BenchmarkCase(workload: "ID-token payload: parse + read claims", implementation: Implementation.decoder, bytes: tokenBytes.count) {
                try readClaimsDecoder(decoder, tokenData)
            },
        ]
    }

    // MARK: The list response

    /// The page as the server writes it (LocifyAPI's `JSONWriter.page` and `.location`): straight
    /// into one byte buffer reserved with the server's estimate, ids and times copied unescaped.
    static func writePage(_ page: LocationPage) -> [UInt8] {
        var writer = JSONWriter(reservingCapacity: 128 + 480 * page.data.count)
        writer.beginObject()
        writer.key("data")
        writer.beginArray()
        for location in page.data {
            writer.beginObject()
            writer.key("id")
            writer.unescapedString { $0.append(contentsOf: location.id.utf8) }
            writer.key("user_id")
            writer.string(location.userID)
            writer.key("category_id")
            writer.unescapedString { $0.append(contentsOf: location.categoryID.utf8) }
            writer.key("name")
            writer.string(location.name)
            writer.key("address")
            writer.string(location.address)
            writer.key("description")
            writer.string(location.description)
            writer.key("latitude")
            writer.double(location.latitude)
            writer.key("longitude")
            writer.double(location.longitude)
            writer.key("is_favorite")
            writer.bool(location.isFavorite)
            writer.key("image_urls")
            writer.beginArray()
            for url in location.imageURLs { writer.string(url) }
            writer.endArray()
            writer.key("sync_status")
            writer.string(location.syncStatus)
            writer.key("version")
            writer.int64(location.version)
            writer.key("created_at")
            writer.unescapedString { $0.append(contentsOf: location.createdAt.utf8) }
            writer.key("updated_at")
            writer.unescapedString { $0.append(contentsOf: location.updatedAt.utf8) }
            writer.endObject()
        }
        writer.endArray()
        writer.key("meta")
        writer.beginObject()
        writer.key("total_count")
        writer.int64(page.meta.totalCount)
        writer.key("total_pages")
        writer.int64(page.meta.totalPages)
        writer.key("page")
        writer.int(page.meta.page)
        writer.key("size")
        writer.int(page.meta.size)
        writer.endObject()
        writer.endObject()
        return writer.bytes
    }

    /// The page as Foundation objects, built once: JSONSerialization is timed on serialising
    /// only, not on building the dictionaries a server would first have to build.
    static func foundationObject(_ page: LocationPage) -> [String: Any] {
        let records: [[String: Any]] = page.data.map { location in
            [
                "id": location.id, "user_id": location.userID, "category_id": location.categoryID, "name": location.name,
                "address": location.address ?? NSNull(), "description": location.description ?? NSNull(),
                "latitude": location.latitude, "longitude": location.longitude, "is_favorite": location.isFavorite,
                "image_urls": location.imageURLs, "sync_status": location.syncStatus, "version": location.version,
                "created_at": location.createdAt, "updated_at": location.updatedAt,
            ]
        }
        let meta: [String: Any] = [
            "total_count": page.meta.totalCount, "total_pages": page.meta.totalPages, "page": page.meta.page,
            "size": page.meta.size,
        ]
        return ["data": records, "meta": meta]
    }

    /// Reads a parsed page into the structs JSONDecoder fills, the way the server reads request
    /// bodies (member lookups on `JSONObject`, a type check per field).
    static func readPage(_ value: JSONValue) throws -> LocationPage {
        guard case .object(let object) = value, case .array(let items)? = object["data"],
            case .object(let meta)? = object["meta"]
        else { throw BenchmarkError.mismatch("not a page") }
        var records: [LocationRecord] = []
        records.reserveCapacity(items.count)
        for item in items {
            guard case .object(let fields) = item else { throw BenchmarkError.mismatch("not a location") }
            func string(_ key: String) throws -> String {
                guard case .string(let text)? = fields[key] else { throw BenchmarkError.mismatch(key) }
                return text
            }
            func optionalString(_ key: String) throws -> String? {
                switch fields[key] {
                case nil, .null?: return nil
                case .string(let text)?: return text
                default: throw BenchmarkError.mismatch(key)
                }
            }
            func number(_ key: String) throws -> Double {
                guard case .number(let number)? = fields[key] else { throw BenchmarkError.mismatch(key) }
                return number
            }
            guard case .bool(let favorite)? = fields["is_favorite"], case .array(let urls)? = fields["image_urls"],
                let version = fields["version"]?.int64Value
            else { throw BenchmarkError.mismatch("location fields") }
            records.append(
                LocationRecord(
                    id: try string("id"), userID: try string("user_id"), categoryID: try string("category_id"),
                    name: try string("name"), address: try optionalString("address"),
                    description: try optionalString("description"), latitude: try number("latitude"),
                    longitude: try number("longitude"), isFavorite: favorite,
                    imageURLs: try urls.map { url in
                        guard case .string(let text) = url else { throw BenchmarkError.mismatch("image_urls") }
                        return text
                    },
                    syncStatus: try string("sync_status"), version: version, createdAt: try string("created_at"),
                    updatedAt: try string("updated_at")))
        }
        guard let total = meta["total_count"]?.int64Value, let pages = meta["total_pages"]?.int64Value,
            let number = meta["page"]?.int64Value, let size = meta["size"]?.int64Value
        else { throw BenchmarkError.mismatch("meta") }
        return LocationPage(
            data: records, meta: .init(totalCount: total, totalPages: pages, page: Int(number), size: Int(size)))
    }

    // MARK: The token payload

    /// What `IDTokenVerifier` does with a payload: parse (depth 16), then read the claims it checks.
    static func readClaimsOurs(_ bytes: [UInt8]) throws -> Int {
        guard case .object(let payload) = try JSONParser.parse(bytes, maxDepth: 16),
            case .string(let audience)? = payload["aud"], case .string(let issuer)? = payload["iss"],
            case .string(let subject)? = payload["sub"], case .number(let expiry)? = payload["exp"],
            case .number(let issued)? = payload["iat"]
        else { throw BenchmarkError.mismatch("claims") }
        let authTime = payload["auth_time"]?.numberValue ?? 0
        let email = payload["email"]?.stringValue ?? ""
        let name = payload["name"]?.stringValue ?? ""
        return claimsDigest(audience, issuer, subject, expiry, issued, authTime, email, name)
    }

    static func readClaimsSerialization(_ data: Data) throws -> Int {
        guard let payload = try JSONSerialization.jsonObject(with: data) as? [String: Any],
            let audience = payload["aud"] as? String, let issuer = payload["iss"] as? String,
            let subject = payload["sub"] as? String, let expiry = (payload["exp"] as? NSNumber)?.doubleValue,
            let issued = (payload["iat"] as? NSNumber)?.doubleValue
        else { throw BenchmarkError.mismatch("claims") }
        let authTime = (payload["auth_time"] as? NSNumber)?.doubleValue ?? 0
        let email = payload["email"] as? String ?? ""
        let name = payload["name"] as? String ?? ""
        return claimsDigest(audience, issuer, subject, expiry, issued, authTime, email, name)
    }

    static func readClaimsDecoder(_ decoder: JSONDecoder, _ data: Data) throws -> Int {
        let claims = try decoder.decode(TokenClaims.self, from: data)
        return claimsDigest(
            claims.aud, claims.iss, claims.sub, claims.exp, claims.iat, claims.authTime ?? 0, claims.email ?? "",
            claims.name ?? "")
    }

    private static func claimsDigest(
        _ audience: String, _ issuer: String, _ subject: String, _ expiry: Double, _ issued: Double, _ authTime: Double,
        _ email: String, _ name: String
    ) -> Int {
        // Summed term by term: as one expression the type checker took 18 s over it (issue 37 item 7).
        let lengths: [Int] = [audience.utf8.count, issuer.utf8.count, subject.utf8.count, email.utf8.count, name.utf8.count]
        let times: [Int] = [Int(expiry), Int(issued), Int(authTime)]
        let weights: [Int] = [1, 3, 5, 13, 17, 1, 7, 11]
        return zip(lengths + times, weights).reduce(0) { sum, term in sum &+ term.0 &* term.1 }
    }
}
