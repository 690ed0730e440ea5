import FoundationEssentials
import HTTPClient
import JSON
import Primitives

/// Reading Google's error bodies and retry hints.
enum GoogleResponse {
    /// The error a non-success `response` stands for: Google's message when the body has one,
    /// the retry classification of its status, and `Retry-After` when present (a date counts from
    /// `now`, unix seconds of the caller's wall clock).
    static func error(from response: TransportResponse, now: Double) -> GoogleAPIError {
        GoogleAPIError(
            status: response.status, message: message(in: response.body) ?? "HTTP \(response.status)",
            retryable: GoogleAPIError.isRetryable(status: response.status),
            retryAfter: retryAfter(response.header("Retry-After"), now: now))
    }

    /// `error.message` of `{"error": {"message": ...}}`, or an OAuth `error_description`/`error`.
    static func message(in body: [UInt8]) -> String? {
        guard let document = try? JSONParser.parse(body), let object = document.objectValue else { return nil }
        if let error = object["error"]?.objectValue, let message = error["message"]?.stringValue { return message }
        if let description = object["error_description"]?.stringValue { return description }
        return object["error"]?.stringValue
    }

    /// `Retry-After` in seconds: delta-seconds, or an IMF-fixdate relative to `now`.
    static func retryAfter(_ header: String?, now: Double) -> Double? {
        guard let text = header?.trimmingWhitespaces(), !text.isEmpty else { return nil }
        if text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) {
            return Int(text.prefix(9)).map(Double.init)
        }
        guard let date = imfFixdate(text) else { return nil }
        return max(0, date - now)
    }

    /// Parses `Sun, 06 Nov 1994 08:49:37 GMT` into unix seconds.
    static func imfFixdate(_ text: String) -> Double? {
        let parts = text.split(separator: " ")
        guard parts.count == 6, parts[5] == "GMT", let day = Int(parts[1]), let year = Int(parts[3]) else { return nil }
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        guard let monthIndex = months.firstIndex(of: String(parts[2])) else { return nil }
        let clock = parts[4].split(separator: ":")
        guard clock.count == 3, let hour = Int(clock[0]), let minute = Int(clock[1]), let second = Int(clock[2]),
            (1...31).contains(day), (0...23).contains(hour), (0...59).contains(minute), (0...60).contains(second),
            (1970...9999).contains(year)
        else { return nil }
        // Days from civil (Howard Hinnant's algorithm).
        let month = monthIndex + 1
        let shiftedYear = month <= 2 ? year - 1 : year
        let era = shiftedYear / 400
        let yearOfEra = shiftedYear - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        let days = era * 146_097 + dayOfEra - 719_468
        return Double(days * 86_400 + hour * 3_600 + minute * 60 + second)
    }
}
