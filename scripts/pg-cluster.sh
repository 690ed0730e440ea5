#!/usr/bin/env bash
# A private PostgreSQL cluster in a folder, for tests (throwaway) and development (persistent).
#
# As a command:
#   scripts/pg-cluster.sh start DIR    create the cluster in DIR if needed, start it, print its DATABASE_URL
#   scripts/pg-cluster.sh stop DIR     stop it (fast shutdown)
#   scripts/pg-cluster.sh url DIR      print the DATABASE_URL of the cluster in DIR
#   scripts/pg-cluster.sh env DIR      print `export DATABASE_URL=... LOCIFY_PG_BIN=...` lines for eval
#   scripts/pg-cluster.sh remove DIR   stop it and delete DIR
#   scripts/pg-cluster.sh bindir       print the PostgreSQL binaries folder (installing PostgreSQL if missing)
# Sourced (`source scripts/pg-cluster.sh`), it defines the pg_cluster_* functions used below.
#
# The cluster listens on 127.0.0.1 on a free port and on a socket inside DIR, trusts local
# connections as user `postgres`, and trades durability for speed (fsync=off). As root, initdb and
# pg_ctl run as the `postgres` user (PostgreSQL refuses root), so DIR is handed to that user.
# Progress goes to stderr; only the requested value goes to stdout.

pg_cluster_log() {
    echo "pg-cluster: $*" >&2
}

# Runs a command as root: directly when root, else through sudo when there is one.
pg_cluster_as_root() {
    if [[ $(id -u) -eq 0 ]]; then
        "$@"
    elif command -v sudo >/dev/null 2>&1; then
        sudo "$@"
    else
        pg_cluster_log "need root to run: $*"
        return 1
    fi
}

# Installs Debian packages non-interactively (apt-get update first, once per shell).
pg_cluster_apt_install() {
    if ! command -v apt-get >/dev/null 2>&1; then
        pg_cluster_log "missing packages ($*) and no apt-get to install them"
        return 1
    fi
    if [[ -z "${PG_CLUSTER_APT_UPDATED:-}" ]]; then
        pg_cluster_log "apt-get update"
        pg_cluster_as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2
        PG_CLUSTER_APT_UPDATED=1
    fi
    pg_cluster_log "apt-get install -y $*"
    pg_cluster_as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >&2
}

# Prints the folder holding initdb/pg_ctl/postgres: $LOCIFY_PG_BIN, `pg_config --bindir`, or the
# newest /usr/lib/postgresql/*/bin. Prints nothing (and fails) when PostgreSQL is not installed.
pg_cluster_find_bindir() {
    local candidate
    if [[ -n "${LOCIFY_PG_BIN:-}" && -x "${LOCIFY_PG_BIN}/initdb" ]]; then
        echo "$LOCIFY_PG_BIN"
        return 0
    fi
    if command -v pg_config >/dev/null 2>&1; then
        candidate=$(pg_config --bindir 2>/dev/null || true)
        if [[ -n "$candidate" && -x "$candidate/initdb" ]]; then
            echo "$candidate"
            return 0
        fi
    fi
    candidate=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
    if [[ -n "$candidate" && -x "$candidate/initdb" ]]; then
        echo "$candidate"
        return 0
    fi
    return 1
}

# Like pg_cluster_find_bindir, installing the `postgresql` package first when it is missing, and
# the contrib extensions (`postgresql-contrib`) when pg_trgm is missing: migration 0003 creates it.
pg_cluster_bindir() {
    local bindir sharedir
    if ! bindir=$(pg_cluster_find_bindir); then
        pg_cluster_apt_install postgresql
        bindir=$(pg_cluster_find_bindir) || return 1
    fi
    sharedir=$("$bindir/pg_config" --sharedir 2>/dev/null || echo "/usr/share/postgresql/$(basename "$(dirname "$bindir")")")
    if [[ ! -f "$sharedir/extension/pg_trgm.control" ]]; then
        pg_cluster_apt_install postgresql-contrib >&2 || return 1
    fi
    echo "$bindir"
}

# Runs a PostgreSQL binary as the user owning the cluster (`postgres` when we are root).
pg_cluster_run() {
    if [[ $(id -u) -eq 0 ]]; then
        runuser -u postgres -- "$@"
    else
        "$@"
    fi
}

