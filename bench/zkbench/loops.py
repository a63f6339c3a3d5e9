"""zkbench.loops: shapes (b) and (c), many clients looping on acquire +
release, each on a lock of its own (b) or all on one lock (c): the
acquisitions (handoffs) per second of all clients together, and for (c)
the median delay from one holder's release to the next holder's grant,
and ZooKeeper's CPU, requests, transactions and fsyncs per cycle.  pgbench
runs over the Unix socket and, as users run it, over TCP with two threads;
Curator runs in one JVM per shape, warm before the first round.  After (b),
in rounds of their own, that TCP contender with zklock.track_stats on and
off, and (b)'s clients at equal offered load (rate-limited: the CPU per
cycle of each side at the same rate).  After (c), (c) across clusters: the
same lock from 2 (and 4) clusters against as many Curator processes, since
inside one cluster a handoff needs no ZooKeeper request.
"""

import json
import os
import subprocess
import time

from .cpu import Meter
from .harness import INBACKEND, TCP, Harness
from .postgres import Cluster
from .processes import PROCS, BenchError, spawn
from .results import CURATOR
from .stats import handoff_delays, median


class LoopShapes(Harness):
    def loop_sql(self, kind, same):
        lead = self.loop_lead
        start = self.main.query("SELECT clock_timestamp() + interval '%g s'" % lead)
        env = dict(os.environ, PGAPPNAME="zkbench-loop")
        procs = []
        for i in range(self.clients):
            name = "bench-c" if same else "bench-b-%d" % i
            sql = "SELECT zkbench.loop('%s', '%s', %d, '%s', %g)" % (
                kind, name, self.loop_warmup, start, self.loop_seconds)
            procs.append(spawn(self.main.psql_cmd() + ["-c", sql], stdin=subprocess.DEVNULL,
                               stdout=subprocess.PIPE, stderr=self.log, text=True, env=env))
        t_start = time.time() + lead
        pids = self.backends(self.main, "zkbench-loop", self.clients, timeout=lead)
        time.sleep(max(0, t_start - time.time()))
        m = self.meter(self.worker if kind == "zklock" else None, *pids)
        # Stop metering just before the loops end, while their backends live.
        time.sleep(self.loop_seconds - 0.2)
        usage = m.stop()
        events, n = [], 0
        for p in procs:
            out, _ = p.communicate(timeout=120)
            PROCS.remove(p)
            if p.returncode != 0:
                raise BenchError("a loop session failed (status %d); see bench.log" % p.returncode)
            r = json.loads(out)
            n += r["n"]
            events += list(zip(r["granted"], r["released"]))
        usage["ops"] = n * usage["wall"] / self.loop_seconds
        return {"n": n, "seconds": self.loop_seconds, "delays": handoff_delays(events)}, usage

    def loop_pgbench(self, kind, same, tcp=False, seconds=None, options=None, rate=None,
                     port=None):
        seconds = seconds or self.loop_seconds
        name = "'bench-c-pgbench'" if same else "'bench-b-pgbench-' || :client_id"
        if kind == "xact":
            # The transaction-scope pattern: one statement for the lock,
            # released by the transaction's end.
            body = "BEGIN;\nSELECT zk_lock_acquire_xact(%s);\nCOMMIT;\n" % name
        else:
            acq, rel = {"zklock": ("zk_lock_acquire(%s)", "zk_lock_release(%s)"),
                        "advisory": ("pg_advisory_lock(hashtext(%s))",
                                     "pg_advisory_unlock(hashtext(%s))")}[kind]
            body = "SELECT %s;\nSELECT %s;\n" % (acq % name, rel % name)
        script = self.pgbench_script("%s-%s.sql" % ("c" if same else "b", kind), body)
        tps, usage = self.pgbench(script, self.clients, seconds=seconds,
                                  worker=kind != "advisory", tcp=tcp, options=options,
                                  rate=rate, port=port)
        return {"n": tps * seconds, "seconds": seconds, "delays": None}, usage

    def loop_driver(self, cmd, same):
        out, usage = self.driver_run(cmd, lambda o: o["n"])
        events = out.get("events")
        return {"n": out["n"], "seconds": out["seconds"],
                "delays": handoff_delays(events) if events is not None else None}, usage

    def loop_jvm(self, jvm, args):
        """A round of a loop in Curator's warm JVM."""
        out, usage = self.jvm_run(jvm, args, lambda o: o["n"])
        events = out.get("events")
        return {"n": out["n"], "seconds": out["seconds"],
                "delays": handoff_delays(events) if events is not None else None}, usage

    @staticmethod
    def loop_rate(got, name):
        """A loop contender's acquisitions, their rate, and its usage."""
        parts, usage = got[name]
        n = sum(x["n"] for x in parts)
        return n, n / sum(x["seconds"] for x in parts), usage

    @staticmethod
    def round_rates(got, name):
        return [x["n"] / x["seconds"] for x in got[name][0]]

    def distinct_rate_row(self, shape, name, rate, n, usage, target=None, note=None,
                          rounds=None):
        """Print and record the rate of clients on distinct locks."""
        self.say("  %-34s %8.0f acquisitions/s" % (name, rate))
        self.res.add(shape, "%d clients, %d locks: acquisitions/s" % (self.clients, self.clients),
                     name, rate, "/s", target=target, cpu=usage, n=int(n), note=note,
                     rounds=rounds)

    def shape_loop(self, shape, same):
        self.say("%s %d clients on %s (%d rounds)" % (
            shape, self.clients, "one lock" if same else "%d distinct locks" % self.clients,
            self.loop_rounds))
        mode = "same" if same else "distinct"
        p = [str(self.clients), str(self.loop_seconds), str(self.loop_warmup), mode]
        jvm = self.jvm_open(self.java, ["loop"] + p, "%s's loop" % shape)
        try:
            self.shape_loop_rounds(shape, same, p, jvm)
            if not same:
                self.shape_load(jvm)
        finally:
            jvm.close()

    def shape_loop_rounds(self, shape, same, p, jvm):
        contenders = [
            (INBACKEND, lambda: self.loop_sql("zklock", same)),
            ("zklock/pgbench", lambda: self.loop_pgbench("zklock", same)),
            (TCP, lambda: self.loop_pgbench("zklock", same, tcp=True)),
            (CURATOR, lambda: self.loop_jvm(jvm, ["loop"] + p)),
            ("kazoo", lambda: self.loop_driver(self.kazoo + ["loop"] + p, same)),
            ("pg_advisory_lock", lambda: self.loop_sql("advisory", same)),
            ("pg_advisory_lock/pgbench", lambda: self.loop_pgbench("advisory", same)),
        ]
        if not same:
            contenders.append(("ZK floor: create+delete", lambda: self.loop_driver(
                self.floor + ["threads", str(self.loop_seconds), str(self.loop_warmup),
                              str(self.clients)], same)))
        notes = {
            "ZK floor: create+delete": "ZK floor: %d threads sharing one libzookeeper_mt "
                                       "session, each doing synchronous create + delete in its "
                                       "own directory" % self.clients,
            "zklock/pgbench": "client side: pgbench -c %d, two statements per cycle"
                              % self.clients,
            TCP: "as users run it: pgbench -M prepared -c %d -j 2 over TCP to 127.0.0.1"
                 % self.clients,
            CURATOR: jvm.warm_note,
        }
        if same:
            notes[TCP] += ("; all %d clients on ONE cluster: this measures handoffs inside "
                           "one cluster, between sessions of one zklock worker (whose "
                           "ZooKeeper requests per cycle the rows below count); (c) across "
                           "clusters measures handoffs between clusters" % self.clients)
        got = self.rounds(shape, contenders, self.loop_rounds)
        for name, _ in contenders:
            if name not in got:
                continue
            n, rate, usage = self.loop_rate(got, name)
            parts = got[name][0]
            rates = self.round_rates(got, name)
            target = ("ratio>=", 1.5) if name == TCP else None
            if not same:
                self.distinct_rate_row(shape, name, rate, n, usage, target, notes.get(name),
                                       rounds=rates)
                continue
            delays = None
            if parts[0]["delays"] is not None:
                delays = [d for x in parts for d in x["delays"]]
            self.say("  %-34s %8.0f handoffs/s%s" % (
                name, rate, "" if delays is None else
                "  median handoff delay %.3f ms" % median(delays)))
            self.res.add(shape, "%d clients, 1 lock: handoffs/s" % self.clients, name, rate, "/s",
                         target=target, cpu=usage, n=int(n), note=notes.get(name), rounds=rates)
            if delays is not None:
                self.res.add(shape, "median handoff delay", name, median(delays), "ms",
                             cpu=usage, n=len(delays),
                             rounds=[median(x["delays"]) for x in parts])
        self.zk_cpu_rows(shape, got, [INBACKEND, "zklock/pgbench", TCP, CURATOR, "kazoo",
                                      "ZK floor: create+delete"])
        self.jvm_rows(shape, CURATOR, got)
        if not same:
            self.stats_pair(shape, "%d clients, %d locks: acquisitions/s"
                            % (self.clients, self.clients), TCP,
                            lambda stats: self.loop_pgbench(
                                "zklock", False, tcp=True, seconds=1,
                                options=None if stats else "-c zklock.track_stats=off"),
                            lambda x: x["n"] / x["seconds"],
                            "%s, %d clients, rounds of 1 s" % (TCP, self.clients))

    # -- (b) at equal offered load --

    def shape_load(self, jvm):
        """(b)'s clients, rate-limited to the same offered load on both
        sides (pgbench -R; Curator's threads each on a Poisson schedule, as
        pgbench's): the CPU per cycle of ZooKeeper and of the lock client,
        and ZooKeeper's requests, transactions and fsyncs per cycle, at each
        rate of load_rates.  CPU per cycle depends on the load (batching,
        wake-ups): only at equal load do the two compare."""
        for i, rate in enumerate(self.load_rates):
            shape = "(b) at %d/s" % rate
            self.say("%s %d clients on %d distinct locks, offered load %d cycles/s "
                     "(%d rounds)" % (shape, self.clients, self.clients, rate, self.load_rounds))
            contenders = [
                (TCP, lambda: self.loop_pgbench("zklock", False, tcp=True,
                                                seconds=self.load_seconds, rate=rate)),
                (CURATOR, lambda: self.loop_jvm(jvm, ["loop", self.clients, self.load_seconds,
                                                      5, "distinct", 0, rate])),
            ]
            got = self.rounds(shape, contenders, self.load_rounds)
            for name, _ in contenders:
                if name not in got:
                    continue
                n, achieved, usage = self.loop_rate(got, name)
                self.say("  %-34s %8.0f cycles/s achieved of %d offered" % (name, achieved, rate))
                self.res.add(shape, "offered %d/s: cycles/s achieved" % rate, name, achieved,
                             "/s", cpu=usage, n=int(n), rounds=self.round_rates(got, name),
                             note="equal offered load: pgbench -R %d -c %d -j 2 over TCP, and "
                                  "Curator's %d threads each on a Poisson schedule, a cycle "
                                  "every %.1f ms on average; "
                                  "CPU per cycle is compared only between sides that reach "
                                  "the rate" % (rate, self.clients, self.clients,
                                                self.clients * 1000.0 / rate)
                             if name == TCP else None)
                self.res.add(shape, "lock client CPU per cycle", name,
                             self.per_cycle(usage, "lock_ms", 1000.0), "us", cpu=usage,
                             rounds=[self.per_cycle(u, "lock_ms", 1000.0)
                                     for u in got[name].usages])
            # Issue 32's ZooKeeper CPU target, once: at the first (lowest)
            # rate, which both sides reach.
            self.zk_cpu_rows(shape, got, [TCP, CURATOR],
                             tcp_target=("ratio<=", 0.5) if i == 0 else None)
            self.jvm_rows(shape, CURATOR, got)

    # -- (c) across clusters --

    def shape_cross(self):
        """The same lock from k clusters on one ZooKeeper (self.clients / k
        pgbench clients over TCP on each, all at once) against k Curator
        processes (self.clients / k threads each, their windows starting
        together): a handoff between clusters needs ZooKeeper, as every
        Curator handoff does."""
        clusters = [self.main] + [Cluster(spec, "x%d" % (i + 2))
                                  for i, spec in enumerate(self.a.cross.split(","))] \
            if self.a.cross else [self.main]
        for k in self.cx_sizes:
            shape = "(c) across %d clusters" % k
            if k > len(clusters):
                self.res.error(shape, TCP, "only %d clusters on the standalone ZooKeeper"
                               % len(clusters))
                continue
            per = max(1, self.clients // k)
            self.say("%s one lock, %d clusters x %d pgbench clients against %d Curator "
                     "processes x %d threads (%d rounds)" % (shape, k, per, k, per,
                                                           self.loop_rounds))
            jvms = []
            try:
                for i in range(k):
                    jvms.append(self.jvm_open(self.java, ["loop", per, self.loop_seconds,
                                                          self.loop_warmup, "same"],
                                              "%s's loop" % shape, root="/zkbench/curator-cx"))
                together = self.jvms_warm_together(lambda: self.cross_curator(jvms, per), k,
                                                   "%s's loop" % shape)
                self.shape_cross_rounds(shape, clusters[:k], per, jvms, together)
            finally:
                for j in jvms:
                    j.close()

    def cross_zklock(self, clusters, per):
        scripts = [(c, self.pgbench_script("cx-%s.sql" % c.name,
                                           "SELECT zk_lock_acquire('bench-cx');\n"
                                           "SELECT zk_lock_release('bench-cx');\n"))
                   for c in clusters]
        tps, usage = self.pgbench_clusters(scripts, per, self.loop_seconds,
                                           [c.worker_pid() for c in clusters], self.zk.pid,
                                           self.zk.counters)
        return {"n": tps * self.loop_seconds, "seconds": self.loop_seconds}, usage

    def cross_curator(self, jvms, per):
        start_ms = int((time.time() + self.loop_lead) * 1000)
        for j in jvms:
            j.start(["loop", per, self.loop_seconds, self.loop_warmup, "same", start_ms])
        for j in jvms:
            j.d.expect("measuring", timeout=180)
        m = Meter(self.zk.pid, [j.pid for j in jvms], counters=self.zk.counters)
        outs = [json.loads(j.d.line(timeout=180)) for j in jvms]
        usage = m.stop()
        n = sum(o["n"] for o in outs)
        usage["ops"] = n * usage["wall"] / self.loop_seconds
        usage["jit_ms"] = sum(o.get("jit_ms", 0) for o in outs)
        usage["gc_ms"] = sum(o.get("gc_ms", 0) for o in outs)
        return {"n": n, "seconds": self.loop_seconds}, usage

    def shape_cross_rounds(self, shape, clusters, per, jvms, together):
        k = len(clusters)
        contenders = [(TCP, lambda: self.cross_zklock(clusters, per)),
                      (CURATOR, lambda: self.cross_curator(jvms, per))]
        got = self.rounds(shape, contenders, self.loop_rounds, warm=True)
        notes = {
            TCP: "(c) across clusters: %d clusters on one ZooKeeper, each with its zklock "
                 "worker, %d clients each (pgbench -M prepared -j 2 over TCP), all on one lock "
                 "at once; a handoff to another cluster goes through ZooKeeper; %s"
                 % (k, per, self.WARM_ROUND_NOTE),
            CURATOR: "%d Curator processes (one CuratorFramework each, one warm JVM each) of "
                     "%d threads on the same lock, their windows starting together; %s; %s; %s"
                     % (k, per, jvms[0].warm_note, together, self.WARM_ROUND_NOTE),
        }
        for name, _ in contenders:
            if name not in got:
                continue
            n, rate, usage = self.loop_rate(got, name)
            self.say("  %-34s %8.0f handoffs/s" % (name, rate))
            self.res.add(shape, "%d clients, 1 lock: handoffs/s" % self.clients, name, rate,
                         "/s", cpu=usage, n=int(n), note=notes[name],
                         rounds=self.round_rates(got, name))
        self.zk_cpu_rows(shape, got, [TCP, CURATOR])
        self.jvm_rows(shape, CURATOR, got)
