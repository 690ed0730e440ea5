import Locify

/// The account gate as a stage of the pipeline, the one place of the rule "a revoked token is 401
/// before any 400" (openapi.yaml): a `/v1` handler decodes its request before any service runs,
/// and a decoding error is answered only after the gate passed (it also provisions a new
/// account). A request that decodes runs its service, whose first statement is the gate, so the
/// read path keeps its one round trip.
struct AccountGateStage: Sendable {
    /// Runs the gate alone (`UserService.admit`): throws `LocifyError.tokenRevoked` for a token
    /// issued before the account's deletion.
    let admit: @Sendable (Caller) throws -> Void

    /// The call `handler` decoded from `request`; its decoding error once the gate passed.
    func decode(_ request: RouteRequest, with handler: (RouteRequest) throws -> RouteCall) throws -> RouteCall {
        do {
            return try handler(request)
        } catch {
            try admit(request.caller)
            throw error
        }
    }
}
