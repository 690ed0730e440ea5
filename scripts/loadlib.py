"""Shared helpers of the reliability scripts (scripts/chaos-db, scripts/chaos-process,
scripts/load, scripts/soak): a private PostgreSQL cluster, the release server as a child process
in Firebase Auth emulator mode, emulator tokens, a keep-alive write load that records the fate of
every request, and process sampling (RSS, open file descriptors).

Only the Python standard library is used. See RELIABILITY.md for what each script measures.
"""

import base64
import http.client
import json
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROJECT_ID = "demo-locify"


def log(message):
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def build_server():
    """Builds the release server (once per call) and returns the binary's path."""
    log("building locify-server (release)")
    subprocess.run(["swift", "build", "-c", "release", "--product", "locify-server"], cwd=ROOT, check=True,
                   stdout=subprocess.DEVNULL)
    bin_path = subprocess.check_output(["swift", "build", "-c", "release", "--show-bin-path"], cwd=ROOT, text=True)
    return str(Path(bin_path.strip()) / "locify-server")


def token(uid, project=PROJECT_ID, lifetime=7200):
    """An Auth-emulator ID token (alg none) for `uid`, as scripts/dev-token mints."""
    def b64(data):
        return base64.urlsafe_b64encode(json.dumps(data, separators=(",", ":")).encode()).rstrip(b"=").decode()
    now = int(time.time())
    claims = {"iss": f"https://securetoken.google.com/{project}", "aud": project, "sub": uid, "user_id": uid,
              "iat": now, "exp": now + lifetime, "auth_time": now,
              "firebase": {"sign_in_provider": "password", "identities": {}}}
    return b64({"alg": "none", "typ": "JWT"}) + "." + b64(claims) + "."


class Cluster:
    """A private PostgreSQL cluster (scripts/pg-cluster.sh) in a temporary folder, with
    synchronous_commit on: an acknowledged commit must survive an immediate shutdown."""

    def __init__(self, directory=None, port=None):
        self.directory = directory or tempfile.mkdtemp(prefix="locify-chaos-pg.")
        self.bindir = subprocess.check_output([str(ROOT / "scripts/pg-cluster.sh"), "bindir"], text=True).strip()
        self.port = port

    def start(self):
        url = subprocess.check_output([str(ROOT / "scripts/pg-cluster.sh"), "start", self.directory], text=True).strip()
        self.port = int(url.rsplit(":", 1)[1].split("/")[0])
        return url

    def stop(self, mode="fast"):
        subprocess.run([str(ROOT / "scripts/pg-cluster.sh"), "stop", self.directory, mode], check=True,
                       stderr=subprocess.DEVNULL)

    def remove(self):
        subprocess.run([str(ROOT / "scripts/pg-cluster.sh"), "remove", self.directory], stderr=subprocess.DEVNULL)
        shutil.rmtree(self.directory, ignore_errors=True)

    def url(self, database="locify"):
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    def psql(self, sql, database="locify", stdin=None):
        """Runs `sql` (with ON_ERROR_STOP) and returns the unaligned, tuples-only output."""
        result = subprocess.run(
            [f"{self.bindir}/psql", "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres", "-d", database,
             "-v", "ON_ERROR_STOP=1", "-tAX", "-F", "\t", "-c", sql] if stdin is None else
            [f"{self.bindir}/psql", "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres", "-d", database,
             "-v", "ON_ERROR_STOP=1", "-tAX", "-F", "\t", "-f", "-"],
            input=stdin, capture_output=True, text=True)
        if result.returncode != 0:
            raise RuntimeError(f"psql failed: {result.stderr.strip()}")
        return result.stdout

    def prepare(self):
        """Starts the cluster, turns synchronous_commit on and creates database `locify`."""
        self.start()
        self.psql("ALTER SYSTEM SET synchronous_commit = on", database="postgres")
        self.psql("SELECT pg_reload_conf()", database="postgres")
        if self.psql("SELECT 1 FROM pg_database WHERE datname = 'locify'", database="postgres").strip() != "1":
            self.psql("CREATE DATABASE locify", database="postgres")

    def terminate_server_backends(self):
        out = self.psql("SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) FROM pg_stat_activity "
                        "WHERE application_name = 'locify-server'", database="postgres")
        return int(out.strip() or 0)

    def missing_ids(self, ids, users):
        """How many of `ids` (category ids) are not stored live for any of `users`."""
        if not ids:
            return 0
        users_sql = ",".join("'" + u.replace("'", "''") + "'" for u in users)
        script = ("CREATE TEMP TABLE acked (id uuid);\nCOPY acked FROM STDIN;\n" + "\n".join(ids) + "\n\\.\n"
                  f"SELECT count(*) FROM acked a WHERE NOT EXISTS (SELECT 1 FROM categories c WHERE c.id = a.id "
                  f"AND c.user_id IN ({users_sql}) AND c.deleted_at IS NULL);\n")
        return int(self.psql(None, stdin=script).strip().splitlines()[-1])