# Succeeds when something accepts connections on 127.0.0.1:$1.
pg_cluster_port_in_use() {
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# A port nobody listens on, below the kernel's ephemeral range (ip_local_port_range): a port in
# that range may be taken at any moment as the local end of an outgoing connection, and then
# binding it fails.
pg_cluster_pick_port() {
    local port attempt low=32768
    read -r low _ </proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || true
    if ((low <= 20000 + 2000)); then low=32768; fi
    for attempt in $(seq 1 50); do
        port=$((20000 + RANDOM % (low - 20000)))
        if ! pg_cluster_port_in_use "$port"; then
            echo "$port"
            return 0
        fi
    done
    pg_cluster_log "found no free port"
    return 1
}

# Creates the cluster in $1 (an absolute or relative folder) unless it already exists.
pg_cluster_init() {
    local dir=$1 bindir
    bindir=$(pg_cluster_bindir) || return 1
    mkdir -p "$dir"
    dir=$(cd "$dir" && pwd)
    if [[ -f "$dir/data/PG_VERSION" ]]; then
        return 0
    fi
    if [[ $(id -u) -eq 0 ]]; then
        if ! id postgres >/dev/null 2>&1; then
            pg_cluster_log "the postgres user does not exist (install the postgresql package)"
            return 1
        fi
        chown postgres: "$dir"
        chmod 700 "$dir"
    fi
    pg_cluster_log "initdb in $dir/data"
    pg_cluster_run "$bindir/initdb" -D "$dir/data" -U postgres --auth=trust \
        --encoding=UTF8 --locale=C.UTF-8 >"$dir/initdb.log" 2>&1 || {
        cat "$dir/initdb.log" >&2
        return 1
    }
    local socket_dir=$dir
    # A Unix socket path is limited to 107 bytes; without room, TCP alone is used.
    if ((${#socket_dir} > 90)); then
        socket_dir=""
    fi
    pg_cluster_run tee -a "$dir/data/postgresql.conf" >/dev/null <<EOF

# pg-cluster.sh: a private cluster for tests and development, not for data that matters
listen_addresses = '127.0.0.1'
unix_socket_directories = '$socket_dir'
max_connections = 1000
shared_buffers = 64MB
fsync = off
synchronous_commit = off
full_page_writes = off
log_min_messages = warning
log_min_error_statement = panic
EOF
}

pg_cluster_is_running() {
    local dir=$1 bindir
    bindir=$(pg_cluster_bindir) || return 1
    [[ -f "$dir/data/PG_VERSION" ]] && pg_cluster_run "$bindir/pg_ctl" -D "$dir/data" status >/dev/null 2>&1
}

# Starts the cluster in $1 (creating it first when needed) and prints its DATABASE_URL.
pg_cluster_start() {
    local dir=$1 bindir port attempt
    bindir=$(pg_cluster_bindir) || return 1
    pg_cluster_init "$dir" || return 1
    dir=$(cd "$dir" && pwd)
    if pg_cluster_is_running "$dir"; then
        pg_cluster_url "$dir"
        return 0
    fi
    for attempt in 1 2 3 4 5; do
        port=""
        if [[ -f "$dir/port" ]]; then
            port=$(cat "$dir/port")
            if pg_cluster_port_in_use "$port"; then
                port=""
            fi
        fi
        if [[ -z "$port" ]]; then
            port=$(pg_cluster_pick_port) || return 1
        fi
        pg_cluster_log "starting PostgreSQL in $dir on 127.0.0.1:$port"
        if pg_cluster_run "$bindir/pg_ctl" -D "$dir/data" -l "$dir/postgres.log" -w -t 60 \
            -o "-p $port" start >/dev/null; then
            echo "$port" | pg_cluster_run tee "$dir/port" >/dev/null
            pg_cluster_url "$dir"
            return 0
        fi
        rm -f "$dir/port"
        pg_cluster_log "start failed (attempt $attempt); log:"
        tail -n 5 "$dir/postgres.log" >&2 || true
    done
    return 1
}

# Prints the DATABASE_URL of the cluster in $1.
pg_cluster_url() {
    local dir=$1
    if [[ ! -f "$dir/port" ]]; then
        pg_cluster_log "no cluster was started in $dir"
        return 1
    fi
    echo "postgresql://postgres@127.0.0.1:$(cat "$dir/port")/postgres"
}

# Stops the cluster in $1; $2 is the shutdown mode (smart, fast (default) or immediate).
pg_cluster_stop() {
    local dir=$1 mode=${2:-fast} bindir
    bindir=$(pg_cluster_find_bindir) || return 0
    if [[ -f "$dir/data/postmaster.pid" ]]; then
        pg_cluster_log "stopping PostgreSQL in $dir ($mode)"
        pg_cluster_run "$bindir/pg_ctl" -D "$dir/data" -m "$mode" -w -t 60 stop >/dev/null 2>&1 || true
    fi
}

# Stops the cluster in $1 and deletes the folder.
pg_cluster_remove() {
    local dir=$1
    pg_cluster_stop "$dir" immediate
    rm -rf "$dir"
}

pg_cluster_main() {
    set -euo pipefail
    local command=${1:-}
    case "$command" in
    start | stop | url | env | remove)
        if [[ $# -lt 2 ]]; then
            pg_cluster_log "usage: $0 $command DIR"
            exit 2
        fi
        ;;
    esac
    case "$command" in
    start) pg_cluster_start "$2" ;;
    stop) pg_cluster_stop "$2" "${3:-fast}" ;;
    url) pg_cluster_url "$2" ;;
    env)
        echo "export DATABASE_URL='$(pg_cluster_url "$2")'"
        echo "export LOCIFY_PG_BIN='$(pg_cluster_bindir)'"
        ;;
    remove) pg_cluster_remove "$2" ;;
    bindir) pg_cluster_bindir ;;
    *)
        pg_cluster_log "usage: $0 start|stop|url|env|remove DIR, or $0 bindir"
        exit 2
        ;;
    esac
}

if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
    pg_cluster_main "$@"
fi
