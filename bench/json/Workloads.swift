import Foundation
import JSON

// The documents the benchmark works on, built the way the server builds them, and the Codable /
// Foundation-object models Foundation needs for the same work. Everything is deterministic.

/// One location as `GET /v1/locations` returns it. Ids and timestamps are kept as the strings
/// the server prints (lower-case UUIDs, RFC 3339 UTC with milliseconds), so the benchmark times
/// JSON, not UUID or date formatting.
struct LocationRecord: Codable, Equatable {
    var id: String
    var userID: String
    var categoryID: String
    var name: String
    var address: String?
    var description: String?
    var latitude: Double
    var longitude: Double
    var isFavorite: Bool
    var imageURLs: [String]
    var syncStatus: String
    var version: Int64
    var createdAt: String
    var updatedAt: String

    enum CodingKeys: String, CodingKey {
        case id
        case userID = "user_id"
        case categoryID = "category_id"
        case name, address, description, latitude, longitude
        case isFavorite = "is_favorite"
        case imageURLs = "image_urls"
        case syncStatus = "sync_status"
        case version
        case createdAt = "created_at"
        case updatedAt = "updated_at"
    }

    /// Written member by member, `null` for absent optionals, as the server writes them (the
    /// synthesized encoder would leave them out).
    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(userID, forKey: .userID)
        try container.encode(categoryID, forKey: .categoryID)
        try container.encode(name, forKey: .name)
        try container.encode(address, forKey: .address)
        try container.encode(description, forKey: .description)
        try container.encode(latitude, forKey: .latitude)
        try container.encode(longitude, forKey: .longitude)
        try container.encode(isFavorite, forKey: .isFavorite)
        try container.encode(imageURLs, forKey: .imageURLs)
        try container.encode(syncStatus, forKey: .syncStatus)
        try container.encode(version, forKey: .version)
        try container.encode(createdAt, forKey: .createdAt)
        try container.encode(updatedAt, forKey: .updatedAt)
    }
}

/// `{"data": [...], "meta": {...}}` of a listing.
struct LocationPage: Codable, Equatable {
    struct Meta: Codable, Equatable {
        var totalCount: Int64
        var totalPages: Int64
        var page: Int
        var size: Int

        enum CodingKeys: String, CodingKey {
            case totalCount = "total_count"
            case totalPages = "total_pages"
            case page, size
        }
    }

    var data: [LocationRecord]
    var meta: Meta
}

/// The claims `IDTokenVerifier` reads from a Firebase ID-token payload.
struct TokenClaims: Decodable {
    var aud: String
    var iss: String
    var sub: String
    var exp: Double
    var iat: Double
    var authTime: Double?
    var email: String?
    var name: String?

    enum CodingKeys: String, CodingKey {
        case aud, iss, sub, exp, iat
        case authTime = "auth_time"
        case email, name
    }
}

enum Workloads {
    static let userID = "kX3n9QzPq7bY2mT5vW8rL1sA4dF6"

    /// A page of `count` locations of one user, with the variety real data has: non-ASCII and
    /// escaped text, absent optionals, zero to three image URLs, six-decimal coordinates.
    static func locationPage(count: Int) -> LocationPage {
        let names = [
            "Du Pain et des Idées", "Café \"Zur Post\"", "Musée Carnavalet", "Bäckerei Kühn", "東京駅 ラーメン",
            "Blue Bottle Coffee", "La Droguerie", "Librería El Ateneo",
        ]
        let streets = ["Rue Yves Toudic", "Bahnhofstrasse", "Rue de Sévigné", "Calle Florida", "Marunouchi"]
        var generator = SplitMix64(seed: 0x5EED_1234)
        var records: [LocationRecord] = []
        for index in 0..<count {
            let hasAddress = index % 5 != 0
            let hasDescription = index % 3 == 0
            let images = (0..<(index % 4)).map { image in
                "https://firebasestorage.googleapis.com/v0/b/locify-prod.appspot.com/o/locations%2F\(userID)%2F\(uuid(&generator))-\(image).jpg?alt=media"
            }
            let created = 1_748_685_600 + index * 3_517
            records.append(
                LocationRecord(
                    id: uuid(&generator), userID: userID, categoryID: uuid(&generator),
                    name: names[index % names.count] + (index >= names.count ? " \(index)" : ""),
                    address: hasAddress ? "\(10 + index) \(streets[index % streets.count]), Paris" : nil,
                    description: hasDescription ? "Opens at 7:30.\nAsk for the \"escargot\" pastry; closed on Sundays." : nil,
                    latitude: (48.8 + Double(generator.next() % 1_000_000) / 10_000_000 * 10).rounded(toPlaces: 6),
                    longitude: (2.3 + Double(generator.next() % 1_000_000) / 10_000_000 * 10).rounded(toPlaces: 6),
                    isFavorite: index % 7 == 0, imageURLs: images, syncStatus: "synced", version: Int64(1 + index % 4),
                    createdAt: timestamp(created, milliseconds: index * 37 % 1000),
                    updatedAt: timestamp(created + 86_400, milliseconds: index * 91 % 1000)))
        }
        return LocationPage(data: records, meta: .init(totalCount: 1_234, totalPages: 25, page: 1, size: count))
    }

    /// A Firebase ID-token payload of a Google sign-in (the second segment of the token, decoded).
    static let tokenPayload = Array(
        """
        {"name":"Alice Example","picture":"https://lh3.googleusercontent.com/a/ACg8ocJx7Qm2vR9TbLwPz4sKd1NfHy6UeGa3XoCi5jVqBn8MrS0tW=s96-c",\
        "iss":"https://securetoken.google.com/locify-prod","aud":"locify-prod","auth_time":1764064800,\
        "user_id":"\(userID)","sub":"\(userID)","iat":1764064800,"exp":1764068400,\
        "email":"alice@example.com","email_verified":true,\
        "firebase":{"identities":{"google.com":["107234567890123456789"],"email":["alice@example.com"]},\
        "sign_in_provider":"google.com"}}
        """.utf8)

    private static func uuid(_ generator: inout SplitMix64) -> String {
        let hex = Array("0123456789abcdef".utf8)
        var bytes: [UInt8] = []
        for position in 0..<32 {
            if [8, 12, 16, 20].contains(position) { bytes.append(UInt8(ascii: "-")) }
            bytes.append(hex[Int(generator.next() & 0xF)])
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    private static func timestamp(_ seconds: Int, milliseconds: Int) -> String {
        var time = time_t(seconds)
        var parts = tm()
        gmtime_r(&time, &parts)
        func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
        let millis = milliseconds < 10 ? "00\(milliseconds)" : milliseconds < 100 ? "0\(milliseconds)" : "\(milliseconds)"
        return "\(parts.tm_year + 1900)-\(two(parts.tm_mon + 1))-\(two(parts.tm_mday))T"
            + "\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec)).\(millis)Z"
    }
}

/// A small deterministic generator (SplitMix64), so every run benchmarks the same documents.
struct SplitMix64: RandomNumberGenerator {
    private var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var value = state
        value = (value ^ (value >> 30)) &* 0xBF58_476D_1CE4_E5B9
        value = (value ^ (value >> 27)) &* 0x94D0_49BB_1331_11EB
        return value ^ (value >> 31)
    }
}

extension Double {
    fileprivate func rounded(toPlaces places: Int) -> Double {
        let scale = [1.0, 10, 100, 1_000, 10_000, 100_000, 1_000_000][places]
        return (self * scale).rounded() / scale
    }
}
