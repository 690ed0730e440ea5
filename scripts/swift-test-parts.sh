# Sourced by scripts/test and scripts/sanitizers: how the whole suite is run.
#
# With no filter of the caller's, the suite is two runs of `swift test`: every suite but
# LocifyClient's, then LocifyClient's. The client's async tests need the cooperative pool (one
# thread per core); beside the server suites' blocking tests, which hold those threads for
# seconds at a time, they starved for minutes on a 2-core machine. On their own they take about
# 90 s.
locify_client_suites='^LocifyClient(Sample)?Tests\.'

# swift_test_parts FIXED_ARGS... -- CALLER_ARGS...: `swift test FIXED_ARGS... CALLER_ARGS...`
# when the caller gave arguments, else the two runs above. Returns the first failure's status.
swift_test_parts() {
    local fixed=() status=0
    while [[ $# -gt 0 && $1 != -- ]]; do fixed+=("$1"); shift; done
    [[ $# -gt 0 ]] && shift
    if [[ $# -gt 0 ]]; then
        swift test "${fixed[@]}" "$@" || status=$?
        return "$status"
    fi
    swift test "${fixed[@]}" --skip "$locify_client_suites" || status=$?
    local skip_build=(--skip-build)
    [[ " ${fixed[*]} " == *" --skip-build "* ]] && skip_build=()
    local client_status=0
    swift test "${fixed[@]}" "${skip_build[@]}" --filter "$locify_client_suites" || client_status=$?
    [[ $status -ne 0 ]] || status=$client_status
    return "$status"
}
