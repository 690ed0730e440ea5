/// The one "is a control character" rule of the server's text checks (Unicode general category
/// Cc: C0, DEL and C1), shared by the token, storage-name, user-text and query-parameter checks.
/// HTTP's own byte rules (field values allow HTAB and obs-text) are the HTTP grammar's, kept in
/// `HTTPServer`.
public enum ControlCharacter {
    /// True for U+0000-U+001F and U+007F-U+009F (general category Cc).
    @inlinable
    public static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value)
    }
}
