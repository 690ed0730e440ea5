"""CPU time and memory of the processes a benchmark run owns, read from /proc (Linux only).

CPU is counted in clock ticks (utime + stime of /proc/<pid>/stat) and turned into seconds with
SC_CLK_TCK. A server is a session (it is started with start_new_session, so its session id is
its pid): its CPU is the sum over the session's live processes plus the leader's cutime/cstime
(children it has reaped). A PostgreSQL cluster is its postmaster and the postmaster's children;
backends that exited during a measurement are in the postmaster's cutime/cstime, so the total
only grows.
"""

import os
import threading
import time

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
PAGE_KIB = os.sysconf("SC_PAGE_SIZE") // 1024


class ProcStat:
    """The fields of /proc/<pid>/stat that the benchmark uses."""

    __slots__ = ("pid", "ppid", "session", "own_ticks", "children_ticks")

    def __init__(self, pid, ppid, session, own_ticks, children_ticks):
        self.pid = pid
        self.ppid = ppid
        self.session = session
        self.own_ticks = own_ticks
        self.children_ticks = children_ticks


def read_stat(pid):
    """The stat of one process, or None when it has gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as file:
            text = file.read().decode("ascii", "replace")
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    # The command name (field 2) may hold spaces and parentheses: split after the last ')'.
    fields = text[text.rfind(")") + 2:].split()
    # fields[0] is field 3 (state): ppid is field 4, session field 6, utime..cstime fields 14-17.
    return ProcStat(
        pid=pid,
        ppid=int(fields[1]),
        session=int(fields[3]),
        own_ticks=int(fields[11]) + int(fields[12]),
        children_ticks=int(fields[13]) + int(fields[14]),
    )


def all_stats():
    """The stat of every live process."""
    stats = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            stat = read_stat(int(name))
            if stat is not None:
                stats.append(stat)
    return stats


def session_ticks(leader, stats):
    """CPU ticks of a session: its live processes plus what the leader has reaped."""
    total = 0
    for stat in stats:
        if stat.session == leader:
            total += stat.own_ticks
            if stat.pid == leader:
                total += stat.children_ticks
    return total


def tree_ticks(root, stats):
    """CPU ticks of a process and its direct children, plus its exited children (PostgreSQL)."""
    total = 0
    for stat in stats:
        if stat.pid == root:
            total += stat.own_ticks + stat.children_ticks
        elif stat.ppid == root:
            total += stat.own_ticks
    return total


def machine_ticks():
    """Ticks of the whole machine (all cores) from /proc/stat: `process` (user, nice, system:
    time some process ran), `irq` (hard and soft interrupts, e.g. loopback packets processed
    outside any process) and `steal` (taken by the hypervisor)."""
    with open("/proc/stat") as file:
        fields = file.readline().split()
    user, nice, system, _idle, _iowait, irq, softirq, steal = (int(value) for value in fields[1:9])
    return {"process": user + nice + system, "irq": irq + softirq, "steal": steal}


def status_kib(pid, key):
    """A kB value (VmRSS, VmHWM) of /proc/<pid>/status, or 0 when the process has gone."""
    try:
        with open(f"/proc/{pid}/status") as file:
            for line in file:
                if line.startswith(key + ":"):
                    return int(line.split()[1])
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        pass
    return 0


def session_members(leader):
    """Pids of the live processes of a session."""
    return [stat.pid for stat in all_stats() if stat.session == leader]


def largest_rss_kib(leader, key="VmRSS"):
    """The largest VmRSS (or VmHWM) among a session's processes: the server's own, not its wrapper shell's."""
    return max((status_kib(pid, key) for pid in session_members(leader)), default=0)


class RSSSampler:
    """Samples the largest resident set of a session every `interval` seconds on its own thread."""

    def __init__(self, leader, interval=0.2):
        self.leader = leader
        self.interval = interval
        self.peak_kib = 0
        self._stop = threading.Event()
        self._members = session_members(leader)
        self._thread = threading.Thread(target=self._run, name="rss-sampler", daemon=True)

    def _run(self):
        while not self._stop.is_set():
            for pid in self._members:
                self.peak_kib = max(self.peak_kib, status_kib(pid, "VmRSS"))
            self._stop.wait(self.interval)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        for pid in self._members:
            self.peak_kib = max(self.peak_kib, status_kib(pid, "VmRSS"))
        return False


def postmaster_pid(data_dir):
    """The postmaster's pid from DATA/postmaster.pid, or None when the cluster is not running."""
    try:
        with open(os.path.join(data_dir, "postmaster.pid")) as file:
            return int(file.readline().strip())
    except (FileNotFoundError, ValueError):
        return None


def wait_for_quiet(bench_ticks, max_wait, threshold_cores=0.15, window=1.0):
    """Waits up to max_wait seconds for a window in which processes outside the benchmark
    (process time of the machine minus `bench_ticks()`) use less than threshold_cores; returns
    the cores they used in the last window."""
    deadline = time.monotonic() + max_wait
    others = 0.0
    while True:
        busy_before, bench_before, started = machine_ticks()["process"], bench_ticks(), time.monotonic()
        time.sleep(window)
        elapsed = time.monotonic() - started
        busy = machine_ticks()["process"] - busy_before
        bench = bench_ticks() - bench_before
        others = max(0.0, (busy - bench) / CLOCK_TICKS / elapsed)
        if others < threshold_cores or time.monotonic() >= deadline:
            return others
