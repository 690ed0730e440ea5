import HTTPServer
import Locify

/// The handlers of `/v1/users/me` (openapi.yaml).
struct UserRoutes: Sendable {
    let services: LocifyServices
    /// Called after an account deletion committed, so its clean-up starts at once.
    let cleanupQueued: @Sendable () -> Void

    func register(in router: inout Router<Route>) {
        let users = services.users
        let cleanupQueued = self.cleanupQueued
        router.addAuthenticated(.GET, "/v1/users/me") { caller in
            let profile = try users.profile(caller)
            return .json { $0.profile(profile) }
        }
        router.addAuthenticated(
            .PUT, "/v1/users/me", takesBody: true,
            decode: { request in try FieldReader(body: request.jsonBody()).requiredString("name") }
        ) { name, caller in
            let profile = try users.update(caller, name: name)
            return .json { $0.profile(profile) }
        }
        router.addAuthenticated(.DELETE, "/v1/users/me") { caller in
            try users.delete(caller)
            cleanupQueued()
            return .noContent
        }
    }
}
