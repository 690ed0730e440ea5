# Sourced by scripts/test and scripts/sanitizers: how the whole suite is run.
#
# The whole suite runs as three `swift test` processes side by side over one build: the API suites
# (LocifyAPITests), the other server suites, and LocifyClient's. Most server tests block a thread
# of Swift's cooperative pool (one thread per core) while they wait on sockets, PostgreSQL or a
# child process, so one process runs about two of them at a time and leaves the cores mostly idle
# (on 2 cores: 188 s for 106 s of CPU). Three processes have three pools. LocifyClient's async
# tests need a pool of their own anyway: beside the server's blocking tests they starved for
# minutes.
locify_test_parts=(api server client)

# Sets `part_arguments` to the `swift test` arguments that select a part.
locify_test_part_arguments() {
    local api='^LocifyAPITests\.' client='^LocifyClient(Sample)?Tests\.'
    case "$1" in
    api) part_arguments=(--filter "$api") ;;
    server) part_arguments=(--skip "$api" --skip "$client") ;;
    client) part_arguments=(--filter "$client") ;;
    esac
}

# swift_test_parts LOG_PREFIX FIXED_ARGS... -- CALLER_ARGS...: the tests, already built, run with
# `swift test --skip-build FIXED_ARGS... CALLER_ARGS...` when the caller gave arguments; else the
# three parts above side by side, each `swift test --skip-build FIXED_ARGS... <part>` writing to
# LOG_PREFIX-<part>.log. The parts' output is printed part by part once all have finished.
# Returns the first failing part's status.
swift_test_parts() {
    local prefix=$1 fixed=() status=0
    shift
    while [[ $# -gt 0 && $1 != -- ]]; do fixed+=("$1"); shift; done
    [[ $# -gt 0 ]] && shift
    if [[ $# -gt 0 ]]; then
        swift test --skip-build "${fixed[@]}" "$@" || status=$?
        return "$status"
    fi
    local part pids=() part_arguments=()
    for part in "${locify_test_parts[@]}"; do
        locify_test_part_arguments "$part"
        # --ignore-lock: SwiftPM locks the scratch folder for a whole `swift test`, which would
        # run the parts one after the other; with --skip-build they only read it.
        swift test --skip-build --ignore-lock "${fixed[@]}" "${part_arguments[@]}" >"$prefix-$part.log" 2>&1 &
        pids+=($!)
    done
    local index code
    for index in "${!pids[@]}"; do
        code=0
        wait "${pids[$index]}" || code=$?
        part=${locify_test_parts[$index]}
        locify_test_part_arguments "$part"
        echo "=== swift test, part $part (${part_arguments[*]}): exit $code"
        cat "$prefix-$part.log"
        [[ $status -ne 0 ]] || status=$code
    done
    return "$status"
}
