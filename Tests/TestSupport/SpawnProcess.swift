import Foundation
import Glibc

/// Starts `command` (absolute path first) with standard input from /dev/null and standard output
/// and error into `logPath`, and returns its process id. `environment` nil passes this process's
/// own. posix_spawn rather than `Process`, which may never notice the exit of a program whose
/// children live on (`pg_ctl start`).
package func spawnProcess(_ command: [String], environment: [String: String]? = nil, logPath: String) throws -> pid_t {
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
    posix_spawn_file_actions_addopen(&actions, 1, logPath, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
    posix_spawn_file_actions_adddup2(&actions, 1, 2)
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

/// A program the tests need could not be started (missing binary, no permission).
package struct SpawnProcessError: Error, CustomStringConvertible {
    /// Which program and the error posix_spawn returned.
    package let description: String

    init(_ description: String) { self.description = description }
}
