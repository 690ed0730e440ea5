import Glibc

/// Writes `text` to standard error whole: `write(2)` again after a short write or EINTR; a write
/// that fails otherwise is dropped (there is nowhere left to report it).
func writeToStandardError(_ text: String) {
    let bytes = Array(text.utf8)
    bytes.withUnsafeBytes { buffer in
        var offset = 0
        while offset < buffer.count {
            let written = write(2, buffer.baseAddress.map { $0 + offset }, buffer.count - offset)
            if written < 0 && errno == EINTR { continue }
            if written <= 0 { return }
            offset += written
        }
    }
}
