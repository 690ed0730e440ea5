#!/usr/bin/env python3
"""bench/live/run --notify-cost: what a change notification costs the writes, with durable commits
(fsync and synchronous_commit on), by hand (issue 24; bench/RESULTS.md, "Live sync").

PostgreSQL serialises the commits of transactions that NOTIFY (one global lock, held from the
queue insert until the commit is flushed), so writes that notify inside their own transaction lose
group commit and wait for each other's flushes. This measures, with pgbench on the statement
every write transaction begins with (AccountGate.beginWrite:
`UPDATE users SET change_seq = change_seq + 1 WHERE id = $1`), at several client counts:

- none: the statement alone;
- in the transaction: with a trigger that calls pg_notify in the same transaction (the first
  design, rejected for what this shows);
- after the commit, per write: the statement, then pg_notify in a transaction of its own with
  synchronous_commit off, by the same client (4 more statements per write; an upper bound);
- after the commit, batched: the statement alone, while one more connection (as
  PostgresNotifier) sends batches of 50 notifications with synchronous_commit off, back to back
  as fast as it can (more than the writes need: a worst case for its interference).

The database is migrated and listened to by a running locify-server (its LISTEN connection
consumes every notification, as in production). Prints the transactions per second of each.
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


TRIGGER = """
CREATE FUNCTION bench_notify_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('locify_changes', NEW.id);
    RETURN NULL;
END;
$$;
CREATE TRIGGER bench_change_notify AFTER UPDATE OF change_seq ON users
    FOR EACH ROW EXECUTE FUNCTION bench_notify_change();
ALTER TABLE users DISABLE TRIGGER bench_change_notify;
"""

SCRIPTS = {
    "none": "UPDATE users SET change_seq = change_seq + 1 WHERE id = 'u' || :n;\n",
    "in the transaction": "UPDATE users SET change_seq = change_seq + 1 WHERE id = 'u' || :n;\n",
    "after the commit, per write": ("UPDATE users SET change_seq = change_seq + 1 WHERE id = 'u' || :n;\n"
                                    "BEGIN;\nSET LOCAL synchronous_commit TO off;\n"
                                    "SELECT pg_notify('locify_changes', 'u' || :n);\nCOMMIT;\n"),
    "after the commit, batched": "UPDATE users SET change_seq = change_seq + 1 WHERE id = 'u' || :n;\n",
}
# The notifier beside the writers of "after the commit, batched" (a session with asynchronous commits).
NOTIFIER = "SELECT count(pg_notify('locify_changes', 'u' || (:n + g))) FROM generate_series(1, 50) AS g;\n"


def run(clients=(1, 8, 32), rounds=3, seconds=10, build=True):
    binary = loadlib.build_server() if build else str(ROOT / ".build/release/locify-server")
    cluster = loadlib.Cluster()
    server = None
    files = {}
    for mode, body in list(SCRIPTS.items()) + [("notifier", NOTIFIER)]:
        script = tempfile.NamedTemporaryFile("w", suffix=".sql", delete=False)
        script.write(f"\\set n random(1, {USERS})\n" + body)
        script.close()
        files[mode] = script.name
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
        cluster.psql(None, stdin=TRIGGER)
        settings = cluster.psql("SELECT current_setting('fsync') || ' ' || current_setting('synchronous_commit')").strip()
        log(f"fsync, synchronous_commit: {settings}")
        pgbench = os.path.join(cluster.bindir, "pgbench")
        results = {}
        for count in clients:
            for _ in range(rounds):
                for mode in SCRIPTS:
                    trigger = "ENABLE" if mode == "in the transaction" else "DISABLE"
                    cluster.psql(f"ALTER TABLE users {trigger} TRIGGER bench_change_notify")
                    base = [pgbench, "-n", "-M", "prepared", "-T", str(seconds), "-h", "127.0.0.1", "-p", str(cluster.port),
                            "-U", "postgres"]
                    notifier = None
                    if mode == "after the commit, batched":
                        notifier = subprocess.Popen(base + ["-c", "1", "-f", files["notifier"], "locify"],
                                                    env=dict(os.environ, PGOPTIONS="-c synchronous_commit=off"),
                                                    stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
                    output = subprocess.run(base + ["-c", str(count), "-j", str(min(count, 2)), "-f", files[mode], "locify"],
                                            capture_output=True, text=True, check=True).stdout
                    if notifier:
                        notified = float(re.search(r"tps = ([\d.]+)", notifier.communicate()[0]).group(1)) * 50
                        log(f"  (the notifier sent {notified:.0f} notifications/s)")
                    tps = float(re.search(r"tps = ([\d.]+)", output).group(1))
                    results.setdefault((count, mode), []).append(tps)
                    log(f"{count} clients, notify {mode}: {tps:.0f} tps")
        with urllib.request.urlopen(f"http://127.0.0.1:{server.port}/metrics", timeout=10) as response:
            received = [line for line in response.read().decode().splitlines() if line.startswith("live_notifications_total")]
        print(f"notify cost (pgbench, {seconds} s x {rounds} rounds, median tps; fsync and synchronous_commit on; "
              f"UPDATE users SET change_seq = change_seq + 1 over {USERS} users)")
        print("clients | " + " | ".join(SCRIPTS) + " | ratios to none")
        for count in clients:
            medians = [statistics.median(results[(count, mode)]) for mode in SCRIPTS]
            print(f"{count} | " + " | ".join(f"{m:.0f}" for m in medians) + " | "
                  + " / ".join(f"{m / medians[0]:.2f}" for m in medians[1:]))
        print(f"the server's listener received: {received}")
    finally:
        if server:
            server.kill_hard()
        cluster.remove()
        for name in files.values():
            os.unlink(name)


if __name__ == "__main__":
    run(build="--no-build" not in sys.argv)
