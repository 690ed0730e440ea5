# Sourced by scripts/test and scripts/sanitizers: how the whole suite is run.
#
# The plain suite runs as three `swift test` processes side by side over one build: the API suites
# (LocifyAPITests), the other server suites, and LocifyClient's. Most server tests block a thread
# of Swift's cooperative pool (one thread per core) while they wait on sockets, PostgreSQL or a
# child process, so one process runs about two of them at a time and leaves the cores mostly idle
# (on 2 cores: 188 s for 106 s of CPU). Three processes have three pools. LocifyClient's async
# tests need a pool of their own anyway: beside the server's blocking tests they starved for
# minutes.
#
# Under a sanitizer the suite runs in two processes one after the other, the server's suites and
# then LocifyClient's: there the tests are CPU-bound (TSan's client suites used 1.6 cores alone),
# and side by side on 2 cores the load-sensitive ones timed out (the connection floods, the client's
# scheduler tests).
locify_test_parts=(api server client)
locify_sanitized_test_parts=(all-server client)

# Sets `part_arguments` to the `swift test` arguments that select a part.
locify_test_part_arguments() {
    local api='^LocifyAPITests\.' client='^LocifyClient(Sample)?Tests\.'
    case "$1" in
    api) part_arguments=(--filter "$api") ;;
    server) part_arguments=(--skip "$api" --skip "$client") ;;
    all-server) part_arguments=(--skip "$client") ;;
    client) part_arguments=(--filter "$client") ;;
    esac
}

# swift_test_parts side-by-side|one-by-one LOG_PREFIX FIXED_ARGS... -- CALLER_ARGS...: the tests,
# already built, run with `swift test --skip-build FIXED_ARGS... CALLER_ARGS...` when the caller
# gave arguments; else the parts above (side by side: the plain suite's three; one by one: the
# sanitized suite's two), each `swift test --skip-build FIXED_ARGS... <part>` writing to
# LOG_PREFIX-<part>.log. The parts' output is printed part by part once all have finished.
# Returns the first failing part's status.
swift_test_parts() {
    local how=$1 prefix=$2 fixed=() status=0
    shift 2
    while [[ $# -gt 0 && $1 != -- ]]; do fixed+=("$1"); shift; done
    [[ $# -gt 0 ]] && shift
    if [[ $# -gt 0 ]]; then
        swift test --skip-build "${fixed[@]}" "$@" || status=$?
        return "$status"
    fi
    local parts=("${locify_test_parts[@]}")
    [[ $how == side-by-side ]] || parts=("${locify_sanitized_test_parts[@]}")
    local part pids=() codes=() part_arguments=() index code
    for index in "${!parts[@]}"; do
        locify_test_part_arguments "${parts[$index]}"
        # --ignore-lock: SwiftPM locks the scratch folder for a whole `swift test`, which would
        # run the parts one after the other; with --skip-build they only read it.
        swift test --skip-build --ignore-lock "${fixed[@]}" "${part_arguments[@]}" >"$prefix-${parts[$index]}.log" 2>&1 &
        pids[index]=$!
        if [[ $how != side-by-side ]]; then
            codes[index]=0
            wait "${pids[$index]}" || codes[index]=$?
        fi
    done
    for index in "${!parts[@]}"; do
        if [[ -z ${codes[$index]:-} ]]; then
            codes[index]=0
            wait "${pids[$index]}" || codes[index]=$?
        fi
        code=${codes[$index]}
        part=${parts[$index]}
        locify_test_part_arguments "$part"
        echo "=== swift test, part $part (${part_arguments[*]}): exit $code"
        cat "$prefix-$part.log"
        [[ $status -ne 0 ]] || status=$code
    done
    return "$status"
}
