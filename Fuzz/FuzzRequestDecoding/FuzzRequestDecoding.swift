import Foundation
import FuzzSupport
import JSON
import Locify
import LocifyAPI
import LocifyRules
import Primitives

/// Fuzzes the request decoding of `LocifyAPI` and the validation of `Locify`: the input is a
/// request body (JSON text) decoded as a category (`CategoryDraft(json:)`), a location
/// (`LocationDraft(json:)`), delete options (`DeleteOptions`, from the body and from query
/// items), a push batch (`PushedChange.batch(json:)`, each change through `PushedChange(json:)` and
/// the draft its type and action select) and sync cursors (`SyncCursor(encoded:)` on the raw
/// input and on every string in the body).
///
/// What an accepted draft promises is checked (openapi.yaml): trimmed names of
/// 1-255 code points without control characters, https URLs, coordinates in range, at most ten
/// distinct image URLs, timestamps that render in the API's output form and read back as the same
/// instant; decoding twice gives the same draft; a decoded cursor re-encodes to one that decodes
/// to itself.
@main
enum FuzzRequestDecoding {
    static let userID = "fuzz-user"
    static let pathID = UUID(uuid: (0xA1, 0xB2, 0xC3, 0xD4, 0, 0, 0x40, 0, 0x80, 0, 0, 0, 0, 0, 0, 1))

    static func main() {
        FuzzHarness.main(name: "request-decoding") { input in
            let bytes = Array(input)
            decodeCursor(String(decoding: bytes, as: UTF8.self))
            guard let body = try? JSONParser.parse(bytes) else { return }
            decodeCategory(body)
            decodeLocation(body)
            decodeDeleteOptions(body)
            decodeChange(body)
            if let changes = try? PushedChange.batch(json: body, userID: userID) {
                for change in changes { checkChange(change) }
            }
            forEachString(in: body) { decodeCursor($0) }
        }
    }

    static func decodeCategory(_ body: JSONValue) {
        for pathID in [nil, pathID] {
            guard let draft = try? CategoryDraft(json: body, userID: userID, pathID: pathID) else { continue }
            precondition((try? CategoryDraft(json: body, userID: userID, pathID: pathID)) == draft, "nondeterministic")
            if let pathID { precondition(draft.id == pathID, "path id not used") }
            checkName(draft.name)
            if let icon = draft.icon { checkURL(icon) }
            [draft.createdAt, draft.updatedAt].compactMap { $0 }.forEach(checkTimestamp)
        }
    }

    static func decodeLocation(_ body: JSONValue) {
        for pathID in [nil, pathID] {
            guard let draft = try? LocationDraft(json: body, userID: userID, pathID: pathID) else { continue }
            precondition((try? LocationDraft(json: body, userID: userID, pathID: pathID)) == draft, "nondeterministic")
            if let pathID { precondition(draft.id == pathID, "path id not used") }
            checkName(draft.name)
            precondition((-90.0...90.0).contains(draft.latitude), "latitude \(draft.latitude)")
            precondition((-180.0...180.0).contains(draft.longitude), "longitude \(draft.longitude)")
            precondition(draft.imageURLs.count <= LocationRules.maxImageURLs, "too many image URLs")
            precondition(Set(draft.imageURLs).count == draft.imageURLs.count, "duplicate image URLs")
            draft.imageURLs.forEach(checkURL)
            [draft.createdAt, draft.updatedAt].compactMap { $0 }.forEach(checkTimestamp)
            for text in [draft.address, draft.description].compactMap({ $0 }) {
                precondition(text.unicodeScalars.count <= 1000, "long text over 1000 code points")
                precondition(!text.unicodeScalars.allSatisfy(\.properties.isWhitespace), "blank text not turned into null")
                precondition(
                    !text.unicodeScalars.contains { ControlCharacter.isControl($0) && $0 != "\t" && $0 != "\n" && $0 != "\r" },
                    "control character in long text")
            }
        }
    }

    static func decodeDeleteOptions(_ body: JSONValue) {
        if let options = try? DeleteOptions(body: body, query: []), let updatedAt = options.updatedAt {
            checkTimestamp(updatedAt)
        }
        // The same members as query items (strings only), as `?updated_at=...` would carry them.
        guard case .object(let object) = body else { return }
        let items = object.compactMap { member -> (name: String, value: String)? in
            member.value.stringValue.map { (name: member.key, value: $0) }
        }
        _ = try? DeleteOptions(body: nil, query: items)
    }

