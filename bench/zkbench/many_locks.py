"""zkbench.many_locks: shape (e), 10,000 distinct locks held at once by one
cluster whose settings differ from the defaults only in zklock.max_locks:
zklock's shared memory, the time to take them from 10 sessions and from
one, and the time until every node is deleted after release all.
"""

import json
import time

from .harness import Harness
from .postgres import Session
from .stats import median


class ManyLocksShape(Harness):
    def shape_e(self):
        if self.e is None:
            return
        c = self.e
        total = self.e_sessions * self.e_locks
        self.say("(e) %s distinct locks held at once by one cluster" % "{:,}".format(total))
        worker = c.worker_pid()
        self.e_shared_memory(c)
        works = self.e_many_sessions(c, worker, total)
        self.res.add("(e)", "works, only zklock.max_locks changed", "zklock", works, "",
                     target=("is", "yes"))
        self.e_one_session(c, worker, total)

    def e_shared_memory(self, c):
        """zklock's shared memory in cluster c, in all and per slot."""
        shm = json.loads(c.query(
            "SELECT json_build_object('size', sum(size), 'allocated', sum(allocated_size), "
            "'names', string_agg(name, ',')) FROM pg_shmem_allocations WHERE name LIKE 'zklock%'"))
        st = c.status()
        slots = st["slots_total"]
        changed = c.query(
            "SELECT string_agg(name || '=' || setting, ', ' ORDER BY name) FROM pg_settings "
            "WHERE name LIKE 'zklock.%' AND source NOT IN ('default', 'override') "
            "AND name <> 'zklock.hosts'")
        self.say("  zklock shared memory: %s bytes for %d slots (%s)"
                 % ("{:,}".format(int(shm["allocated"])), slots, shm["names"]))
        self.res.add("(e)", "zklock shared memory, %d slots" % slots, "zklock",
                     shm["allocated"] / 1048576.0, "MB",
                     note="pg_shmem_allocations rows %s (allocated_size); settings changed "
                          "from their defaults besides zklock.hosts: %s"
                          % (shm["names"], changed or "none"))
        self.res.add("(e)", "shared memory per slot", "zklock", shm["allocated"] / slots, "bytes")

    def e_many_sessions(self, c, worker, total):
        """e_sessions sessions of cluster c take e_locks new locks each, in
        parallel, then release them all; returns "yes" when all total were
        held at once."""
        works = "no"
        sessions = [Session(c, self.log) for _ in range(self.e_sessions)]
        try:
            pids = [s.backend_pid() for s in sessions]
            before = c.status()
            m = self.meter(worker, *pids)
            t0 = time.time()
            for i, s in enumerate(sessions):
                s.send("SELECT zkbench.acquire_many('e-%d-', %d)" % (i, self.e_locks))
            parts = [json.loads(s.read()) for s in sessions]
            took = time.time() - t0
            cpu = m.stop(ops=total)
            held = int(c.query("SELECT count(*) FROM zk_locks WHERE state = 'held'"))
            after = c.status()
            works = "yes" if held == total else "no (%d held)" % held
            self.say("  %d sessions x %d locks: %d held after %.2f s (%.0f/s)"
                     % (self.e_sessions, self.e_locks, held, took, total / took))
            self.res.add("(e)", "acquire %s locks (%d sessions x %d)" % (
                "{:,}".format(total), self.e_sessions, self.e_locks), "zklock", took, "s",
                cpu=cpu, n=held,
                note="per session (median), the first tenth of its acquires took %.0f ms, the "
                     "last tenth %.0f ms; zk_status: %.2f zk_requests per acquire (every name is "
                     "new: its directory is created on the way)"
                     % (median([p["first_tenth_ms"] for p in parts]),
                        median([p["last_tenth_ms"] for p in parts]),
                        (after["zk_requests"] - before["zk_requests"]) / max(1, held)))
            self.zk_count_rows("(e)", "zklock", cpu, prefix="acquire (%d sessions): "
                               % self.e_sessions, per="lock")
            m = self.meter(worker, *pids)
            t0 = time.time()
            for s in sessions:
                s.send("SELECT zkbench.release_all()")
            calls = [float(s.read()) for s in sessions]
            returned = time.time() - t0
            self.wait_slots(c, 0)
            gone = time.time() - t0
            cpu = m.stop(ops=total)
            self.say("  release_all: calls returned after %.3f s, every node deleted after %.2f s"
                     % (returned, gone))
            self.res.add("(e)", "release all, until every node is deleted", "zklock", gone, "s",
                         cpu=cpu, note="the %d zk_lock_release_all() calls returned after "
                                       "%.0f ms (longest call %.0f ms): releases do not wait "
                                       "for ZooKeeper" % (len(calls), returned * 1000, max(calls)))
            self.zk_count_rows("(e)", "zklock", cpu, prefix="release all (%d sessions): "
                               % self.e_sessions, per="lock")
        finally:
            for s in sessions:
                s.close()
        return works

    def e_one_session(self, c, worker, total):
        """One session of cluster c takes all total locks, then releases them."""
        # One session holding them all needs a larger per-session cap.
        self.wait_slots(c, 0)
        s = Session(c, self.log)
        try:
            s.query("SET zklock.max_locks_per_backend = %d" % total)
            m = self.meter(worker, s.backend_pid())
            t0 = time.time()
            part = json.loads(s.query("SELECT zkbench.acquire_many('e-one-', %d)" % total))
            took = time.time() - t0
            cpu = m.stop(ops=total)
            self.say("  one session x %d locks: %.2f s (first tenth %.0f ms, last tenth %.0f ms)"
                     % (total, took, part["first_tenth_ms"], part["last_tenth_ms"]))
            self.res.add("(e)", "acquire %s locks, one session" % "{:,}".format(total), "zklock",
                         took, "s", cpu=cpu, n=total,
                         note="one session, with SET zklock.max_locks_per_backend = %d (its "
                              "default is a tenth of zklock.max_locks); the first tenth of the "
                              "acquires took %.0f ms, the last tenth %.0f ms"
                              % (total, part["first_tenth_ms"], part["last_tenth_ms"]))
            t0 = time.time()
            call = float(s.query("SELECT zkbench.release_all()"))
            self.wait_slots(c, 0)
            gone = time.time() - t0
            self.res.add("(e)", "release all, one session, until every node is deleted",
                         "zklock", gone, "s", note="the zk_lock_release_all() call took %.0f ms"
                                                    % call)
        finally:
            s.close()

