#!/usr/bin/env python3
"""bench/http: the project's side-by-side HTTP benchmark (started by bench/http/run).

For each target (locify-server, and optionally a peer given as a shell command): a private
PostgreSQL 15 cluster with benchmark settings, the server against it with real RS256 token checks
(keys served by a local stand-in for Google's certificate endpoint), the same data seeded through
the HTTP API, then wrk workloads interleaved across targets for a number of rounds, with the CPU
per request of the server and of PostgreSQL and the server's memory. `--ceiling` adds pgbench
with the SQL of the list workload: what the database alone can do. Results go to
bench/results/<UTC time>/. See `bench/http/run --help` and bench/RESULTS.md.
"""

import argparse
import datetime
import glob
import json
import os
import re
import resource
import secrets
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import firebase_keys  # noqa: E402
import procstat  # noqa: E402
import report  # noqa: E402
import seeding  # noqa: E402

WORKLOADS = ["health", "list", "list_cat", "categories", "create"]  # create last: it grows the data
# Run only when asked for (--workloads ...,push,update): a sync push of one location create; a
# PUT of a whole location created earlier in the same wrk run (workload.lua says how).
OPTIONAL_WORKLOADS = ["push", "update"]
PROJECT_ID = "bench-project"
USER_ID_BASE = 10**18  # user ids are decimal numbers, so pgbench can pick one with random()
DATABASE = "bench"
POSTGRES_SETTINGS = """
# bench/http/run: benchmark settings (later lines win over pg-cluster.sh's)
shared_buffers = 512MB
synchronous_commit = off
max_connections = 300
# the list statement is longer than the default 1 kB that pg_stat_activity keeps of a query, and the
# --ceiling check compares it whole
track_activity_query_size = 4096
"""
APT_PACKAGES = {
    "wrk": "apt-get install -y wrk",
    "openssl": "apt-get install -y openssl",
    "runuser": "apt-get install -y util-linux",
    "swift": "the Swift 6 toolchain (https://www.swift.org/install/linux/)",
}


class Aborted(Exception):
    """A signal, the run-time limit, or a failed step: stop, clean up, exit non-zero."""


def log(message):
    print(f"bench/http: {message}", file=sys.stderr, flush=True)


