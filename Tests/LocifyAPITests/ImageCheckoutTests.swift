import Foundation
import Testing
import TestSupport

/// Issue 23, item 6: the image builds outside this machine. `Package.resolved` is not tracked (its
/// pins named commit ids that exist only in this environment's package copies) and the Dockerfile
/// resolves within Package.swift's requirements; `scripts/check-image` fails when either slips back.
@Suite("Image: the checkout pins nothing only one machine can resolve")
struct ImageCheckoutTests {
    /// A scratch git repository holding a copy of `scripts/check-image` and of the Dockerfile.
    struct ScratchCheckout {
        let root: URL

        init() throws {
            root = FileManager.default.temporaryDirectory.appendingPathComponent("locify-checkout-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: root.appendingPathComponent("scripts"), withIntermediateDirectories: true)
            for file in ["scripts/check-image", "Dockerfile"] {
                try FileManager.default.copyItem(
                    at: ProjectPaths.root.appendingPathComponent(file), to: root.appendingPathComponent(file))
            }
            try Data("{\"pins\": [], \"version\": 3}\n".utf8).write(to: root.appendingPathComponent("Package.resolved"))
            _ = try Self.run("git", ["init", "-q"], in: root)
        }

        func git(_ arguments: String...) throws {
            let result = try Self.run("git", arguments, in: root)
            #expect(result.status == 0, "git \(arguments): \(result.output)")
        }

        /// `scripts/check-image --checkout-only` in this checkout: its exit status and output.
        func checkCheckout() throws -> (status: Int32, output: String) {
            try Self.run(root.appendingPathComponent("scripts/check-image").path, ["--checkout-only"], in: root)
        }

        func remove() {
            try? FileManager.default.removeItem(at: root)
        }

        static func run(_ executable: String, _ arguments: [String], in folder: URL) throws -> (status: Int32, output: String) {
            let run = try runProcess(["/usr/bin/env", "-C", folder.path, executable] + arguments, mergingStandardError: true)
            return (run.status, run.standardOutput)
        }
    }

    @Test("this checkout passes: Package.resolved untracked, the Dockerfile does not force resolved versions")
    func thisCheckoutPasses() throws {
        let result = try ScratchCheckout.run(
            ProjectPaths.root.appendingPathComponent("scripts/check-image").path, ["--checkout-only"], in: ProjectPaths.root)
        #expect(result.status == 0, "\(result.output)")
        let gitignore = try String(contentsOf: ProjectPaths.root.appendingPathComponent(".gitignore"), encoding: .utf8)
        #expect(gitignore.split(separator: "\n").contains("/Package.resolved"))
    }

    @Test("scripts/check-image fails while Package.resolved is tracked, and passes once it is not")
    func trackedPinsFail() throws {
        let checkout = try ScratchCheckout()
        defer { checkout.remove() }
        // -f: git may be set to ignore Package.resolved everywhere (it is on the build machines).
        try checkout.git("add", "-f", "Package.resolved")
        let tracked = try checkout.checkCheckout()
        #expect(tracked.status == 1, "\(tracked.output)")
        #expect(tracked.output.contains("Package.resolved is tracked"), "\(tracked.output)")
        try checkout.git("rm", "-q", "--cached", "Package.resolved")
        let untracked = try checkout.checkCheckout()
        #expect(untracked.status == 0, "\(untracked.output)")
    }

    @Test("scripts/check-image fails on a Dockerfile that forces resolved versions or copies Package.resolved")
    func dockerfilePinsFail() throws {
        let checkout = try ScratchCheckout()
        defer { checkout.remove() }
        let dockerfile = checkout.root.appendingPathComponent("Dockerfile")
        let original = try String(contentsOf: dockerfile, encoding: .utf8)
        for (bad, named) in [
            (
                original.replacingOccurrences(of: "RUN swift package resolve", with: "RUN swift package resolve --force-resolved-versions"),
                "--force-resolved-versions"
            ),
            (original.replacingOccurrences(of: "COPY Package.swift ./", with: "COPY Package.swift Package.resolved ./"), "Package.resolved"),
        ] {
            #expect(bad != original, "the Dockerfile still has the line this test rewrites")
            try Data(bad.utf8).write(to: dockerfile)
            let result = try checkout.checkCheckout()
            #expect(result.status == 1 && result.output.contains(named), "\(result.output)")
        }
    }
}
