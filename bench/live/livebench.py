#!/usr/bin/env python3
"""bench/live: live sync (long-poll pulls) at scale, run by hand (issue 24; figures in
bench/RESULTS.md, "Live sync (long-poll)").

    bench/live/run [--clients 10000] [--rate 1000] [--duration 30] [--latency-writes 400]
    bench/live/run --cluster [--clients 2000] ...     (3 instances behind HAProxy: scripts/cluster up)

One instance (default): builds the release server, starts a private PostgreSQL
(scripts/pg-cluster.sh; synchronous_commit on, fsync off) and one locify-server (Auth emulator
mode, rate limits off, LOCIFY_MAX_CONNECTIONS above --clients), then:

1. provisions --clients users (a snapshot pull each, which also gives each user its cursor);
2. memory and idle CPU: the server's RSS before and after every user holds a waiting pull
   (`wait=60`, one connection per user, re-sent as soon as answered), and its CPU time over --idle
   seconds while they all wait;
3. latency: --latency-writes creates, one after the other, each for a random waiting user: the time
   from the create's acknowledgement (its 201 read by the writer) to that user's pull answer
   carrying it;
4. throughput: creates at --rate per second for --duration seconds, spread at random over all users
   (who keep waiting); afterwards every acknowledged create must reach its user's follower within
   30 s ("missed" counts those that never did), with the same latency measure.

--cluster runs the same through HAProxy in front of 3 instances on one PostgreSQL (scripts/cluster
up --servers 3; memory per instance). The clients are one asyncio process (standard library only)
on the same machine: the figures include its scheduling delays. Not a test: nothing here asserts a
figure. Results: printed, and bench/results/live-<UTC time>/results.json.
"""

import argparse
import asyncio
import datetime
import json
import os
import random
import resource
import subprocess
import sys
import time
import urllib.request
import uuid
from pathlib import Path

