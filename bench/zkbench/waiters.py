"""zkbench.waiters: shape (d), waiters queued on one lock, then handed the
lock one after the other.  ZooKeeper itself counts, for the contender's
session (four-letter word cons), the requests and watch notifications per
handoff: a recipe without a herd stays near 2 requests whatever the number
of waiters.  For zklock, its own zk_status() counters too.
"""

import subprocess
import time

from .harness import Harness
from .postgres import Session
from .processes import PROCS, BenchError, Driver, spawn
from .results import CURATOR


class WaitersShape(Harness):
    def d_rows(self, contender, n, base, queued, end, extra_note=None):
        per_handoff = (end["lcxid"] - queued["lcxid"]) / n
        notify = ((end["sent"] - queued["sent"]) - (end["recved"] - queued["recved"])) / n
        whole = (end["lcxid"] - base["lcxid"]) / (n + 1)
        self.say("  %-34s %5.2f requests/handoff  %5.2f notifications/handoff  "
                 "%5.2f requests/acquisition" % (contender, per_handoff, notify, whole))
        # Issue 32's target once: at the largest number of waiters.
        target = ("<=", 3) if contender == "zklock" and n == self.waiters[-1] else None
        self.res.add("(d)", "%d waiters: ZK requests per handoff" % n, contender, per_handoff,
                     "req", target=target, note=extra_note)
        self.res.add("(d)", "%d waiters: watch notifications per handoff" % n, contender,
                     notify, "events")
        # Issue 46's acceptance: the whole cycle at most 2 x Curator's.
        self.res.add("(d)", "%d waiters: ZK requests per acquisition, whole cycle" % n,
                     contender, whole, "req",
                     target=("ratio<=", 2) if contender == "zklock" and n == self.waiters[-1]
                     else None)

    def d_zklock(self, n):
        name = "bench-d%d" % n
        sid = int(self.main.status()["session_id"], 16)
        s0 = self.main.status()
        base = self.zk.session(sid)
        holder = Session(self.main, self.log)
        holder.query("SELECT zk_lock_acquire('%s')" % name)
        procs = [spawn(self.main.psql_cmd() + ["-c", "SELECT zkbench.wait_once('%s')" % name],
                       stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=self.log,
                       text=True) for _ in range(n)]
        self.zklock_queued(name, n, s0)
        self.zk.wait_quiet(sid, base["lcxid"], 0)
        s1 = self.main.status()
        queued = self.zk.session(sid)
        holder.query("SELECT zk_lock_release('%s')" % name)
        for p in procs:
            p.communicate(timeout=120)
            PROCS.remove(p)
            if p.returncode != 0:
                raise BenchError("a waiter failed (status %d); see bench.log" % p.returncode)
        holder.close()
        # Releases do not wait: the counters are read once every node is gone.
        end_by = time.time() + 30
        while self.main.status()["slots_used"] > 0 and time.time() < end_by:
            time.sleep(0.02)
        s2 = self.main.status()
        end = self.zk.session(sid)
        handoffs = s2.get("handoffs", 0) - s1.get("handoffs", 0)
        note = None
        if handoffs:
            note = ("zklock's own counters (zk_status) over the handoffs: %d handoffs, "
                    "%.2f zk_requests, %.2f release_requests, %.2f handoff_requests, "
                    "%.2f watch_events per handoff" % (
                        handoffs,
                        (s2["zk_requests"] - s1["zk_requests"]) / handoffs,
                        (s2.get("release_requests", 0) - s1.get("release_requests", 0)) / handoffs,
                        (s2.get("handoff_requests", 0) - s1.get("handoff_requests", 0)) / handoffs,
                        (s2["watch_events"] - s1["watch_events"]) / handoffs))
            if n == self.waiters[-1]:
                note += "; whole cycle: %.2f zk_requests per acquisition" % (
                    (s2["zk_requests"] - s0["zk_requests"]) / max(1, s2["acquired"] - s0["acquired"]))
        self.d_rows("zklock", n, base, queued, end, extra_note=note)

    def zklock_queued(self, name, n, s0, timeout=90):
        """Wait until the n waiters have their nodes and each has made its
        first deadlock check: a count of requests would not do, since a multi
        carries the creates of many waiters."""
        end = time.time() + timeout
        while time.time() < end:
            nodes = int(self.main.query(
                "SELECT count(*) FROM zk_locks WHERE name = '%s' AND state = 'waiting'"
                " AND znode IS NOT NULL" % name))
            checks = self.main.status()["deadlock_checks"] - s0["deadlock_checks"]
            if nodes >= n and checks >= n:
                return
            time.sleep(0.1)
        raise BenchError("the %d waiters of %s were not all queued and checked in %d s"
                         % (n, name, timeout))

    def d_driver(self, cmd, contender, n):
        d = Driver(cmd + ["waiters", str(n)], self.log)
        sid = int(d.expect("session", timeout=120), 16)
        time.sleep(0.3)
        base = self.zk.session(sid)
        d.send()
        d.expect("started", timeout=120)
        self.zk.wait_quiet(sid, base["lcxid"], 3 * n)
        queued = self.zk.session(sid)
        d.send()
        d.expect("done", timeout=120)
        end = self.zk.session(sid)
        d.send()
        d.finish()
        self.d_rows(contender, n, base, queued, end)

    def shape_d(self):
        for n in self.waiters:
            self.say("(d) %d waiters on one lock" % n)
            self.attempt("(d)", "zklock", lambda: self.d_zklock(n))
            self.attempt("(d)", CURATOR, lambda: self.d_driver(self.java, CURATOR, n))
            self.attempt("(d)", "kazoo", lambda: self.d_driver(self.kazoo, "kazoo", n))
