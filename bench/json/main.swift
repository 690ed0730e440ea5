import Foundation
import JSON

// JSONBenchmark: this repository's JSON target against Foundation's JSONSerialization,
// JSONDecoder and JSONEncoder on the documents the server handles most: a page of locations as
// `GET /v1/locations` renders it, and a Firebase ID-token payload as `IDTokenVerifier` reads it.
// `--probe` prints instead how each parser treats the inputs the strict parser exists for.
// Not a test: nothing here asserts a speed. Build in release mode (bench/json/run does).

struct Options {
    var rounds = 9
    var batchMilliseconds = 100
    var pageSize = 50
    var probe = false

    init(arguments: [String]) throws {
        var remaining = arguments[...]
        while let argument = remaining.popFirst() {
            func value() throws -> Int {
                guard let text = remaining.popFirst(), let number = Int(text), number > 0 else {
                    throw UsageError(message: "\(argument) needs a positive integer")
                }
                return number
            }
            switch argument {
            case "--rounds": rounds = try value()
            case "--batch-ms": batchMilliseconds = try value()
            case "--page-size": pageSize = try value()
            case "--probe": probe = true
            case "--help", "-h": throw UsageError(message: nil)
            default: throw UsageError(message: "unknown argument \(argument)")
            }
        }
    }
}

struct UsageError: Error {
    let message: String?
    static let usage = """
        usage: JSONBenchmark [--rounds N] [--batch-ms MS] [--page-size N] [--probe]
          --rounds      timed batches per case, interleaved across cases (default 9); the median is reported
          --batch-ms    target length of one batch in milliseconds (default 100)
          --page-size   locations in the list response (default 50)
          --probe       print how each parser treats duplicate keys, deep nesting and numbers, then exit
        """
}

/// CPU time of the calling thread, in nanoseconds. The machine is shared: wall-clock time would
/// count the time other processes hold the cores, the thread's CPU time counts only the work.
func threadCPUNanoseconds() -> UInt64 {
    var time = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time)
    return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
}

/// Runs `body` `iterations` times; returns the thread CPU nanoseconds it took and a checksum.
@inline(never)
func timeBatch(_ body: () throws -> Int, iterations: Int) rethrows -> (nanoseconds: UInt64, checksum: Int) {
    var checksum = 0
    let start = threadCPUNanoseconds()
    for _ in 0..<iterations {
        checksum &+= try body()
    }
    return (threadCPUNanoseconds() - start, checksum)
}

func loadAverage() -> String {
    guard let text = try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8) else { return "unknown" }
    return text.split(separator: " ").prefix(3).joined(separator: " ")
}

func formatMicroseconds(_ nanoseconds: Double) -> String {
    String(format: nanoseconds < 10_000 ? "%.2f" : "%.1f", nanoseconds / 1000)
}

func runBenchmark(_ options: Options) throws {
    let cases = try Cases.all(pageSize: options.pageSize)
    let loadBefore = loadAverage()
    var checksum = 0

    // Calibrate: iterations per batch so a batch lasts about `batchMilliseconds` (after warm-up).
    var iterations: [Int] = []
    for benchmarkCase in cases {
        _ = try timeBatch(benchmarkCase.run, iterations: 10)
        var count = 16
        while true {
            let (elapsed, sum) = try timeBatch(benchmarkCase.run, iterations: count)
            checksum &+= sum
            if elapsed >= 20_000_000 || count >= 1 << 24 {
                let perOperation = Double(elapsed) / Double(count)
                iterations.append(max(1, Int(Double(options.batchMilliseconds) * 1_000_000 / perOperation)))
                break
            }
            count *= 4
        }
    }

    // Rounds interleave the cases, so a change in the machine's load hits all of them alike.
    var samples = Array(repeating: [Double](), count: cases.count)
    for _ in 0..<options.rounds {
        for (index, benchmarkCase) in cases.enumerated() {
            let (elapsed, sum) = try timeBatch(benchmarkCase.run, iterations: iterations[index])
            checksum &+= sum
            samples[index].append(Double(elapsed) / Double(iterations[index]))
        }
    }

    func median(_ values: [Double]) -> Double {
        let sorted = values.sorted()
        return sorted.count % 2 == 1
            ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
    }

    print(
        "JSONBenchmark: \(options.rounds) rounds of ~\(options.batchMilliseconds) ms of thread CPU time per case; "
            + "CPU time per operation, median and minimum over the rounds")
    print("cores online: \(ProcessInfo.processInfo.activeProcessorCount); load average before: \(loadBefore), after: \(loadAverage())")
    print("")
    print("| workload | implementation | bytes | median µs/op | min µs/op | ours / this (medians) |")
    print("|---|---|---:|---:|---:|---:|")
    var oursByWorkload: [String: Double] = [:]
    for (index, benchmarkCase) in cases.enumerated() {
        let middle = median(samples[index])
        let fastest = samples[index].min() ?? middle
        let isOurs =
            benchmarkCase.implementation == Implementation.ours
            || benchmarkCase.implementation == Implementation.oursTyped
        if isOurs { oursByWorkload[benchmarkCase.workload] = middle }
        let ratio = isOurs ? "-" : oursByWorkload[benchmarkCase.workload].map { String(format: "%.2f", $0 / middle) } ?? "?"
        print(
            "| \(benchmarkCase.workload) | \(benchmarkCase.implementation) | \(benchmarkCase.bytes) | "
                + "\(formatMicroseconds(middle)) | \(formatMicroseconds(fastest)) | \(ratio) |")
    }
    print("")
    print("(checksum \(checksum))")
}

do {
    let options = try Options(arguments: Array(CommandLine.arguments.dropFirst()))
    if options.probe {
        Probe.run()
    } else {
        try runBenchmark(options)
    }
} catch let error as UsageError {
    if let message = error.message {
        FileHandle.standardError.write(Data("JSONBenchmark: \(message)\n\(UsageError.usage)\n".utf8))
        exit(2)
    }
    print(UsageError.usage)
} catch {
    FileHandle.standardError.write(Data("JSONBenchmark: \(error)\n".utf8))
    exit(1)
}
