"""Seeds a server through its HTTP API: per user `categories` categories holding
`locations` locations each, with deterministic ids and contents, so every server in a run holds
the same data.

Through `POST /v1/sync/push` in batches of 50 changes when the server has it; otherwise (a peer
that implements only the single-record endpoints) through `POST /v1/categories` and
`POST /v1/locations`. Categories first, then locations, round-robin over users so concurrent
requests spread over users. Every write must succeed, and the totals are checked afterwards.
"""

import concurrent.futures
import http.client
import json
import threading
import time
import uuid

NAMESPACE = uuid.UUID("3d8d5f0e-51c4-4c73-9d35-6f1c0a0b7e42")
PUSH_BATCH = 50


class SeedError(Exception):
    pass


class Client:
    """A keep-alive HTTP/1.1 client for one server, reconnecting once when the connection drops."""

    def __init__(self, port, timeout=60):
        self.port = port
        self.timeout = timeout
        self._connection = None

    def request(self, method, path, token=None, body=None):
        headers = {"Accept": "application/json"}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        payload = None
        if body is not None:
            payload = json.dumps(body, separators=(",", ":")).encode()
            headers["Content-Type"] = "application/json"
        for attempt in (1, 2):
            if self._connection is None:
                self._connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=self.timeout)
            try:
                self._connection.request(method, path, body=payload, headers=headers)
                response = self._connection.getresponse()
                raw = response.read()
                if response.getheader("Connection", "").lower() == "close":
                    self.close()
                break
            except (ConnectionError, http.client.HTTPException, TimeoutError, OSError):
                self.close()
                if attempt == 2:
                    raise
        try:
            parsed = json.loads(raw) if raw else None
        except ValueError:
            parsed = None
        return response.status, parsed, raw

    def close(self):
        if self._connection is not None:
            self._connection.close()
            self._connection = None


def category_id(uid, index):
    return str(uuid.uuid5(NAMESPACE, f"{uid}/category/{index}"))


def category_record(uid, index):
    return {"id": category_id(uid, index), "name": f"Bench category {index:02d}"}


def location_record(uid, category_index, index):
    """Deterministic contents with the usual mix: an address on every other record, a
    description on every third, an image on every fourth, every tenth a favourite."""
    number = category_index * 100_000 + index
    record = {
        "id": str(uuid.uuid5(NAMESPACE, f"{uid}/location/{category_index}/{index}")),
        "category_id": category_id(uid, category_index),
        "name": f"Place {category_index:02d}-{index:04d}",
        "latitude": round((number * 7919 % 17_000_000) / 100_000 - 85, 6),
        "longitude": round((number * 104_729 % 35_000_000) / 100_000 - 175, 6),
        "is_favorite": index % 10 == 0,
    }
    if index % 2 == 0:
        record["address"] = f"{index % 900 + 1} Seed Street, Bench City"
    if index % 3 == 0:
        record["description"] = f"Seeded location {index} of category {category_index}, for the HTTP benchmark."
    if index % 4 == 0:
        record["image_urls"] = [f"https://images.example.com/bench/{record['id']}.jpg"]
    return record


def supports_push(client, token):
    """Whether the server has the batch endpoint (a peer may not)."""
    status, _, raw = client.request("POST", "/v1/sync/push", token, {"changes": []})
    if status == 200:
        return True
    if status in (404, 405):
        return False
    raise SeedError(f"POST /v1/sync/push with no changes answered {status}: {raw[:300]!r}")


def round_robin(lists):
    """Items of several lists interleaved: a1, b1, c1, a2, b2, ..."""
    result = []
    longest = max((len(items) for items in lists), default=0)
    for position in range(longest):
        for items in lists:
            if position < len(items):
                result.append(items[position])
    return result