class Server:
    """locify-server as a child process (emulator auth, rate limit off unless overridden)."""

    def __init__(self, binary, database_url, port=None, env=None, log_path=None, log_level="warning"):
        self.binary = binary
        self.port = port or free_port()
        self.log_path = log_path or tempfile.mktemp(prefix="locify-server.", suffix=".log")
        self.env = dict(os.environ)
        self.env.update({
            "DATABASE_URL": database_url, "PORT": str(self.port), "HOST": "127.0.0.1",
            "FIREBASE_PROJECT_ID": PROJECT_ID, "FIREBASE_AUTH_EMULATOR_HOST": "127.0.0.1:9",
            "LOCIFY_MIGRATIONS_DIR": str(ROOT / "migrations"), "LOCIFY_RATE_LIMIT_PER_SECOND": "0",
            "LOCIFY_ADDRESS_RATE_LIMIT_PER_SECOND": "0",
            "LOG_LEVEL": log_level,
        })
        self.env.update(env or {})
        self.process = None

    def start(self, timeout=90):
        log_file = open(self.log_path, "ab")
        self.process = subprocess.Popen([self.binary], cwd=ROOT, env=self.env, stdout=log_file, stderr=subprocess.STDOUT,
                                        stdin=subprocess.DEVNULL)
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"locify-server exited with {self.process.returncode}; log {self.log_path}")
            try:
                if request("GET", self.port, "/health")[0] == 200:
                    return self
            except OSError:
                pass
            time.sleep(0.1)
        raise RuntimeError(f"locify-server did not answer /health; log {self.log_path}")

    @property
    def pid(self):
        return self.process.pid

    def signal(self, number):
        self.process.send_signal(number)

    def kill_hard(self):
        if self.process and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait()

    def wait(self, timeout):
        try:
            return self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None

    def rss_kib(self):
        with open(f"/proc/{self.pid}/status") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        return 0

    def open_fds(self):
        return len(os.listdir(f"/proc/{self.pid}/fd"))

    def threads(self):
        return len(os.listdir(f"/proc/{self.pid}/task"))

    def log_records(self):
        records = []
        with open(self.log_path, errors="replace") as lines:
            for line in lines:
                try:
                    records.append(json.loads(line))
                except ValueError:
                    pass
        return records


