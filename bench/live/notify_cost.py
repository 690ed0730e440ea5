#!/usr/bin/env python3
"""bench/live/run --notify-cost: what the change notification costs a write transaction, with
durable commits (fsync and synchronous_commit on), by hand (issue 24; bench/RESULTS.md).

PostgreSQL serialises the commits of transactions that NOTIFY (a global lock, held from the queue
insert until the commit is flushed), so notifying writes lose group commit. This measures the
cost on the one statement every write transaction begins with (AccountGate.beginWrite:
`UPDATE users SET change_seq = change_seq + 1 WHERE id = $1`) with pgbench, the trigger of
migration 0007 enabled and disabled in turn, at several client counts, on a database migrated and
listened to by a running locify-server (its one LISTEN connection consumes every notification, as
in production). Prints the transactions per second of each and their ratio.
"""

import os
import re
import statistics
import subprocess
import sys
import tempfile
import urllib.request
from pathlib import Path

sys.dont_write_bytecode = True
ROOT = Path(__file__).resolve().parent.parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
import loadlib  # noqa: E402
from loadlib import log  # noqa: E402

USERS = 10000


def run(clients=(1, 8, 32), rounds=3, seconds=10, build=True):
    binary = loadlib.build_server() if build else str(ROOT / ".build/release/locify-server")
    cluster = loadlib.Cluster()
    server = None
    script = tempfile.NamedTemporaryFile("w", suffix=".sql", delete=False)
    script.write(f"\\set n random(1, {USERS})\nUPDATE users SET change_seq = change_seq + 1 WHERE id = 'u' || :n;\n")
    script.close()
    try:
        cluster.prepare()
        # Durable commits, as in production (scripts/pg-cluster.sh turns fsync off for speed).
        cluster.psql("ALTER SYSTEM SET fsync = on", database="postgres")
        cluster.psql("ALTER SYSTEM SET full_page_writes = on", database="postgres")
        cluster.stop()
        cluster.start()
        server = loadlib.Server(binary, cluster.url(), env={"LOG_LEVEL": "warning"}).start()
        cluster.psql(f"""INSERT INTO users (id, change_seq, tokens_valid_after, created_at, updated_at)
                         SELECT 'u' || g, 1, -1, now(), now() FROM generate_series(1, {USERS}) g""")
        settings = cluster.psql("SELECT current_setting('fsync') || ' ' || current_setting('synchronous_commit')").strip()
        log(f"fsync, synchronous_commit: {settings}; listening: {loadlib.request('GET', server.port, '/health')[0]}")
        pgbench = os.path.join(cluster.bindir, "pgbench")
        results = {}
        for count in clients:
            for _ in range(rounds):
                for trigger in ("DISABLE", "ENABLE"):
                    cluster.psql(f"ALTER TABLE users {trigger} TRIGGER users_change_notify")
                    output = subprocess.run(
                        [pgbench, "-n", "-M", "prepared", "-c", str(count), "-j", str(min(count, 2)), "-T", str(seconds),
                         "-f", script.name, "-h", "127.0.0.1", "-p", str(cluster.port), "-U", "postgres", "locify"],
                        capture_output=True, text=True, check=True).stdout
                    tps = float(re.search(r"tps = ([\d.]+)", output).group(1))
                    results.setdefault((count, trigger), []).append(tps)
                    log(f"{count} clients, trigger {trigger.lower()}d: {tps:.0f} tps")
        with urllib.request.urlopen(f"http://127.0.0.1:{server.port}/metrics", timeout=10) as response:
            received = [line for line in response.read().decode().splitlines() if line.startswith("live_notifications_total")]
        print(f"notify cost (pgbench, {seconds} s x {rounds} rounds, median; fsync and synchronous_commit on; "
              f"UPDATE users SET change_seq = change_seq + 1, {USERS} users)")
        print("clients | without NOTIFY tps | with NOTIFY tps | ratio")
        for count in clients:
            without = statistics.median(results[(count, "DISABLE")])
            with_notify = statistics.median(results[(count, "ENABLE")])
            print(f"{count} | {without:.0f} | {with_notify:.0f} | {with_notify / without:.2f}")
        print(f"the server's listener received: {received}")
    finally:
        if server:
            server.kill_hard()
        cluster.remove()
        os.unlink(script.name)


if __name__ == "__main__":
    run(build="--no-build" not in sys.argv)
