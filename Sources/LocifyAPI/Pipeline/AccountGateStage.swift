import Locify

/// The account gate as a stage of the pipeline, for a request that cannot be read: a `/v1`
/// handler decodes its request (the wire's rules: JSON, fields, UUIDs, query) before any service
/// runs, and a decoding error is answered only after the gate passed (it also provisions a new
/// account), so "a revoked token is 401 before any 400" (openapi.yaml) holds there too. A request
/// that decodes runs its service, which reaches the user's data only through the door
/// (`Accounts`: the gate first, folded into a read's statement so it stays one round trip), and
/// applies the domain's own rules inside it, after the gate.
struct AccountGateStage: Sendable {
    /// The door, whose `admit` runs the gate alone: throws `LocifyError.tokenRevoked` for a token
    /// issued before the account's deletion.
    let accounts: Accounts

    /// The call `handler` decoded from `request`; its decoding error once the gate passed.
    func decode(_ request: RouteRequest, with handler: (RouteRequest) throws -> RouteCall) throws -> RouteCall {
        do {
            return try handler(request)
        } catch {
            try accounts.admit(request.caller)
            throw error
        }
    }
}