def request(method, port, path, body=None, token_value=None, headers=None, timeout=30):
    """One request on a fresh connection: (status, headers, parsed JSON body or None)."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        fields = {"Connection": "close"}
        if token_value:
            fields["Authorization"] = "Bearer " + token_value
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            fields["Content-Type"] = "application/json"
        fields.update(headers or {})
        connection.request(method, path, body=data, headers=fields)
        response = connection.getresponse()
        raw = response.read()
        try:
            parsed = json.loads(raw) if raw else None
        except ValueError:
            parsed = None
        return response.status, dict(response.getheaders()), parsed
    finally:
        connection.close()


class WriteLoad:
    """Writers, one per user, each on its own keep-alive connection (reopened when closed or
    broken): category creates and, every fourth request, a push of three category creates (or a
    push of `big_push` changes when set, to keep requests in flight longer). Every request is
    recorded: request id, send and end time, status, error code, Retry-After, who answered (the
    server, or a proxy in front of it), acknowledged ids, transport error and whether it was fully
    sent."""

    def __init__(self, port, writers=8, prefix="load", big_push=0, timeout=30):
        self.port = port
        self.users = [f"{prefix}-{i}-{uuid.uuid4().hex[:8]}" for i in range(writers)]
        self.tokens = [token(u) for u in self.users]
        self.big_push = big_push
        self.timeout = timeout
        self.outcomes = []
        self.acked = 0
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.threads = []

    def start(self):
        for index in range(len(self.users)):
            thread = threading.Thread(target=self._run, args=(index,), daemon=True)
            thread.start()
            self.threads.append(thread)

    def stop(self):
        self.stopping.set()
        for thread in self.threads:
            thread.join()
        return self.outcomes

    def acknowledged_count(self):
        with self.lock:
            return self.acked

    def wait_for_progress(self, count, timeout=60):
        target = self.acknowledged_count() + count
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.acknowledged_count() >= target:
                return True
            time.sleep(0.01)
        return False

    def _run(self, writer):
        connection = None
        sequence = 0
        while not self.stopping.is_set():
            sequence += 1
            is_push = sequence % 4 == 0
            size = (self.big_push or 3) if is_push else 1
            ids = [str(uuid.uuid4()) for _ in range(size)]
            request_id = f"{writer}-{sequence}-{random.getrandbits(32)}"
            if is_push:
                path = "/v1/sync/push"
                body = {"changes": [{"type": "category", "action": "create", "data": {"id": i, "name": f"pushed {i[:8]}"}}
                                    for i in ids]}
            else:
                path = "/v1/categories"
                body = {"id": ids[0], "name": f"load {ids[0][:8]}"}
            outcome = {"request_id": request_id, "writer": writer, "kind": "push" if is_push else "create",
                       "status": None, "code": None, "retry_after": None, "acked": [], "error": None,
                       "sent": False, "start": time.time(), "end": None}
            try:
                if connection is None:
                    connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=self.timeout)
                connection.request("POST", path, body=json.dumps(body).encode(), headers={
                    "Authorization": "Bearer " + self.tokens[writer], "Content-Type": "application/json",
                    "X-Request-Id": request_id})
                outcome["sent"] = True
                response = connection.getresponse()
                raw = response.read()
                outcome["status"] = response.status
                outcome["retry_after"] = response.getheader("Retry-After")
                # The server echoes X-Request-Id; a load balancer's own answer has none, or (as
                # scripts/cluster's HAProxy) one of its own starting with "lb-".
                echoed = response.getheader("X-Request-Id") or ""
                outcome["origin"] = "proxy" if not echoed or echoed.startswith("lb-") else "server"
                parsed = json.loads(raw) if raw else {}
                if isinstance(parsed, dict) and isinstance(parsed.get("error"), dict):
                    outcome["code"] = parsed["error"].get("code")
                if not is_push and response.status == 201:
                    outcome["acked"] = ids
                elif is_push and response.status == 200:
                    results = parsed.get("results", [])
                    outcome["acked"] = [i for i, r in zip(ids, results) if r.get("status") == "applied"]
                if (response.getheader("Connection") or "").lower() == "close":
                    connection.close()
                    connection = None
            except (OSError, http.client.HTTPException, ValueError) as error:
                outcome["error"] = f"{type(error).__name__}: {error}"
                if connection is not None:
                    connection.close()
                connection = None
                time.sleep(0.02)
            outcome["end"] = time.time()
            with self.lock:
                self.outcomes.append(outcome)
                self.acked += len(outcome["acked"])
        if connection is not None:
            connection.close()


def acknowledged_ids(outcomes):
    return [i for o in outcomes for i in o["acked"]]


def percentile(values, fraction):
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


class Sampler:
    """Samples a process's RSS (KiB), open fds and threads every `interval` seconds into a CSV."""

    def __init__(self, server, path, interval=5.0, extra=None):
        self.server = server
        self.path = path
        self.interval = interval
        self.extra = extra
        self.samples = []
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def start(self):
        self.thread.start()
        return self

    def stop(self):
        self.stopping.set()
        self.thread.join()
        return self.samples

    def _run(self):
        started = time.time()
        with open(self.path, "w") as csv:
            csv.write("seconds,rss_kib,open_fds,threads" + (",extra" if self.extra else "") + "\n")
            while True:
                try:
                    sample = [round(time.time() - started, 1), self.server.rss_kib(), self.server.open_fds(),
                              self.server.threads()]
                except OSError:
                    break
                if self.extra:
                    sample.append(self.extra())
                self.samples.append(sample)
                csv.write(",".join(str(v) for v in sample) + "\n")
                csv.flush()
                if self.stopping.wait(self.interval):
                    break


def ensure_wrk():
    """Installs wrk with apt-get when it is not on PATH."""
    if shutil.which("wrk"):
        return
    log("installing wrk")
    subprocess.run(["apt-get", "update", "-qq"], check=True)
    subprocess.run(["apt-get", "install", "-y", "-qq", "wrk"], check=True,
                   env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"})


def open_connections(port):
    """The server's http_open_connections gauge (from /metrics), -1 when it cannot be read."""
    try:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        connection.request("GET", "/metrics")
        text = connection.getresponse().read().decode()
        connection.close()
        match = re.search(r"^http_open_connections (\d+)", text, re.M)
        return int(match.group(1)) if match else -1
    except (OSError, http.client.HTTPException):
        return -1