def parse_arguments(argv):
    parser = argparse.ArgumentParser(
        prog="bench/http/run",
        description="Side-by-side HTTP benchmark of locify-server (and optionally a peer server) with wrk; "
                    "see bench/RESULTS.md, section 'HTTP benchmark'.",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--project", default=os.path.dirname(os.path.dirname(HERE)), help=argparse.SUPPRESS)
    parser.add_argument("--no-build", action="store_true", help="use the existing benchmark build of locify-server (.build-bench-server)")
    parser.add_argument("--peer", metavar="COMMAND",
                        help="also benchmark the server COMMAND starts (run with bash -c in the project folder, "
                             "with the same environment variables and its own cluster and seed)")
    parser.add_argument("--peer-name", default="peer", help="the peer's name in the results (default peer)")
    parser.add_argument("--peer-schema", metavar="FILE",
                        help="SQL applied to the peer's database before it starts (for servers that do not migrate)")
    parser.add_argument("--ceiling", action="store_true",
                        help="also run pgbench with locify-server's list SQL (bench/http/ceiling-list.sql)")
    parser.add_argument("--workloads", default=",".join(WORKLOADS),
                        help="comma-separated subset of " + ", ".join(WORKLOADS + OPTIONAL_WORKLOADS)
                             + " (default all but " + ", ".join(OPTIONAL_WORKLOADS) + ")")
    parser.add_argument("--duration", type=int, default=15, help="measured seconds per workload (default 15)")
    parser.add_argument("--warmup", type=int, default=2, help="warm-up seconds before each measurement (default 2)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds, targets interleaved; the median round is reported (default 3)")
    parser.add_argument("--connections", type=int, default=64, help="wrk connections, and pgbench clients (default 64)")
    parser.add_argument("--threads", type=int, default=2, help="wrk threads, and pgbench threads (default 2)")
    parser.add_argument("--timeout", type=int, default=10, help="wrk's per-request timeout, seconds (default 10)")
    parser.add_argument("--users", type=int, default=20, help="users to seed; requests rotate over them (default 20)")
    parser.add_argument("--categories", type=int, default=10, help="categories seeded per user (default 10)")
    parser.add_argument("--locations", type=int, default=500, help="locations seeded per category (default 500)")
    parser.add_argument("--seed-concurrency", type=int, default=8, help="concurrent seeding requests (default 8)")
    parser.add_argument("--seed-mode", choices=["auto", "push", "single"], default="auto",
                        help="seed through POST /v1/sync/push batches of 50, or single-record POSTs "
                             "(default auto: push when the server has it)")
    parser.add_argument("--wait-idle", type=float, default=10,
                        help="before each measurement, wait up to this many seconds for other processes "
                             "to use less than 0.15 cores; 0: do not wait (default 10)")
    parser.add_argument("--max-runtime", type=int, default=5400, help="seconds after which the whole run is stopped (default 5400)")
    parser.add_argument("--out", help="results folder (default bench/results/<UTC time>)")
    parser.add_argument("--keep", action="store_true",
                        help="keep the work folder (clusters, server logs) instead of deleting it; printed at the end")
    args = parser.parse_args(argv)
    unknown = [name for name in args.workloads.split(",") if name not in WORKLOADS + OPTIONAL_WORKLOADS]
    if unknown:
        parser.error(f"unknown workloads: {', '.join(unknown)}")
    args.workloads = [name for name in WORKLOADS + OPTIONAL_WORKLOADS if name in args.workloads.split(",")]
    for name in ("duration", "rounds", "connections", "threads", "users", "categories", "locations",
                 "seed_concurrency", "timeout", "max_runtime"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1")
    if args.warmup < 0:
        parser.error("--warmup must not be negative")
    if args.connections < args.threads:
        parser.error("--connections must be at least --threads")
    if args.users > 10**6:
        parser.error("--users must be at most 1000000")
    if args.peer_schema and not args.peer:
        parser.error("--peer-schema needs --peer")
    if args.peer_schema:
        args.peer_schema = os.path.abspath(args.peer_schema)
        if not os.path.isfile(args.peer_schema):
            parser.error(f"--peer-schema: no file {args.peer_schema}")
    if args.peer_name == "locify":
        parser.error("--peer-name must differ from locify")
    return args


def require_tool(name, install=None):
    path = shutil.which(name)
    if not path:
        raise Aborted(f"{name} is missing; install it: {install or APT_PACKAGES.get(name, name)}")
    return path


def run_command(command, timeout, what, **kwargs):
    """Runs a command to completion, raising Aborted with its output when it fails or times out."""
    try:
        result = subprocess.run(command, timeout=timeout, capture_output=True, text=True, **kwargs)
    except subprocess.TimeoutExpired:
        raise Aborted(f"{what} did not finish within {timeout} s: {shlex.join(command)}")
    if result.returncode != 0:
        raise Aborted(f"{what} failed (exit {result.returncode}): {shlex.join(command)}\n"
                      f"{result.stdout[-2000:]}{result.stderr[-2000:]}")
    return result.stdout


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def tail(path, lines=30):
    try:
        with open(path, "rb") as file:
            file.seek(0, os.SEEK_END)
            file.seek(max(0, file.tell() - 64 * 1024))
            return "\n".join(file.read().decode("utf-8", "replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


class Postgres:
    """The PostgreSQL binaries and the project's scripts/pg-cluster.sh."""

    def __init__(self, project):
        self.script = os.path.join(project, "scripts", "pg-cluster.sh")
        found = subprocess.run(["bash", "-c", 'source "$1" && pg_cluster_find_bindir', "_", self.script],
                               capture_output=True, text=True, timeout=30)
        self.bindir = found.stdout.strip()
        if found.returncode != 0 or not self.bindir:
            raise Aborted("PostgreSQL server binaries are missing; install them: apt-get install -y postgresql-15")
        for tool in ("psql", "initdb", "pg_ctl"):
            if not os.access(os.path.join(self.bindir, tool), os.X_OK):
                raise Aborted(f"{tool} is missing from {self.bindir}; install it: apt-get install -y postgresql-15")

    def tool(self, name):
        path = os.path.join(self.bindir, name)
        if not os.access(path, os.X_OK):
            raise Aborted(f"{name} is missing from {self.bindir}; install it: apt-get install -y postgresql-15")
        return path

    def start(self, folder):
        """Creates a cluster in `folder` with the benchmark settings and starts it; returns its port."""
        run_command(["bash", "-c", 'source "$1" && pg_cluster_init "$2"', "_", self.script, folder], 180,
                    "initdb")
        with open(os.path.join(folder, "data", "postgresql.conf"), "a") as conf:
            conf.write(POSTGRES_SETTINGS)
        url = run_command([self.script, "start", folder], 180, "starting PostgreSQL").strip()
        match = re.search(r":(\d+)/", url)
        if not match:
            raise Aborted(f"pg-cluster.sh printed no URL with a port: {url!r}")
        return int(match.group(1))

    def stop(self, folder, remove):
        subprocess.run([self.script, "remove" if remove else "stop", folder],
                       capture_output=True, text=True, timeout=120)

    def psql(self, port, sql=None, file=None, database=DATABASE, timeout=900, options=()):
        command = [self.tool("psql"), "-X", "-q", "-v", "ON_ERROR_STOP=1", "-h", "127.0.0.1", "-p", str(port),
                   "-U", "postgres", "-d", database, *options]
        command += ["-f", file] if file else ["-c", sql]
        return run_command(command, timeout, f"psql {file or sql[:60]}")


class Target:
    """One server under test, with its own cluster, port and log."""

    def __init__(self, name, command, shell, schema, workdir):
        self.name = name
        self.command = command  # argv
        self.display = command[-1] if shell else shlex.join(command)
        self.schema = schema
        self.folder = os.path.join(workdir, name)
        os.makedirs(self.folder)
        os.chmod(self.folder, 0o755)
        self.cluster = os.path.join(self.folder, "pg")
        self.log_path = os.path.join(self.folder, "server.log")
        self.pg_port = None
        self.port = None
        self.process = None
        self.postmaster = None
        self.seed = None
        self.warnings = []

    @property
    def database_url(self):
        return f"postgres://postgres@127.0.0.1:{self.pg_port}/{DATABASE}?sslmode=disable"

    def server_ticks(self, stats):
        if self.process is None:
            return 0
        return procstat.session_ticks(self.process.pid, stats)

    def postgres_ticks(self, stats):
        if self.postmaster is None:
            return 0
        return procstat.tree_ticks(self.postmaster, stats)


class Bench:
    def __init__(self, args):
        self.args = args
        self.project = os.path.abspath(args.project)
        self.started = datetime.datetime.now(datetime.timezone.utc)
        stamp = self.started.strftime("%Y%m%dT%H%M%SZ")
        self.out = os.path.abspath(args.out or os.path.join(self.project, "bench", "results", stamp))
        self.workdir = None
        self.targets = []
        self.certs = None
        self.postgres = None
        self.measurements = []
        self.ceilings = []
        self.warnings = []
        self.meta = {}

    # ----- set-up -----

    def check_tools(self):
        for tool in ("wrk", "openssl", "bash"):
            require_tool(tool)
        if os.getuid() == 0:
            require_tool("runuser")
        self.postgres = Postgres(self.project)
        if self.args.ceiling:
            self.pgbench = self.postgres.tool("pgbench")

    # Built as the image's build stage builds it (Dockerfile: release, static Swift standard
    # library), in a scratch folder of its own so the development builds stay as they are: the
    # memory and speed measured are those of the binary that ships.
    BUILD_FLAGS = ["-c", "release", "--static-swift-stdlib", "--scratch-path", ".build-bench-server"]

    def build(self):
        swift = shutil.which("swift")
        if not self.args.no_build:
            if not swift:
                require_tool("swift")
            build_log = os.path.join(self.out, "build.log")
            log(f"building locify-server (release, static Swift standard library, as the image; log {build_log})")
            with open(build_log, "w") as output:
                try:
                    result = subprocess.run([swift, "build", *self.BUILD_FLAGS, "--product", "locify-server"],
                                            cwd=self.project, stdout=output, stderr=subprocess.STDOUT, timeout=3600)
                except subprocess.TimeoutExpired:
                    raise Aborted("the release build did not finish within an hour")
            if result.returncode != 0:
                raise Aborted(f"the release build failed:\n{tail(build_log, 40)}")
        if swift:
            bin_path = run_command([swift, "build", *self.BUILD_FLAGS, "--show-bin-path"], 300, "swift build --show-bin-path",
                                   cwd=self.project).strip()
        else:
            bin_path = os.path.join(self.project, ".build-bench-server", "release")
        binary = os.path.join(bin_path, "locify-server")
        if not os.access(binary, os.X_OK):
            raise Aborted(f"no release build at {binary} (run without --no-build)")
        return binary

    def project_revision(self):
        try:
            revision = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=self.project,
                                      capture_output=True, text=True, timeout=30).stdout.strip()
            dirty = subprocess.run(["git", "status", "--porcelain", "--", "Sources", "migrations", "Package.swift"],
                                   cwd=self.project, capture_output=True, text=True, timeout=30).stdout.strip()
            return revision + (" (with uncommitted changes in Sources/)" if dirty else "")
        except (OSError, subprocess.SubprocessError):
            return "unknown"

    def machine(self):
        def version(command):
            try:
                result = subprocess.run(command, capture_output=True, text=True, timeout=30)
                return (result.stdout or result.stderr).splitlines()[0].strip()
            except (OSError, subprocess.SubprocessError, IndexError):
                return "unknown"

        with open("/proc/loadavg") as file:
            load = " ".join(file.read().split()[:3])
        return {
            "cores": os.cpu_count(),
            "load_average": load,
            "kernel": os.uname().release,
            "postgres": version([os.path.join(self.postgres.bindir, "postgres"), "--version"]),
            "wrk": version(["wrk", "-v"]).split(" Copyright")[0],
        }

    def environment(self, target):
        env = dict(os.environ)
        # Real signature checks only: never the Auth emulator's unsigned tokens.
        env.pop("FIREBASE_AUTH_EMULATOR_HOST", None)
        env.update({
            "HOST": "127.0.0.1",
            "PORT": str(target.port),
            "DATABASE_URL": target.database_url,
            "FIREBASE_PROJECT_ID": PROJECT_ID,
            "LOCIFY_ID_TOKEN_CERTS_URL": self.certs.url,
            "LOCIFY_RATE_LIMIT_PER_SECOND": "0",
            "PEER_ACCESS_LOG": "1",
        })
        return env

    def start_server(self, target):
        target.port = free_port()
        log(f"{target.name}: starting on 127.0.0.1:{target.port}: {target.display}")
        with open(target.log_path, "ab") as output:
            target.process = subprocess.Popen(target.command, cwd=self.project, env=self.environment(target),
                                              stdin=subprocess.DEVNULL, stdout=output, stderr=subprocess.STDOUT,
                                              start_new_session=True)
        client = seeding.Client(target.port, timeout=5)
        deadline = time.monotonic() + 120
        try:
            while True:
                if target.process.poll() is not None:
                    raise Aborted(f"{target.name} exited with {target.process.returncode} while starting; "
                                  f"log {target.log_path}:\n{tail(target.log_path)}")
                try:
                    status, _, _ = client.request("GET", "/health")
                    if status == 200:
                        return
                except OSError:
                    pass
                if time.monotonic() > deadline:
                    raise Aborted(f"{target.name} did not answer GET /health with 200 within 120 s; "
                                  f"log {target.log_path}:\n{tail(target.log_path)}")
                time.sleep(0.2)
        finally:
            client.close()

    def stop_server(self, target):
        process = target.process
        if process is None or process.poll() is not None:
            return
        try:
            os.killpg(process.pid, signal.SIGTERM)
        except ProcessLookupError:
            return
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            log(f"{target.name} did not stop within 15 s of SIGTERM; killing it")
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            process.wait(timeout=15)
        # Anything the command left behind in its session.
        for pid in procstat.session_members(process.pid):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    def preflight(self, target):
        """The server answers as the API says for what the benchmark relies on: a valid token is
        accepted, and a missing token or a bad signature is refused (so signatures are checked)."""
        client = seeding.Client(target.port)
        uid = self.users.uids[0]
        token = self.users.token(uid)
        try:
            status, _, raw = client.request("GET", "/v1/categories", token)
            if status != 200:
                raise Aborted(f"{target.name}: GET /v1/categories with a valid token answered {status}: {raw[:300]!r}; "
                              f"log:\n{tail(target.log_path)}")
            status, _, _ = client.request("GET", "/v1/categories")
            if status != 401:
                target.warnings.append(f"{target.name}: GET /v1/categories without a token answered {status}, not 401")
            signature_start = token.rindex(".") + 11
            forged = token[:signature_start] + ("A" if token[signature_start] != "A" else "B") + token[signature_start + 1:]
            status, _, _ = client.request("GET", "/v1/categories", forged)
            if status != 401:
                target.warnings.append(f"{target.name}: a token with a bad signature got {status}, not 401: "
                                       f"its numbers are not comparable")
        finally:
            client.close()
        for warning in target.warnings:
            log(f"WARNING {warning}")

    def set_up(self, target):
        target.pg_port = self.postgres.start(target.cluster)
        target.postmaster = procstat.postmaster_pid(os.path.join(target.cluster, "data"))
        self.postgres.psql(target.pg_port, f"CREATE DATABASE {DATABASE}", database="postgres")
        if target.schema:
            log(f"{target.name}: applying {target.schema}")
            self.postgres.psql(target.pg_port, file=target.schema)
        self.start_server(target)
        self.preflight(target)
        target.seed = seeding.seed(target.port, self.users, self.args.categories, self.args.locations,
                                   concurrency=self.args.seed_concurrency, mode=self.args.seed_mode,
                                   log=lambda message: log(f"{target.name}: {message}"))
        log(f"{target.name}: VACUUM ANALYZE")
        # The second VACUUM marks the pages all-visible that autovacuum's concurrent ANALYZE kept
        # the first from marking, so index-only scans skip the heap as on a settled server.
        self.postgres.psql(target.pg_port, "VACUUM ANALYZE")
        self.postgres.psql(target.pg_port, "VACUUM")
        self.postgres.psql(target.pg_port, "CHECKPOINT")

    # ----- measurement -----

    def bench_ticks(self, stats):
        """CPU ticks of everything the benchmark runs (servers, clusters, this process), not wrk."""
        own = os.times()
        total = int((own.user + own.system) * procstat.CLOCK_TICKS)
        for target in self.targets:
            total += target.server_ticks(stats) + target.postgres_ticks(stats)
        return total

    def wait_until_quiet(self):
        if self.args.wait_idle <= 0:
            return None
        return procstat.wait_for_quiet(lambda: self.bench_ticks(procstat.all_stats()), self.args.wait_idle)

    def snapshot(self, target):
        stats = procstat.all_stats()
        children = resource.getrusage(resource.RUSAGE_CHILDREN)
        return {
            "time": time.monotonic(),
            "server": target.server_ticks(stats) if target else 0,
            "postgres": target.postgres_ticks(stats) if target else 0,
            "bench": self.bench_ticks(stats),
            "machine": procstat.machine_ticks(),
            "children_seconds": children.ru_utime + children.ru_stime,
        }

    def usage(self, before, after, operations):
        """CPU figures between two snapshots; the children's time is the load generator's."""
        elapsed = after["time"] - before["time"]
        ticks = procstat.CLOCK_TICKS
        client_seconds = after["children_seconds"] - before["children_seconds"]
        machine = {key: (after["machine"][key] - before["machine"][key]) / ticks for key in after["machine"]}
        bench = (after["bench"] - before["bench"]) / ticks
        return {
            "elapsed_seconds": round(elapsed, 3),
            "server_cpu_ms_per_request": (after["server"] - before["server"]) / ticks * 1000 / max(1, operations),
            "postgres_cpu_ms_per_request": (after["postgres"] - before["postgres"]) / ticks * 1000 / max(1, operations),
            "server_cores": (after["server"] - before["server"]) / ticks / elapsed,
            "postgres_cores": (after["postgres"] - before["postgres"]) / ticks / elapsed,
            "client_cores": client_seconds / elapsed,
            "other_cores": max(0.0, (machine["process"] - bench - client_seconds) / elapsed),
            "irq_cores": machine["irq"] / elapsed,
            "steal_cores": machine["steal"] / elapsed,
        }

    def run_wrk(self, target, workload, duration, users_file, record=None):
        command = ["wrk", f"-t{self.args.threads}", f"-c{self.args.connections}", f"-d{duration}s",
                   f"--timeout", f"{self.args.timeout}s", "-s", os.path.join(HERE, "workload.lua"),
                   f"http://127.0.0.1:{target.port}", "--", workload, users_file, secrets.token_hex(8)[:15]]
        try:
            result = subprocess.run(command, capture_output=True, text=True, timeout=duration + 120)
        except subprocess.TimeoutExpired:
            raise Aborted(f"wrk ({workload} on {target.name}) did not finish within {duration + 120} s")
        if record:
            with open(record, "w") as file:
                file.write("$ " + shlex.join(command) + "\n" + result.stdout + result.stderr)
        line = next((line for line in result.stdout.splitlines() if line.startswith("BENCH_RESULT ")), None)
        if result.returncode != 0 or line is None:
            raise Aborted(f"wrk ({workload} on {target.name}) failed (exit {result.returncode}):\n"
                          f"{result.stdout[-2000:]}{result.stderr[-2000:]}")
        return json.loads(line[len("BENCH_RESULT "):])

    def measure(self, target, workload, round_number):
        others_before = self.wait_until_quiet()
        users_file = self.users.write_file(os.path.join(self.workdir, "users.tsv"))
        if target.process.poll() is not None:
            raise Aborted(f"{target.name} has exited ({target.process.returncode}); log:\n{tail(target.log_path)}")
        if self.args.warmup > 0:
            self.run_wrk(target, workload, self.args.warmup, users_file)
        before = self.snapshot(target)
        with procstat.RSSSampler(target.process.pid) as rss:
            result = self.run_wrk(target, workload, self.args.duration, users_file,
                                  record=os.path.join(self.out, "wrk", f"r{round_number}-{workload}-{target.name}.txt"))
        after = self.snapshot(target)
        requests = result["requests"]
        errors = result["errors"]
        item = {
            "target": target.name,
            "workload": workload,
            "round": round_number,
            "requests": requests,
            "requests_per_second": requests / (result["duration_us"] / 1e6),
            "latency_us": result["latency_us"],
            "non_2xx": errors["status"],
            "socket_errors": errors["connect"] + errors["read"] + errors["write"] + errors["timeout"],
            "errors": errors,
            "bytes": result["bytes"],
            "rss_peak_kib": rss.peak_kib,
            "other_cores_before": others_before,
        }
        usage = self.usage(before, after, requests)
        item.update(usage)
        item["wrk_cores"] = usage["client_cores"]
        self.measurements.append(item)
        log(f"round {round_number} {workload:<10} {target.name:<10} {item['requests_per_second']:>10,.0f} req/s  "
            f"p50 {item['latency_us']['p50'] / 1000:.2f} ms  p99 {item['latency_us']['p99'] / 1000:.2f} ms  "
            f"server {item['server_cpu_ms_per_request']:.3f} ms/req  pg {item['postgres_cpu_ms_per_request']:.3f} ms/req"
            + (f"  non-2xx {item['non_2xx']}" if item["non_2xx"] else ""))
        self.save()

    def check_ceiling_sql(self, target):
        """Compares the pgbench script's statement with the one the server actually ran for the
        list workload (the last statement of its idle pool connections, from pg_stat_activity),
        ignoring comments, white space and parameter names, and records the outcome."""
        with open(os.path.join(HERE, "ceiling-list.sql")) as file:
            script = file.read()
        wanted = normalized_sql("\n".join(line for line in script.splitlines()
                                          if not line.startswith("\\") and not line.startswith("--")))
        separator = "\x1e"
        output = self.postgres.psql(target.pg_port, "SELECT query FROM pg_stat_activity "
                                    f"WHERE datname = '{DATABASE}' AND pid <> pg_backend_pid()",
                                    timeout=60, options=("-A", "-t", "-R", separator))
        observed = [query.strip() for query in output.split(separator)
                    if re.search(r"LIMIT \$\d+ OFFSET \$\d+", query) and "JOIN users u" in query]
        if any(normalized_sql(query) == wanted for query in observed):
            self.meta["ceiling_sql_check"] = "the statement equals the one the server ran for the list workload"
        elif observed:
            with open(os.path.join(self.out, "server-list-statement.sql"), "w") as file:
                file.write(observed[0] + "\n")
            self.warnings.append("bench/http/ceiling-list.sql differs from the statement the server ran for the list "
                                 "workload (saved as server-list-statement.sql): re-copy it from LocationStore.listQuery")
            self.meta["ceiling_sql_check"] = "DIFFERS from the server's statement"
        else:
            self.meta["ceiling_sql_check"] = "not verified (no list statement seen in pg_stat_activity)"
        log(f"ceiling SQL: {self.meta['ceiling_sql_check']}")

    def measure_ceiling(self, target, clients, threads, round_number):
        self.wait_until_quiet()
        script = os.path.join(HERE, "ceiling-list.sql")
        env = dict(os.environ)
        # As the server's sessions (Application.swift): generic plans for prepared statements.
        env["PGOPTIONS"] = "-c plan_cache_mode=force_generic_plan"
        base = [self.pgbench, "-n", "-M", "prepared", "-c", str(clients), "-j", str(threads), "-f", script,
                "-D", f"users={self.args.users}", "-h", "127.0.0.1", "-p", str(target.pg_port), "-U", "postgres"]
        if self.args.warmup > 0:
            run_command(base + ["-T", str(self.args.warmup), DATABASE], self.args.warmup + 120, "pgbench warm-up", env=env)
        logs = os.path.join(self.workdir, f"pgbench-r{round_number}-c{clients}")
        before = self.snapshot(target)
        output = run_command(base + ["-T", str(self.args.duration), "-l", "--log-prefix", logs, DATABASE],
                             self.args.duration + 120, "pgbench", env=env)
        after = self.snapshot(target)
        with open(os.path.join(self.out, "wrk", f"r{round_number}-ceiling-c{clients}.txt"), "w") as file:
            file.write(output)
        tps = re.search(r"tps = ([\d.]+) \(without initial connection time\)", output)
        processed = re.search(r"number of transactions actually processed: (\d+)", output)
        failed = re.search(r"number of failed transactions: (\d+)", output)
        if not tps or not processed:
            raise Aborted(f"cannot read pgbench's output:\n{output[-2000:]}")
        latencies = []
        for path in glob.glob(logs + ".*"):
            with open(path) as file:
                for line in file:
                    fields = line.split()
                    if len(fields) >= 3 and fields[2].isdigit():
                        latencies.append(int(fields[2]))
            os.remove(path)
        latencies.sort()

        def percentile(share):
            if not latencies:
                return None
            return latencies[min(len(latencies) - 1, int(share * len(latencies)))]

        transactions = int(processed.group(1))
        item = {
            "target": f"{target.name}-db",
            "workload": f"c{clients}",
            "round": round_number,
            "clients": clients,
            "threads": threads,
            "requests": transactions,
            "requests_per_second": float(tps.group(1)),
            "failed": int(failed.group(1)) if failed else 0,
            "latency_us": {"p50": percentile(0.50), "p90": percentile(0.90), "p99": percentile(0.99),
                           "max": latencies[-1] if latencies else None},
        }
        item.update(self.usage(before, after, transactions))
        self.ceilings.append(item)
        log(f"round {round_number} ceiling    c{clients:<9} {item['requests_per_second']:>10,.0f} tps    "
            f"p50 {ms_or_dash(item['latency_us']['p50'])} ms  p99 {ms_or_dash(item['latency_us']['p99'])} ms  "
            f"pg {item['postgres_cpu_ms_per_request']:.3f} ms/tx")
        self.save()

    def ceilings_for_round(self, round_number):
        ours = self.targets[0]
        if "ceiling_sql_check" not in self.meta and "list" in self.args.workloads:
            self.check_ceiling_sql(ours)
        pool = int(os.environ.get("DB_POOL_SIZE") or 2 * (os.cpu_count() or 1))
        self.measure_ceiling(ours, self.args.connections, self.args.threads, round_number)
        if pool != self.args.connections:
            self.measure_ceiling(ours, pool, min(self.args.threads, pool), round_number)

    # ----- results -----

    def save(self):
        targets = []
        for target in self.targets:
            targets.append({"name": target.name, "command": target.display, "schema": target.schema,
                            "seed": target.seed, "warnings": target.warnings,
                            "peak_rss_kib": getattr(target, "peak_rss_kib", None)})
        self.meta["targets"] = targets
        self.meta["warnings"] = self.warnings + [warning for target in self.targets for warning in target.warnings]
        document = {"meta": self.meta, "measurements": self.measurements, "ceilings": self.ceilings,
                    "medians": [item for item in report.median_of_rounds(self.measurements).values()],
                    "ceiling_medians": [item for item in report.median_of_rounds(self.ceilings).values()]}
        with open(os.path.join(self.out, "results.json"), "w") as file:
            json.dump(document, file, indent=2)
            file.write("\n")

    # ----- the run -----

    def run(self):
        args = self.args
        os.makedirs(os.path.join(self.out, "wrk"), exist_ok=True)
        self.check_tools()
        binary = self.build()
        self.workdir = tempfile.mkdtemp(prefix="locify-http-bench.", dir="/tmp")
        os.chmod(self.workdir, 0o755)
        self.meta = {
            "started_utc": self.started.strftime("%Y-%m-%dT%H:%M:%SZ"),
            "project_revision": self.project_revision(),
            "machine": self.machine(),
            "options": {key: value for key, value in vars(args).items() if key != "project"},
            "command": "bench/http/run " + shlex.join(sys.argv[1:]),
        }
        if args.ceiling:
            self.meta["ceiling_script"] = "bench/http/ceiling-list.sql"
            self.meta["ceiling_target"] = "locify"

        key = firebase_keys.SigningKey(self.workdir)
        self.certs = firebase_keys.CertificateServer(key)
        minter = firebase_keys.TokenMinter(key, PROJECT_ID)
        self.users = firebase_keys.BenchUsers(minter, [str(USER_ID_BASE + index) for index in range(1, args.users + 1)])

        self.targets.append(Target("locify", [binary], False, None, self.workdir))
        if args.peer:
            self.targets.append(Target(args.peer_name, ["bash", "-c", args.peer], True, args.peer_schema, self.workdir))
        self.save()
        for target in self.targets:
            self.set_up(target)
            self.save()

        log(f"measuring: {', '.join(args.workloads)}; {args.rounds} round(s) of {args.warmup} + {args.duration} s each")
        for round_number in range(1, args.rounds + 1):
            # Alternate which target goes first, so neither always follows the other.
            order = self.targets if round_number % 2 == 1 else list(reversed(self.targets))
            for workload in args.workloads:
                for target in order:
                    self.measure(target, workload, round_number)
                if workload == "list" and args.ceiling:
                    self.ceilings_for_round(round_number)
            if args.ceiling and "list" not in args.workloads:
                self.ceilings_for_round(round_number)

        for target in self.targets:
            target.peak_rss_kib = procstat.largest_rss_kib(target.process.pid, "VmHWM")
        self.meta["finished_utc"] = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        self.save()
        table = report.render(self.meta, self.measurements, self.ceilings)
        with open(os.path.join(self.out, "table.txt"), "w") as file:
            file.write(table)
        sys.stdout.write(table)
        sys.stdout.flush()

    def clean_up(self):
        for target in reversed(self.targets):
            try:
                self.stop_server(target)
            except Exception as error:  # keep cleaning up
                log(f"stopping {target.name}: {error}")
            if os.path.exists(target.log_path):
                try:
                    with open(os.path.join(self.out, f"server-{target.name}.log.tail"), "w") as file:
                        file.write(tail(target.log_path, 200) + "\n")
                except OSError:
                    pass
            if target.pg_port is not None or os.path.exists(os.path.join(target.cluster, "data")):
                try:
                    self.postgres.stop(target.cluster, remove=not self.args.keep)
                except Exception as error:
                    log(f"stopping {target.name}'s PostgreSQL: {error}")
        if self.certs is not None:
            self.certs.close()
        if self.workdir:
            if self.args.keep:
                log(f"kept the work folder {self.workdir} (clusters stopped)")
            else:
                shutil.rmtree(self.workdir, ignore_errors=True)


def ms_or_dash(microseconds):
    return "-" if microseconds is None else f"{microseconds / 1000:.2f}"


def normalized_sql(text):
    """SQL without comments, with white space collapsed and every parameter ($1, :name) as `?`."""
    text = re.sub(r"--[^\n]*", " ", text)
    text = re.sub(r"\$\d+|:[A-Za-z_]\w*", "?", text)
    return " ".join(text.split()).rstrip(";").strip()


def main(argv):
    args = parse_arguments(argv)
    def abort(signum, _frame):
        raise Aborted(f"received {signal.Signals(signum).name}")

    def out_of_time(_signum, _frame):
        raise Aborted(f"the run exceeded --max-runtime {args.max_runtime} s")

    for number in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(number, abort)
    signal.signal(signal.SIGALRM, out_of_time)
    signal.alarm(args.max_runtime)

    bench = Bench(args)
    status = 0
    try:
        bench.run()
        log(f"results in {bench.out}")
    except (Aborted, seeding.SeedError) as error:
        log(f"stopped: {error}")
        status = 1
    except Exception:
        import traceback
        traceback.print_exc()
        status = 1
    finally:
        signal.alarm(0)
        for number in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(number, signal.SIG_IGN)
        bench.clean_up()
        if status and os.path.isdir(bench.out):
            log(f"partial results in {bench.out}")
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
