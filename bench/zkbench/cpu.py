"""zkbench.cpu: CPU use over a measured window, from /proc: cores busy on
the whole machine, and the CPU time and context switches of the ZooKeeper
server and of the processes that make up a lock client (Meter), and, from
ZooKeeper's own counters, its requests, transactions and fsyncs in the
window; summed over rounds (add_usage) and turned into per-acquisition
figures (usage_view).
"""

import os

NCPU = os.cpu_count() or 1
HZ = os.sysconf("SC_CLK_TCK")


def _cpu_total():
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:9]]
    return sum(v), v[3] + v[4]


def _proc_usage(pid):
    """CPU ticks of a process (all its threads) and its threads' context
    switches, or None once it is gone."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        ticks = int(fields[11]) + int(fields[12])
        switches = 0
        for task in os.listdir("/proc/%d/task" % pid):
            with open("/proc/%d/task/%s/status" % (pid, task)) as f:
                for text in f:
                    if "ctxt_switches:" in text:
                        switches += int(text.split()[1])
        return ticks, switches
    except (OSError, IndexError, ValueError):
        return None


class Meter:
    """CPU over a window: cores busy on the whole machine, CPU time of the
    ZooKeeper server (zk: its pid, or the pids of an ensemble's servers,
    summed), and CPU time and context switches of the processes
    that make up the lock client (a zklock worker and backends, a driver,
    pgbench).  counters: a function returning ZooKeeper's counters
    (zkbench.zookeeper: requests, fsyncs, zxid), read at both ends.  stop()
    returns sums that add up across rounds; ops (the acquisitions in the
    window) is filled in by the caller."""

    def __init__(self, zk, lock, counters=None):
        self.zk = [p for p in (zk if isinstance(zk, (list, tuple)) else [zk]) if p]
        self.lock = [p for p in lock if p]
        self.counters = counters
        self.c0 = counters() if counters else None
        self.t0 = _cpu_total()
        self.zk0 = {p: _proc_usage(p) for p in self.zk}
        self.lock0 = {p: _proc_usage(p) for p in self.lock}

    def stop(self, ops=None):
        total, idle = _cpu_total()
        dt = total - self.t0[0]
        out = {"wall": dt / NCPU / HZ, "busy": (dt - (idle - self.t0[1])) / HZ,
               "zk_ms": None, "lock_ms": None, "lock_cs": None, "ops": ops,
               "zk_req": None, "zk_txn": None, "zk_fsync": None}
        c1 = self.counters() if self.counters else None
        if self.c0 and c1:
            out["zk_req"] = c1["req"] - self.c0["req"]
            out["zk_fsync"] = c1["fsync"] - self.c0["fsync"]
            if c1["zxid"] is not None and self.c0["zxid"] is not None:
                out["zk_txn"] = c1["zxid"] - self.c0["zxid"]
        if self.zk and all(self.zk0.values()):
            now = {p: _proc_usage(p) for p in self.zk}
            if all(now.values()):
                out["zk_ms"] = sum(now[p][0] - self.zk0[p][0] for p in self.zk) * 1000.0 / HZ
        if self.lock and all(self.lock0.values()):
            ms = cs = 0
            for p in self.lock:
                now = _proc_usage(p)
                if now is None:		# exited inside the window: not counted
                    return out
                ms += (now[0] - self.lock0[p][0]) * 1000.0 / HZ
                cs += now[1] - self.lock0[p][1]
            out["lock_ms"], out["lock_cs"] = ms, cs
        return out


def add_usage(parts):
    """Sum the Meter results of several rounds."""
    out = {}
    for k in ("wall", "busy", "zk_ms", "lock_ms", "lock_cs", "ops", "zk_req", "zk_txn",
              "zk_fsync", "jit_ms", "gc_ms"):
        vals = [u.get(k) for u in parts]
        out[k] = None if not vals or any(v is None for v in vals) else sum(vals)
    return out


def usage_view(u):
    """Cores busy, and ZooKeeper and lock-client CPU ms and switches per op."""
    if not u or not u.get("wall"):
        return {}
    v = {"busy": u["busy"] / u["wall"]}
    if u.get("ops"):
        if u.get("zk_ms") is not None:
            v["zk"] = u["zk_ms"] / u["ops"]
        if u.get("lock_ms") is not None:
            v["lock"] = u["lock_ms"] / u["ops"]
            v["cs"] = u["lock_cs"] / u["ops"]
    return v