sys.dont_write_bytecode = True
ROOT = Path(__file__).resolve().parent.parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
import loadlib  # noqa: E402
from loadlib import log  # noqa: E402

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def parse_arguments():
    parser = argparse.ArgumentParser(prog="bench/live/run", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clients", type=int, help="waiting users, one connection each (default 10000; --cluster 2000)")
    parser.add_argument("--rate", type=float, default=1000, help="creates per second in the throughput phase (default 1000)")
    parser.add_argument("--duration", type=float, default=30, help="seconds of the throughput phase (default 30)")
    parser.add_argument("--latency-writes", type=int, default=400, help="creates of the latency phase (default 400)")
    parser.add_argument("--idle", type=float, default=10, help="seconds of the idle CPU measurement (default 10)")
    parser.add_argument("--writers", type=int, default=64, help="writer connections of the throughput phase (default 64)")
    parser.add_argument("--wait", type=int, default=60, help="the pulls' wait, seconds (default 60)")
    parser.add_argument("--cluster", action="store_true", help="through HAProxy in front of 3 instances (scripts/cluster)")
    parser.add_argument("--no-build", action="store_true", help="use the existing release build")
    parser.add_argument("--notify-cost", action="store_true",
                        help="instead: what NOTIFY costs a write transaction with durable commits (pgbench; notify_cost.py)")
    parser.add_argument("--write-cost", action="store_true",
                        help="instead: CPU per create with live sync on and off, by process and backend (write_cost.py)")
    parser.add_argument("--out", help="results folder (default bench/results/live-<UTC time>)")
    args = parser.parse_args()
    if args.clients is None:
        args.clients = 2000 if args.cluster else 10000
    return args


# ---------------------------------------------------------------------------------------------
# A minimal HTTP/1.1 client on asyncio streams (keep-alive, Content-Length bodies only)


class Connection:
    def __init__(self, reader, writer):
        self.reader = reader
        self.writer = writer

    @classmethod
    async def open(cls, port):
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        return cls(reader, writer)

    async def request(self, method, path, token=None, body=None):
        head = f"{method} {path} HTTP/1.1\r\nHost: bench\r\n"
        if token:
            head += f"Authorization: Bearer {token}\r\n"
        data = b""
        if body is not None:
            data = json.dumps(body).encode()
            head += f"Content-Type: application/json\r\nContent-Length: {len(data)}\r\n"
        self.writer.write(head.encode() + b"\r\n" + data)
        raw = await self.reader.readuntil(b"\r\n\r\n")
        lines = raw.decode("latin-1").split("\r\n")
        status = int(lines[0].split(" ", 2)[1])
        headers = {}
        for line in lines[1:]:
            if ":" in line:
                name, value = line.split(":", 1)
                headers[name.strip().lower()] = value.strip()
        length = int(headers.get("content-length", "0"))
        payload = await self.reader.readexactly(length) if length else b""
        return status, headers, payload

    def close(self):
        self.writer.close()


# ---------------------------------------------------------------------------------------------
# Processes


def raise_fd_limit():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return hard


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def rss_mib(pid):
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def metric(port, name):
    """The value of the unlabelled series `name` of an instance's /metrics (None when absent)."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
        text = response.read().decode()
    for line in text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    return None


def tree_cpu_seconds(root_pid):
    """CPU seconds of `root_pid` and its children (PostgreSQL: the postmaster and its backends)."""
    total = cpu_seconds(root_pid)
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == root_pid:
            total += (int(fields[11]) + int(fields[12])) / CLOCK_TICKS
    return total


class Target:
    """What the clients talk to: one instance, or HAProxy in front of several."""

    def __init__(self, port, instances, postmaster=None):
        self.port = port
        self.instances = instances  # [(name, port, pid)]
        self.postmaster = postmaster

    def waiting(self):
        return sum(metric(port, "live_waiting_requests") or 0 for _, port, _ in self.instances)

    def rss(self):
        return {name: rss_mib(pid) for name, _, pid in self.instances}

    def cpu(self):
        """CPU seconds of each instance, and of PostgreSQL (all its processes) when known."""
        seconds = {name: cpu_seconds(pid) for name, _, pid in self.instances}
        if self.postmaster:
            seconds["postgres"] = tree_cpu_seconds(self.postmaster)
        return seconds


# ---------------------------------------------------------------------------------------------
# The bench


def percentiles(values):
    if not values:
        return {"count": 0}
    values = sorted(values)

    def at(fraction):
        return values[min(len(values) - 1, int(fraction * len(values)))]
    return {"count": len(values), "p50_ms": round(at(0.5) * 1000, 2), "p90_ms": round(at(0.9) * 1000, 2),
            "p99_ms": round(at(0.99) * 1000, 2), "max_ms": round(values[-1] * 1000, 2)}


class Bench:
    def __init__(self, args, target):
        self.args = args
        self.target = target
        self.users = [f"live-{i}-{uuid.uuid4().hex[:6]}" for i in range(args.clients)]
        self.tokens = {user: loadlib.token(user, lifetime=6 * 3600) for user in self.users}
        self.cursors = {}
        self.arrived = {}
        self.answers = 0
        self.errors = {}
        self.stopping = False
        self.followers = []

    def note_error(self, key):
        self.errors[key] = self.errors.get(key, 0) + 1

    async def provision(self, concurrency=32):
        queue = list(self.users)

        async def worker():
            connection = await Connection.open(self.target.port)
            while queue:
                user = queue.pop()
                status, _, payload = await connection.request("GET", "/v1/sync/changes?limit=1000", self.tokens[user])
                if status != 200:
                    raise RuntimeError(f"provisioning pull answered {status}: {payload[:200]!r}")
                self.cursors[user] = json.loads(payload)["cursor"]
            connection.close()
        started = time.monotonic()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        return time.monotonic() - started

    async def follow(self, user):
        connection = None
        while not self.stopping:
            try:
                if connection is None:
                    connection = await Connection.open(self.target.port)
                status, headers, payload = await connection.request(
                    "GET", f"/v1/sync/changes?limit=1000&wait={self.args.wait}&since={self.cursors[user]}", self.tokens[user])
            except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError) as error:
                self.note_error(type(error).__name__)
                if connection:
                    connection.close()
                connection = None
                await asyncio.sleep(0.2)
                continue
            now = time.monotonic()
            if status == 200:
                body = json.loads(payload)
                for change in body["changes"]:
                    self.arrived.setdefault(change["id"], now)
                self.cursors[user] = body["cursor"]
                self.answers += 1
            else:
                self.note_error(status)
                await asyncio.sleep(0.5)
            if headers.get("connection", "").lower() == "close":
                connection.close()
                connection = None
        if connection:
            connection.close()

    async def open_waits(self):
        started = time.monotonic()
        for index, user in enumerate(self.users):
            self.followers.append(asyncio.create_task(self.follow(user)))
            if index % 200 == 199:
                await asyncio.sleep(0.02)
        while self.target.waiting() < len(self.users):
            await asyncio.sleep(0.5)
            if time.monotonic() - started > 300:
                raise RuntimeError(f"only {self.target.waiting()} of {len(self.users)} pulls wait after 300 s")
        return time.monotonic() - started

    async def create(self, connection, user):
        """One create for `user`; (id, acknowledgement time) or None when refused."""
        ident = str(uuid.uuid4())
        status, _, payload = await connection.request("POST", "/v1/categories", self.tokens[user],
                                                      {"id": ident, "name": f"live {ident[:8]}"})
        if status != 201:
            self.note_error(f"create {status}")
            return None
        return ident, time.monotonic()

    async def latency_phase(self):
        connection = await Connection.open(self.target.port)
        latencies = []
        early = 0
        lost = 0
        for _ in range(self.args.latency_writes):
            user = random.choice(self.users)
            created = await self.create(connection, user)
            if created is None:
                continue
            ident, acknowledged = created
            deadline = time.monotonic() + 10
            while ident not in self.arrived and time.monotonic() < deadline:
                await asyncio.sleep(0.001)
            if ident not in self.arrived:
                lost += 1
                continue
            delay = self.arrived[ident] - acknowledged
            early += delay < 0
            latencies.append(max(0.0, delay))
            await asyncio.sleep(0.02)
        connection.close()
        return {"latency": percentiles(latencies), "answered_before_acknowledgement": early,
                "not_delivered_within_10s": lost}

    async def throughput_phase(self):
        """Creates at --rate for --duration, sent by a child process (bench/live/livebench.py
        --write-child) so the followers here keep a core's share of their own; both read
        CLOCK_MONOTONIC, so acknowledgement and arrival times compare."""
        child = await asyncio.create_subprocess_exec(
            sys.executable, __file__, "--write-child", stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE)
        order = {"port": self.target.port, "rate": self.args.rate, "duration": self.args.duration,
                 "writers": self.args.writers, "users": [[user, self.tokens[user]] for user in self.users]}
        cpu_before = self.target.cpu()
        started = time.monotonic()
        output, _ = await child.communicate(json.dumps(order).encode())
        elapsed = time.monotonic() - started
        cpu_after = self.target.cpu()
        report = json.loads(output)
        acked = report["acked"]
        for key, count in report["errors"].items():
            self.errors[key] = self.errors.get(key, 0) + count
        deadline = time.monotonic() + 30
        while any(i not in self.arrived for i in acked) and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
        missed = [i for i in acked if i not in self.arrived]
        delays = [self.arrived[i] - t for i, t in acked.items() if i in self.arrived]
        return {"writes_sent": report["sent"], "acknowledged": len(acked), "seconds": round(report["seconds"], 2),
                "achieved_rate": round(len(acked) / report["seconds"], 1), "missed": len(missed),
                "latency": percentiles([max(0.0, d) for d in delays]),
                "answered_before_acknowledgement": sum(d < 0 for d in delays),
                "server_cpu_cores": {name: round((cpu_after[name] - cpu_before[name]) / elapsed, 2) for name in cpu_after},
                "writer_process_cpu_cores": round(report["cpu_seconds"] / report["seconds"], 2)}

    async def run(self):
        results = {"clients": len(self.users), "wait": self.args.wait}
        log(f"provisioning {len(self.users)} users")
        results["provision_seconds"] = round(await self.provision(), 1)
        await asyncio.sleep(3)  # the memory trim (every second) hands back what provisioning freed
        rss_before = self.target.rss()
        log(f"RSS before the waits: {rss_before}")
        log(f"opening {len(self.users)} waiting pulls")
        results["open_seconds"] = round(await self.open_waits(), 1)
        await asyncio.sleep(3)
        rss_waiting = self.target.rss()
        results["rss_mib_before"] = {k: round(v, 1) for k, v in rss_before.items()}
        results["rss_mib_waiting"] = {k: round(v, 1) for k, v in rss_waiting.items()}
        results["rss_growth_mib"] = {k: round(rss_waiting[k] - rss_before[k], 1) for k in rss_before}
        log(f"RSS with every pull waiting: {rss_waiting}")
        cpu_before = self.target.cpu()
        bench_before = cpu_seconds(os.getpid())
        await asyncio.sleep(self.args.idle)
        cpu_after = self.target.cpu()
        results["idle_cpu_percent_of_a_core"] = {
            name: round((cpu_after[name] - cpu_before[name]) / self.args.idle * 100, 2) for name in cpu_after}
        results["idle_bench_client_cpu_percent"] = round((cpu_seconds(os.getpid()) - bench_before) / self.args.idle * 100, 2)
        log(f"idle CPU: {results['idle_cpu_percent_of_a_core']} % of a core")
        log(f"latency phase: {self.args.latency_writes} creates one after the other")
        results["latency_phase"] = await self.latency_phase()
        log(f"latency: {results['latency_phase']}")
        log(f"throughput phase: {self.args.rate}/s for {self.args.duration} s over {len(self.users)} waiting users")
        results["throughput_phase"] = await self.throughput_phase()
        log(f"throughput: {results['throughput_phase']}")
        results["rss_mib_after"] = {k: round(v, 1) for k, v in self.target.rss().items()}
        results["pull_answers"] = self.answers
        results["errors"] = {str(k): v for k, v in self.errors.items()}
        self.stopping = True
        for task in self.followers:
            task.cancel()
        await asyncio.gather(*self.followers, return_exceptions=True)
        return results


async def write_child(order):
    """The writers of the throughput phase, in a process of their own: creates at `rate` for
    `duration` seconds (open loop: each is due at its own time, sent late when the writers fall
    behind), each for a random user; reports every acknowledged id with its acknowledgement time."""
    users = order["users"]
    rate, duration = order["rate"], order["duration"]
    total = int(rate * duration)
    acked = {}
    errors = {}
    next_index = 0
    started = time.monotonic()

    async def writer():
        nonlocal next_index
        connection = await Connection.open(order["port"])
        while next_index < total:
            index = next_index
            next_index += 1
            delay = started + index / rate - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
            user, token = random.choice(users)
            ident = str(uuid.uuid4())
            try:
                status, _, _ = await connection.request("POST", "/v1/categories", token, {"id": ident, "name": f"live {ident[:8]}"})
            except (OSError, asyncio.IncompleteReadError) as error:
                errors[f"create {type(error).__name__}"] = errors.get(f"create {type(error).__name__}", 0) + 1
                connection.close()
                connection = await Connection.open(order["port"])
                continue
            if status == 201:
                acked[ident] = time.monotonic()
            else:
                errors[f"create {status}"] = errors.get(f"create {status}", 0) + 1
        connection.close()
    await asyncio.gather(*(writer() for _ in range(order["writers"])))
    return {"sent": total, "acked": acked, "errors": errors, "seconds": time.monotonic() - started,
            "cpu_seconds": cpu_seconds(os.getpid())}


def start_single(args):
    binary = loadlib.build_server() if not args.no_build else str(ROOT / ".build/release/locify-server")
    cluster = loadlib.Cluster()
    cluster.prepare()
    server = loadlib.Server(binary, cluster.url(), env={
        "LOCIFY_MAX_CONNECTIONS": str(args.clients + 2000), "LOG_LEVEL": "warning"})
    server.start()
    log(f"locify-server pid {server.pid} on port {server.port}; PostgreSQL on {cluster.port}")
    postmaster = int(Path(cluster.directory, "data/postmaster.pid").read_text().split()[0])
    return (Target(server.port, [("s1", server.port, server.pid)], postmaster),
            lambda: (server.kill_hard(), cluster.remove()))


def start_cluster(args):
    env = dict(os.environ, LOG_LEVEL="warning")
    subprocess.run([str(ROOT / "scripts/cluster"), "up", "--servers", "3", "--for", "1800"], check=True, env=env)
    state = json.loads((ROOT / ".local/cluster/state.json").read_text())
    instances = [(s["name"], s["port"], s["pid"]) for s in state["servers"]]
    postmaster = int(Path(state["pg"]["dir"], "data/postmaster.pid").read_text().split()[0])
    log(f"HAProxy on {state['lb_port']}, instances {instances}")
    return (Target(state["lb_port"], instances, postmaster),
            lambda: subprocess.run([str(ROOT / "scripts/cluster"), "down"]))


def main():
    if sys.argv[1:] == ["--write-child"]:
        raise_fd_limit()
        print(json.dumps(asyncio.run(write_child(json.load(sys.stdin)))))
        return
    args = parse_arguments()
    if args.notify_cost:
        import notify_cost
        notify_cost.run(build=not args.no_build)
        return
    if args.write_cost:
        import write_cost
        write_cost.run(build=not args.no_build)
        return
    limit = raise_fd_limit()
    if limit < args.clients + 1000:
        raise SystemExit(f"the open-file limit ({limit}) is too low for {args.clients} clients")
    target, stop = (start_cluster if args.cluster else start_single)(args)
    try:
        results = asyncio.run(Bench(args, target).run())
    finally:
        stop()
    results["mode"] = "3 instances behind HAProxy" if args.cluster else "one instance"
    results["arguments"] = vars(args)
    results["machine"] = {"cores": os.cpu_count(), "load_average": os.getloadavg()}
    out = Path(args.out or ROOT / "bench/results" / ("live-" + datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")))
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(results, indent=1))
    print(json.dumps(results, indent=1))
    log(f"results in {out}")


if __name__ == "__main__":
    main()
