#!/usr/bin/env python3
"""bench/live/run --write-cost: what live sync costs the writes, by hand (issue 24;
bench/RESULTS.md, "Live sync").

The same release server twice in turn, with live sync on (LOCIFY_MAX_WAIT_SECONDS=60: after each
successful write its user is notified by the notifier connection, and the listener connection
receives it) and off (0: neither connection exists), each on a fresh private PostgreSQL
(synchronous_commit off, as bench/http), takes category creates from 64 keep-alive connections for
20 users, as fast as it can (--write-rate above what it can do) or at a fixed rate. Reported per
create: the server's CPU, and PostgreSQL's by backend (`application_name`: the request pool
`locify-server`, `locify-server-listen`, `locify-server-notify`, and the background processes).
Rounds alternate on and off, so drifting load on the machine touches both.
"""

import asyncio
import os
import sys
from pathlib import Path

sys.dont_write_bytecode = True
ROOT = Path(__file__).resolve().parent.parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
import livebench  # noqa: E402
import loadlib  # noqa: E402
from loadlib import log  # noqa: E402


def backend_cpu(cluster):
    """CPU seconds of the database's backends by application name (background processes: "bg")."""
    out = cluster.psql("SELECT pid, application_name FROM pg_stat_activity "
                       "WHERE datname = 'locify' OR backend_type <> 'client backend'", database="postgres")
    seconds = {}
    for line in out.strip().splitlines():
        parts = line.split("\t")
        name = (parts[1] if len(parts) > 1 else "") or "bg"
        try:
            seconds[name] = seconds.get(name, 0.0) + livebench.cpu_seconds(int(parts[0]))
        except (OSError, ValueError):
            pass
    return seconds


def one_round(binary, live, rate, seconds):
    cluster = loadlib.Cluster()
    server = None
    try:
        cluster.prepare()
        cluster.psql("ALTER SYSTEM SET synchronous_commit = off", database="postgres")
        cluster.psql("SELECT pg_reload_conf()", database="postgres")
        server = loadlib.Server(binary, cluster.url(), env={"LOG_LEVEL": "warning", "LOCIFY_MAX_WAIT_SECONDS": live}).start()
        users = [[f"u{i}", loadlib.token(f"u{i}")] for i in range(20)]
        for _, token in users:
            loadlib.request("GET", server.port, "/v1/categories", token_value=token)
        before, server_before = backend_cpu(cluster), livebench.cpu_seconds(server.pid)
        report = asyncio.run(livebench.write_child(
            {"port": server.port, "rate": rate, "duration": seconds, "writers": 64, "users": users}))
        after, server_after = backend_cpu(cluster), livebench.cpu_seconds(server.pid)
        count = len(report["acked"])
        per_backend = {name: round(1000 * (after[name] - before.get(name, 0.0)) / count, 3) for name in after}
        return {"live": live != "0", "creates_per_second": round(count / report["seconds"]),
                "server_ms": round(1000 * (server_after - server_before) / count, 3),
                "postgres_ms": round(sum(per_backend.values()), 3), "postgres_ms_by_backend": per_backend}
    finally:
        if server:
            server.kill_hard()
        cluster.remove()


def run(rounds=2, rate=4000, seconds=15, build=True):
    binary = loadlib.build_server() if build else str(ROOT / ".build/release/locify-server")
    results = []
    for _ in range(rounds):
        for live in ("60", "0"):
            result = one_round(binary, live, rate, seconds)
            log(f"{result}")
            results.append(result)
    print(f"write cost ({rounds} rounds alternating, creates at up to {rate}/s for {seconds} s; CPU ms per create)")
    print("live | creates/s | server ms | postgres ms | by backend")
    for result in results:
        print(f"{'on' if result['live'] else 'off'} | {result['creates_per_second']} | {result['server_ms']} | "
              f"{result['postgres_ms']} | {result['postgres_ms_by_backend']}")
    return results


if __name__ == "__main__":
    run(build="--no-build" not in sys.argv)
