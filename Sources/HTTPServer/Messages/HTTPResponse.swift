/// A response the application returns. The server adds `Content-Length`, `Date` and, when it
/// closes the connection, `Connection: close`; it drops the body of responses to HEAD.
public struct HTTPResponse: Sendable, Equatable {
    /// The status line's code and reason.
    public var status: HTTPStatus
    /// Header fields to send, in order. `Content-Length` and `Transfer-Encoding` set here are
    /// replaced by the server (except a `Content-Length` on a response to HEAD, which is kept).
    public var headers: HTTPHeaders
    /// The content. Ignored for 1xx, 204 and 304.
    public var body: [UInt8]

    /// Creates a response.
    public init(status: HTTPStatus, headers: HTTPHeaders = [:], body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = body
    }
}
