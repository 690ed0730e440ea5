import HTTPServer
import Testing

@Suite("Router")
struct RouterTests {
    func router() -> Router<String> {
        var router = Router<String>()
        router.add(.GET, "/", "root")
        router.add(.GET, "/health", "health")
        router.add(.GET, "/v1/locations", "list")
        router.add(.POST, "/v1/locations", "create")
        router.add(.GET, "/v1/locations/{id}", "get")
        router.add(.PUT, "/v1/locations/{id}", "put")
        router.add(.DELETE, "/v1/locations/{id}", "delete")
        router.add(.GET, "/v1/locations/search", "search")
        router.add(.GET, "/v1/users/{user}/items/{item}", "item")
        router.add(.GET, "/a/{x}/c", "param-then-c")
        router.add(.GET, "/a/b/d", "literal-b-d")
        return router
    }

    func handler(_ match: RouteMatch<String>) -> String? {
        if case .found(let handler, _, _) = match { return handler }
        return nil
    }

    @Test("literal paths and methods select their handler and report the pattern")
    func literal() {
        let router = router()
        #expect(handler(router.match(.GET, path: "/health")) == "health")
        #expect(handler(router.match(.POST, path: "/v1/locations")) == "create")
        #expect(handler(router.match(.GET, path: "/")) == "root")
        if case .found(_, _, let pattern) = router.match(.GET, path: "/v1/locations/abc") {
            #expect(pattern == "/v1/locations/{id}")
        } else {
            Issue.record("expected a match")
        }
    }

    @Test("a literal segment beats a parameter segment")
    func literalBeatsParameter() {
        let router = router()
        #expect(handler(router.match(.GET, path: "/v1/locations/search")) == "search")
        #expect(handler(router.match(.GET, path: "/v1/locations/other")) == "get")
    }

    @Test("matching backtracks from a literal to a parameter when the literal branch dead-ends")
    func backtracking() {
        let router = router()
        #expect(handler(router.match(.GET, path: "/a/b/c")) == "param-then-c")
        #expect(handler(router.match(.GET, path: "/a/b/d")) == "literal-b-d")
    }

    @Test("parameters are captured and percent-decoded; + stays a plus")
    func parameters() {
        let router = router()
        guard case .found(_, let parameters, _) = router.match(.GET, path: "/v1/users/u%20one/items/a+b%2Fc%zz") else {
            Issue.record("expected a match")
            return
        }
        #expect(parameters["user"] == "u one")
        #expect(parameters["item"] == "a+b/c%zz")
        #expect(parameters["missing"] == nil)
    }

    @Test("a trailing slash is a different path, and a parameter never matches an empty segment")
    func trailingSlash() {
        let router = router()
        #expect(handler(router.match(.GET, path: "/health/")) == nil)
        #expect(handler(router.match(.GET, path: "/v1/locations/")) == nil)
        #expect(handler(router.match(.GET, path: "//health")) == nil)
    }

    @Test("HEAD matches a GET route when no HEAD route exists")
    func headFallsBackToGet() {
        var router = router()
        #expect(handler(router.match(.HEAD, path: "/health")) == "health")
        router.add(.HEAD, "/health", "head-health")
        #expect(handler(router.match(.HEAD, path: "/health")) == "head-health")
    }

    @Test("a known path with another method is 405 with sorted allowed methods, HEAD included with GET")
    func methodNotAllowed() {
        let router = router()
        guard case .methodNotAllowed(let allowed) = router.match(.PATCH, path: "/v1/locations/x") else {
            Issue.record("expected 405")
            return
        }
        #expect(allowed == [.DELETE, .GET, .HEAD, .PUT])
        guard case .methodNotAllowed(let allowedRoot) = router.match(.DELETE, path: "/v1/locations") else {
            Issue.record("expected 405")
            return
        }
        #expect(allowedRoot == [.GET, .HEAD, .POST])
    }

    @Test("unknown paths and non-origin paths are not found")
    func notFound() {
        let router = router()
        if case .notFound = router.match(.GET, path: "/nope") {} else { Issue.record("expected 404") }
        if case .notFound = router.match(.OPTIONS, path: "*") {} else { Issue.record("expected 404") }
        if case .notFound = router.match(.GET, path: "/v1") {} else { Issue.record("expected 404") }
    }

    @Test("adding the same method and pattern again replaces the handler")
    func replace() {
        var router = router()
        router.add(.GET, "/health", "health2")
        #expect(handler(router.match(.GET, path: "/health")) == "health2")
    }
}
