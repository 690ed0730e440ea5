import Foundation
import Glibc

/// Starts `command` (absolute path first) with standard input from /dev/null, standard output into
/// `logPath` and standard error into `errorPath` (or `logPath` too when nil), and returns its
/// process id. `environment` nil passes this process's own. posix_spawn rather than Foundation's
/// `Process`, which may never notice the exit of a program whose children live on (`pg_ctl
/// start`), and whose `run()` on this toolchain over-reads `/proc/self/fd` entries (an
/// AddressSanitizer report, sometimes a crash; swift-corelibs-foundation pull request 5472).
package func spawnProcess(
    _ command: [String], environment: [String: String]? = nil, logPath: String, errorPath: String? = nil
) throws -> pid_t {
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
    posix_spawn_file_actions_addopen(&actions, 1, logPath, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
    if let errorPath {
        posix_spawn_file_actions_addopen(&actions, 2, errorPath, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
    } else {
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
    }
    let arguments = command.map { strdup($0) }
    let variables = environment.map { $0.map { strdup("\($0.key)=\($0.value)") } }
    defer { (arguments + (variables ?? [])).forEach { free($0) } }
    var pid: pid_t = 0
    let spawned =
        if let variables {
            posix_spawn(&pid, command[0], &actions, nil, arguments + [nil], variables + [nil])
        } else {
            posix_spawn(&pid, command[0], &actions, nil, arguments + [nil], environ)
        }
    guard spawned == 0 else { throw SpawnProcessError("cannot start \(command[0]): error \(spawned)") }
    return pid
}

/// Waits for the child `pid` to end and returns its exit status (128 + the signal's number when a
/// signal ended it, as shells report it).
package func waitForExit(_ pid: pid_t) throws -> Int32 {
    var status: Int32 = 0
    while waitpid(pid, &status, 0) < 0 {
        guard errno == EINTR else { throw SpawnProcessError("waitpid failed: errno \(errno)") }
    }
    let signal = status & 0x7f
    return signal == 0 ? (status >> 8) & 0xff : 128 + signal
}

/// A program run to its end by `runProcess`: its exit status and what it wrote.
package struct ProcessRun: Sendable, CustomStringConvertible {
    package var status: Int32
    package var standardOutput: String
    package var standardError: String

    package var description: String {
        "status \(status), stdout \(standardOutput.debugDescription), stderr \(standardError.debugDescription)"
    }
}

/// Runs `command` (absolute path first) to its end, its output kept in temporary files (no pipe to
/// drain while it runs). With `mergingStandardError` both streams land in `standardOutput`, in
/// the order written.
package func runProcess(
    _ command: [String], environment: [String: String]? = nil, mergingStandardError: Bool = false
) throws -> ProcessRun {
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("locify-run-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: folder) }
    let outputPath = folder.appendingPathComponent("stdout").path
    let errorPath = folder.appendingPathComponent("stderr").path
    let pid = try spawnProcess(
        command, environment: environment, logPath: outputPath, errorPath: mergingStandardError ? nil : errorPath)
    let status = try waitForExit(pid)
    let read = { (path: String) in (try? String(contentsOfFile: path, encoding: .utf8)) ?? "" }
    return ProcessRun(status: status, standardOutput: read(outputPath), standardError: read(errorPath))
}

/// A program the tests need could not be started (missing binary, no permission).
package struct SpawnProcessError: Error, CustomStringConvertible {
    /// Which program and the error posix_spawn returned.
    package let description: String

    init(_ description: String) { self.description = description }
}
