#if canImport(Glibc)
import Glibc
#endif
import Foundation

/// The entry point shared by the fuzz targets: built with `-sanitize=fuzzer,address -DFUZZING`
/// (by `scripts/fuzz`) it hands control to libFuzzer; in a normal build it replays inputs, so
/// `swift build` keeps working and a crash input can be rerun without the fuzzing toolchain.
///
/// Replay mode: every argument is a file or a folder of files, each run once through the
/// target; with no argument, the target's committed corpus `Fuzz/corpus/<name>/` and its
/// regression inputs `Fuzz/regressions/<name>/` are replayed.
public enum FuzzHarness {
    /// One fuzz input, checked by the target; a broken invariant traps (a libFuzzer crash).
    public typealias Body = (UnsafeRawBufferPointer) -> Void

    /// Runs `body` under libFuzzer (fuzzing builds) or over the given inputs (normal builds).
    /// `name` is the target's corpus folder name.
    public static func main(name: String, _ body: @escaping Body) -> Never {
        registeredBody = body
        #if FUZZING
        var argc = CommandLine.argc
        var argv = CommandLine.unsafeArgv
        exit(LLVMFuzzerRunDriver(&argc, &argv, fuzzOneInput))
        #else
        exit(replay(name: name, arguments: Array(CommandLine.arguments.dropFirst()), body))
        #endif
    }

    /// The body of the running target. Set once in `main` before any input runs; libFuzzer and
    /// the replayer call it from that one thread only.
    nonisolated(unsafe) static var registeredBody: Body?

    /// Replays files and folders; returns the process exit status.
    static func replay(name: String, arguments: [String], _ body: Body) -> Int32 {
        var paths = arguments
        if paths.isEmpty {
            let fuzzFolder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            paths = ["corpus", "regressions"].map { fuzzFolder.appendingPathComponent($0).appendingPathComponent(name).path }
                .filter { FileManager.default.fileExists(atPath: $0) }
        }
        var count = 0
        for path in paths {
            for file in files(at: path) {
                guard let data = FileManager.default.contents(atPath: file) else {
                    FileHandle.standardError.write(Data("\(name): cannot read \(file)\n".utf8))
                    return 1
                }
                Array(data).withUnsafeBytes { body($0) }
                count += 1
            }
        }
        print("\(name): replayed \(count) inputs without a crash")
        return 0
    }

    /// The regular files at `path` (the file itself, or a folder's files sorted by name).
    private static func files(at path: String) -> [String] {
        var isFolder: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isFolder) else { return [] }
        guard isFolder.boolValue else { return [path] }
        let names = (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []
        return names.sorted().filter { !$0.hasPrefix(".") }.map { path + "/" + $0 }
    }
}

/// libFuzzer's per-input callback (also required by name when libFuzzer's own `main` is linked).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    guard let body = FuzzHarness.registeredBody else { return 0 }
    body(UnsafeRawBufferPointer(start: data, count: size))
    return 0
}

#if FUZZING
/// libFuzzer's driver (in `libclang_rt.fuzzer`), run from our own `main` so SwiftPM's entry
/// point of an executable target stays in charge.
@_silgen_name("LLVMFuzzerRunDriver")
func LLVMFuzzerRunDriver(
    _ argc: UnsafeMutablePointer<CInt>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>>,
    _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt
) -> CInt
#endif
