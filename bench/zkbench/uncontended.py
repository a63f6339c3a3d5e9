"""zkbench.uncontended: shape (a), one client, uncontended acquire +
release.  One client takes and gives back one lock in a loop: zklock timed
in the backend and by pgbench, Curator (one JVM for the whole shape, warm
before the first round), kazoo, pg_advisory_lock, and the
three ZooKeeper floors of zkfloor.c; the median and p99 of a cycle,
zklock's median above the floors, ZooKeeper's CPU per cycle, and, in
rounds of their own, zklock's cycle with zklock.track_stats on and off.  pgbench runs over the Unix
socket and, as users run it, over TCP with two threads.
"""

import os

from .harness import INBACKEND, TCP, Harness
from .results import CURATOR
from .stats import median


class UncontendedShape(Harness):
    def a_sql(self, kind):
        return self.uncontended_sql(kind, self.main, self.worker, kind, "bench-a",
                                    self.a_seconds, self.a_warmup)

    def a_stats(self, stats):
        """(a)'s loop in the backend, in a session with zklock.track_stats
        on or off (kept across rounds, rewarmed briefly as in (f))."""
        key = ("stats", stats)
        warmup = self.f_rewarm if key in self.sessions else self.a_warmup
        return self.uncontended_sql(key, self.main, self.worker, "zklock", "bench-a-stats",
                                    self.stats_a_seconds, warmup,
                                    setup=None if stats else "SET zklock.track_stats = off")

    def a_pgbench(self, kind, tcp=False, port=None):
        """(a)'s cycle by pgbench, one client; kind zklock, advisory, xact
        (BEGIN; SELECT zk_lock_acquire_xact(...); COMMIT), or bare (BEGIN;
        COMMIT: the transaction alone, without a lock); port: another TCP
        port to reach the main cluster through (a relay)."""
        if kind == "xact":
            body = "BEGIN;\nSELECT zk_lock_acquire_xact('bench-a-pgbench');\nCOMMIT;\n"
        elif kind == "bare":
            body = "BEGIN;\nCOMMIT;\n"
        else:
            acq, rel = {"zklock": ("zk_lock_acquire('bench-a-pgbench')",
                                   "zk_lock_release('bench-a-pgbench')"),
                        "advisory": ("pg_advisory_lock(hashtext('bench-a-pgbench'))",
                                     "pg_advisory_unlock(hashtext('bench-a-pgbench'))")}[kind]
            body = "SELECT %s;\nSELECT %s;\n" % (acq, rel)
        script = self.pgbench_script("a-%s.sql" % kind, body)
        prefix = os.path.join(self.a.work, "pgbench-a-%s%s" % (kind, "-tcp" if tcp else ""))
        base = os.path.basename(prefix) + "."
        for old in os.listdir(self.a.work):
            if old.startswith(base):
                os.remove(os.path.join(self.a.work, old))
        worker = kind not in ("advisory", "bare")
        if self.smoke:
            _, usage = self.pgbench(script, 1, log_prefix=prefix, transactions=self.a_maxn,
                                    worker=worker, tcp=tcp, port=port)
        else:
            _, usage = self.pgbench(script, 1, seconds=self.a_seconds, log_prefix=prefix,
                                    worker=worker, tcp=tcp, port=port)
        lat = []
        for name in os.listdir(self.a.work):
            if name.startswith(base):
                with open(os.path.join(self.a.work, name)) as f:
                    lat += [int(x.split()[2]) / 1000.0 for x in f if x.strip()]
        skip = min(len(lat) // 10, 50)		# connection set-up and first plans
        return lat[skip:], usage

    def a_driver(self, cmd):
        out, usage = self.driver_run(cmd + [str(self.a_seconds), str(self.a_warmup),
                                            str(self.a_maxn)], lambda o: o["n"])
        return out["lat_ms"], usage

    def a_jvm(self, jvm, jdbc_url=None, bare=False):
        """A round of (a)'s cycle in Curator's warm JVM (a few cycles first,
        as every contender's round has); with jdbc_url, the application's
        transaction (BEGIN; COMMIT over JDBC to that URL) inside the lock,
        or, bare, without it."""
        out, usage = self.jvm_run(jvm, ["a", self.a_seconds, self.f_rewarm, self.a_maxn]
                                  + ([jdbc_url] if jdbc_url else [])
                                  + (["bare"] if jdbc_url and bare else []), lambda o: o["n"])
        return out["lat_ms"], usage

    def shape_a(self):
        self.say("(a) one client, uncontended acquire + release (%d rounds)" % self.a_rounds)
        jvm = self.jvm_open(self.java, ["a", self.a_seconds, self.f_rewarm, self.a_maxn],
                            "(a)'s cycle")
        try:
            self.shape_a_rounds(jvm)
        finally:
            jvm.close()

    def shape_a_rounds(self, jvm):
        notes = {
            INBACKEND: "in-backend: zk_lock_acquire + zk_lock_release timed with "
                       "clock_timestamp() in a PL/pgSQL loop, without the client's round trips "
                       "to PostgreSQL; lock CPU = its backend + the zklock worker",
            CURATOR: jvm.warm_note,
            "zklock/pgbench": "client side: the two statements of a cycle sent by pgbench "
                              "(-M prepared) over the Unix socket; pgbench's per-transaction log",
            TCP: "as users run it: the same, by pgbench -M prepared -j 2 over TCP to "
                 "127.0.0.1 (issue 32's targets are taken on this row)",
            "ZK floor: create+delete": "ZK floor: zkfloor.c on libzookeeper_mt (the threaded "
                                       "build of zklock's library), synchronous zoo_create + zoo_delete of an "
                                       "ephemeral sequential node: the issue's bare create + "
                                       "delete loop, two round trips",
            "ZK floor: zklock's requests": "the requests of zklock's fast path sent bare: "
                                           "zoo_acreate and zoo_aget_children back to back, wait "
                                           "for the listing, zoo_adelete not waited for (one "
                                           "round trip)",
            "ZK floor: exists (1 read)": "one synchronous exists(\"/\"): a read round trip "
                                         "through libzookeeper_mt and ZooKeeper, the least a "
                                         "request costs",
        }
        contenders = [
            (INBACKEND, lambda: self.a_sql("zklock")),
            ("zklock/pgbench", lambda: self.a_pgbench("zklock")),
            (TCP, lambda: self.a_pgbench("zklock", tcp=True)),
            (CURATOR, lambda: self.a_jvm(jvm)),
            ("kazoo", lambda: self.a_driver(self.kazoo + ["a"])),
            ("pg_advisory_lock", lambda: self.a_sql("advisory")),
            ("pg_advisory_lock/pgbench", lambda: self.a_pgbench("advisory")),
            ("ZK floor: create+delete", lambda: self.a_driver(self.floor + ["sync"])),
            ("ZK floor: zklock's requests", lambda: self.a_driver(self.floor + ["pipelined"])),
            ("ZK floor: exists (1 read)", lambda: self.a_driver(self.floor + ["exists"])),
        ]
        try:
            got = self.rounds("(a)", contenders, self.a_rounds)
        finally:
            self.close_sessions()
        medians = {}
        for name, _ in contenders:
            if name not in got:
                continue
            target = ("ratio<=", 0.6) if name == TCP else None
            medians[name] = self.cycle_rows("(a)", "", "%-34s" % name, name, got,
                                            target=target, note=notes.get(name))
        if INBACKEND in medians:
            for name, label in (("ZK floor: create+delete", "create+delete"),
                                ("ZK floor: zklock's requests", "zklock's requests")):
                if name in medians:
                    self.res.add("(a)", "zklock in-backend median - ZK floor (%s)" % label,
                                 INBACKEND, medians[INBACKEND] - medians[name], "ms",
                                 target=("<=", 0.15) if label == "create+delete" else None)
        # Issue 46's acceptance: at most 1.1 fsyncs per uncontended cycle.
        self.zk_cpu_rows("(a)", got, [INBACKEND, "zklock/pgbench", TCP, CURATOR, "kazoo",
                                      "ZK floor: create+delete", "ZK floor: zklock's requests"],
                         tcp_fsync_target=("<=", 1.1))
        self.jvm_rows("(a)", CURATOR, got)
        try:
            self.stats_pair("(a)", "acquire+release, median", INBACKEND, self.a_stats,
                            lambda lat: median(lat),
                            "zklock's cycle timed in the backend (as the zklock row), "
                            "rounds of %g s" % self.stats_a_seconds)
        finally:
            self.close_sessions()

