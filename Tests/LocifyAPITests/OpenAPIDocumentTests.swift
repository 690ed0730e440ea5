import Foundation
import HTTPServer
import LocifyAPI
import LocifyRules
import Testing
import TestSupport
import TestSupportServer

/// `openapi.yaml` read line by line, just enough to list its operations: the document keeps
/// paths at two spaces of indentation under `paths:`, operations at four and status codes at
/// eight, so no YAML library is needed.
struct OpenAPIOutline {
    struct Operation: Hashable, CustomStringConvertible {
        var method: String
        var path: String
        var description: String { "\(method) \(path)" }
    }

    /// Documented status codes by operation.
    private(set) var statuses: [Operation: Set<String>] = [:]
    private(set) var operationIDs: [String] = []
    /// Operations that document a request body.
    private(set) var withBody: Set<Operation> = []

    var operations: Set<Operation> { Set(statuses.keys) }

    static let methods: Set<String> = ["get", "put", "post", "delete", "patch", "head", "options", "trace"]

    init(_ text: String) {
        var inPaths = false
        var path: String?
        var operation: Operation?
        var inResponses = false
        for line in text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init) {
            let indent = line.prefix { $0 == " " }.count
            let content = line.dropFirst(indent)
            if content.isEmpty || content.hasPrefix("#") { continue }
            if indent == 0 {
                inPaths = content == "paths:"
                path = nil
                operation = nil
                continue
            }
            guard inPaths else { continue }
            if indent == 2, content.hasPrefix("/"), content.hasSuffix(":") {
                path = String(content.dropLast())
                operation = nil
            } else if indent == 4, let path, content.hasSuffix(":"), Self.methods.contains(String(content.dropLast())) {
                let current = Operation(method: content.dropLast().uppercased(), path: path)
                statuses[current] = []
                operation = current
                inResponses = false
            } else if indent == 4 {
                operation = nil
            } else if indent == 6, let operation {
                inResponses = content.hasPrefix("responses:")
                if content.hasPrefix("operationId:") {
                    operationIDs.append(content.dropFirst("operationId:".count).trimmingCharacters(in: .whitespaces))
                }
                if content.hasPrefix("requestBody:") { withBody.insert(operation) }
            } else if indent == 8, inResponses, let operation, let code = content.wholeMatch(of: /'(\d{3})':.*/)?.1 {
                statuses[operation, default: []].insert(String(code))
            }
        }
    }
}

@Suite("openapi.yaml describes exactly the server's routes")
struct OpenAPIDocumentTests {
    private static func outline() throws -> OpenAPIOutline {
        let url = ProjectPaths.root.appendingPathComponent("openapi.yaml")
        return OpenAPIOutline(try String(contentsOf: url, encoding: .utf8))
    }

    @Test("every route of the server is in openapi.yaml, and every documented operation is a route")
    func routesMatchTheDocument() throws {
        let server = try TestServer.start(.inProcess)
        defer { server.stop() }
        let routes = Set(server.application.routes.map { OpenAPIOutline.Operation(method: $0.method.rawValue, path: $0.pattern) })
        let documented = try Self.outline().operations
        #expect(routes.filter { $0.path.hasPrefix("/v1/") }.count >= 17)
        #expect(routes.subtracting(documented).isEmpty, "routes missing from openapi.yaml: \(routes.subtracting(documented))")
        #expect(documented.subtracting(routes).isEmpty, "documented operations the server lacks: \(documented.subtracting(routes))")
    }

    @Test("every documented operation answers (not 404/405) on the running server")
    func documentedOperationsAnswer() throws {
        let server = try TestServer.start(.inProcess)
        defer { server.stop() }
        for operation in try Self.outline().operations {
            let path = operation.path.replacingOccurrences(of: "{id}", with: UUID().uuidString)
            // No token: /v1 operations stop at 401, which proves the route matched (404 and 405 come first).
            let response = try server.request(operation.method, path, body: Array("{}".utf8), headers: [("Content-Type", "application/json")])
            #expect(response.status != 404, "\(operation)")
            #expect(response.status != 405, "\(operation)")
            if path.hasPrefix("/v1/") { #expect(response.status == 401, "\(operation)") }
        }
    }

    @Test("every /v1 operation documents the statuses any /v1 request can get")
    func commonStatusesDocumented() throws {
        let outline = try Self.outline()
        for (operation, statuses) in outline.statuses {
            let common: Set<String> =
                operation.path.hasPrefix("/v1/") ? ["401", "405", "413", "429", "500", "503"] : ["405", "413", "500", "503"]
            #expect(common.isSubset(of: statuses), "\(operation) lacks \(common.subtracting(statuses))")
            #expect(statuses.contains { $0.hasPrefix("2") }, "\(operation) documents its success")
        }
    }

    @Test("operations that read a body document 400 and 415; writes document 409; path ids document 400 and 404")
    func bodyAndConflictStatusesDocumented() throws {
        let outline = try Self.outline()
        #expect(outline.withBody.count == 12)
        for (operation, statuses) in outline.statuses where operation.path.hasPrefix("/v1/") {
            if outline.withBody.contains(operation) {
                #expect(statuses.isSuperset(of: ["400", "415"]), "\(operation)")
            }
            if operation.path.hasPrefix("/v1/categories") || operation.path.hasPrefix("/v1/locations"), operation.method != "GET" {
                #expect(statuses.contains("409"), "\(operation)")
            }
            if operation.path.hasSuffix("{id}") {
                #expect(statuses.isSuperset(of: ["400", "404"]), "\(operation)")
            }
        }
    }

    @Test("every operation has a unique operationId")
    func operationIDs() throws {
        let outline = try Self.outline()
        #expect(outline.operationIDs.count == outline.operations.count)
        #expect(Set(outline.operationIDs).count == outline.operationIDs.count)
    }

    @Test("every error code of openapi.yaml is in the document's Error schema")
    func errorCodes() throws {
        let text = try String(contentsOf: ProjectPaths.root.appendingPathComponent("openapi.yaml"), encoding: .utf8)
        let codes = ErrorCode.allCases.map(\.rawValue)
        #expect(codes == (1...12).map { String(format: "E%03d", $0) } + ["S001", "S002", "S003"])
        let enumLine = "enum: [\(codes.joined(separator: ", "))]"
        #expect(text.contains(enumLine))
    }

    @Test("the shared error table (LocifyRules' ErrorCode) is openapi.yaml's, row for row, and APIError answers with its statuses")
    func errorTable() throws {
        let text = try String(contentsOf: ProjectPaths.root.appendingPathComponent("openapi.yaml"), encoding: .utf8)
        for code in ErrorCode.allCases {
            #expect(text.contains("    | \(code.rawValue) | \(code.httpStatus) | \(code.meaning) |\n"), "\(code.rawValue)")
            #expect(APIError(code, message: "m").status.code == code.httpStatus)
        }
    }
}