    /// One push change, decoded as `POST /v1/sync/push` decodes it before touching the database.
    static func decodeChange(_ value: JSONValue) {
        let change = PushedChange(json: value, userID: userID)
        precondition(PushedChange(json: value, userID: userID) == change, "nondeterministic")
        checkChange(change)
    }

    /// What an accepted change promises: its draft keeps the draft rules (and is what the draft
    /// decoders give for the same data); the reported id is lower-case when it is a UUID.
    static func checkChange(_ change: PushedChange) {
        if let id = change.id, let uuid = UUID(apiString: id) { precondition(id == uuid.lowercasedString, "reported id not lower-case") }
        guard case .success(let write) = change.change else { return }
        switch write {
        case .createCategory(let draft), .updateCategory(let draft):
            checkName(draft.name)
            if let icon = draft.icon { checkURL(icon) }
            [draft.createdAt, draft.updatedAt].compactMap { $0 }.forEach(checkTimestamp)
        case .createLocation(let draft), .updateLocation(let draft):
            checkName(draft.name)
            precondition((-90.0...90.0).contains(draft.latitude) && (-180.0...180.0).contains(draft.longitude), "coordinates")
            draft.imageURLs.forEach(checkURL)
            [draft.createdAt, draft.updatedAt].compactMap { $0 }.forEach(checkTimestamp)
        case .patchCategory(let patch):
            precondition(!patch.fields.isEmpty, "a patch without a field")
            patch.name.map(checkName)
            patch.icon.map(checkURL)
            patch.updatedAt.map(checkTimestamp)
        case .patchLocation(let patch):
            precondition(!patch.fields.isEmpty, "a patch without a field")
            precondition((patch.latitude == nil) == (patch.longitude == nil), "one coordinate alone")
            patch.name.map(checkName)
            if let latitude = patch.latitude, let longitude = patch.longitude {
                precondition((-90.0...90.0).contains(latitude) && (-180.0...180.0).contains(longitude), "coordinates")
            }
            patch.imageURLs?.forEach(checkURL)
            patch.updatedAt.map(checkTimestamp)
        case .deleteCategory(_, let options), .deleteLocation(_, let options):
            if let updatedAt = options.updatedAt { checkTimestamp(updatedAt) }
        }
    }

    static func decodeCursor(_ text: String) {
        guard let cursor = try? SyncCursor(encoded: text, userID: userID) else { return }
        let again = cursor.encoded(for: userID)
        precondition((try? SyncCursor(encoded: again, userID: userID)) == cursor, "cursor does not round-trip")
    }

    static func checkName(_ name: String) {
        let scalars = name.unicodeScalars
        precondition(!scalars.isEmpty && scalars.count <= 255, "name of \(scalars.count) code points")
        precondition(!scalars.contains(where: ControlCharacter.isControl), "control character in a name")
        precondition(
            scalars.first.map { !$0.properties.isWhitespace } ?? false
                && scalars.last.map { !$0.properties.isWhitespace } ?? false, "name not trimmed")
    }

    /// An accepted timestamp renders as the API's output form (`YYYY-MM-DDTHH:MM:SS.sssZ`), which
    /// reads back as the same instant: the server echoes it in the record.
    static func checkTimestamp(_ timestamp: Timestamp) {
        let text = timestamp.rfc3339
        precondition(text.utf8.count == 24, "timestamp renders as \(text)")
        precondition(Timestamp(rfc3339: text) == timestamp, "timestamp \(text) does not read back")
    }

    static func checkURL(_ url: String) {
        precondition(url.unicodeScalars.count <= 2048, "URL over 2048 code points")
        precondition(url.lowercased().hasPrefix("https://"), "URL is not https")
        precondition(!url.unicodeScalars.contains { $0.properties.isWhitespace || ControlCharacter.isControl($0) }, "whitespace in URL")
    }

    static func forEachString(in value: JSONValue, _ body: (String) -> Void) {
        switch value {
        case .string(let text): body(text)
        case .array(let elements): elements.forEach { forEachString(in: $0, body) }
        case .object(let object): object.forEach { forEachString(in: $0.value, body) }
        default: break
        }
    }
}