def seed(port, users, categories, locations, concurrency=8, mode="auto", log=print):
    """Writes the data for `users` (firebase_keys.BenchUsers) and records their category ids.
    Returns a summary dict."""
    started = time.monotonic()
    probe = Client(port)
    first = users.uids[0]
    if mode == "auto":
        mode = "push" if supports_push(probe, users.token(first)) else "single"
    probe.close()
    log(f"seeding {len(users.uids)} users x {categories} categories x {locations} locations ({mode})")

    category_tasks = []
    location_tasks = []
    for uid in users.uids:
        records = [category_record(uid, index) for index in range(1, categories + 1)]
        users.category_ids[uid] = [record["id"] for record in records]
        category_tasks.append([("category", uid, records[start:start + PUSH_BATCH])
                               for start in range(0, len(records), PUSH_BATCH)])
        mine = [location_record(uid, category_index, index)
                for category_index in range(1, categories + 1) for index in range(1, locations + 1)]
        location_tasks.append([("location", uid, mine[start:start + PUSH_BATCH])
                               for start in range(0, len(mine), PUSH_BATCH)])

    local = threading.local()
    clients = []
    clients_lock = threading.Lock()
    failures = []
    progress = {"records": 0}
    progress_lock = threading.Lock()

    def client():
        if not hasattr(local, "client"):
            local.client = Client(port)
            with clients_lock:
                clients.append(local.client)
        return local.client

    def run(task):
        kind, uid, records = task
        token = users.token(uid)
        problems = []
        if mode == "push":
            changes = [{"type": kind, "action": "create", "data": record} for record in records]
            status, body, raw = client().request("POST", "/v1/sync/push", token, {"changes": changes})
            if status != 200 or not isinstance(body, dict) or len(body.get("results", [])) != len(records):
                problems.append(f"push of {len(records)} {kind}s for {uid}: {status} {raw[:300]!r}")
            else:
                for result in body["results"]:
                    if result.get("status") != "applied":
                        problems.append(f"push {kind} {result.get('id')} for {uid}: {json.dumps(result)[:300]}")
        else:
            path = "/v1/categories" if kind == "category" else "/v1/locations"
            for record in records:
                status, _, raw = client().request("POST", path, token, record)
                if status not in (200, 201):
                    problems.append(f"POST {path} {record['id']} for {uid}: {status} {raw[:300]!r}")
        with progress_lock:
            progress["records"] += len(records)
            failures.extend(problems)

    total = len(users.uids) * categories * (locations + 1)
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="seed")
    try:
        for phase in (round_robin(category_tasks), round_robin(location_tasks)):
            futures = [pool.submit(run, task) for task in phase]
            last_report = time.monotonic()
            for future in concurrent.futures.as_completed(futures):
                future.result()
                if failures:
                    raise SeedError("seeding failed:\n  " + "\n  ".join(failures[:10]))
                if time.monotonic() - last_report > 15:
                    last_report = time.monotonic()
                    log(f"  {progress['records']} of {total} records written")
    finally:
        # On failure or a signal, queued tasks are dropped; running ones end with their request.
        pool.shutdown(wait=False, cancel_futures=True)
        with clients_lock:
            for each in clients:
                each.close()

    verify(port, users, categories, locations)
    seconds = time.monotonic() - started
    log(f"seeded {total} records in {seconds:.1f} s")
    return {"mode": mode, "users": len(users.uids), "categories_per_user": categories,
            "locations_per_category": locations, "records": total, "seconds": round(seconds, 1)}


def verify(port, users, categories, locations):
    """Every user's location total and seeded categories are there, as the API reports them."""
    client = Client(port)
    try:
        for uid in users.uids:
            token = users.token(uid)
            status, body, raw = client.request("GET", "/v1/locations?page=1&size=1", token)
            total = (body or {}).get("meta", {}).get("total_count") if isinstance(body, dict) else None
            if status != 200 or total != categories * locations:
                raise SeedError(f"after seeding, GET /v1/locations for {uid}: {status}, total_count {total}, "
                                f"expected {categories * locations}: {raw[:300]!r}")
            status, body, raw = client.request("GET", "/v1/categories?page=1&size=100", token)
            listed = {item.get("id") for item in (body or {}).get("data", [])} if isinstance(body, dict) else set()
            missing = [cid for cid in users.category_ids[uid] if cid not in listed]
            if status != 200 or (categories <= 90 and missing):
                raise SeedError(f"after seeding, GET /v1/categories for {uid}: {status}, "
                                f"{len(missing)} seeded categories missing: {raw[:300]!r}")
    finally:
        client.close()
