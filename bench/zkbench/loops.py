"""zkbench.loops: shapes (b) and (c), many clients looping on acquire +
release, each on a lock of its own (b) or all on one lock (c): the
acquisitions (handoffs) per second of all clients together, and for (c)
the median delay from one holder's release to the next holder's grant,
and ZooKeeper's CPU per cycle.  pgbench runs over the Unix socket and, as
users run it, over TCP with two threads; after (b), in rounds of their
own, that TCP contender with zklock.track_stats on and off.
"""

import json
import os
import subprocess
import time

from .harness import TCP, Harness
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

    def loop_pgbench(self, kind, same, tcp=False, seconds=None, options=None):
        seconds = seconds or self.loop_seconds
        name = "'bench-c-pgbench'" if same else "'bench-b-pgbench-' || :client_id"
        acq, rel = {"zklock": ("zk_lock_acquire(%s)", "zk_lock_release(%s)"),
                    "advisory": ("pg_advisory_lock(hashtext(%s))",
                                 "pg_advisory_unlock(hashtext(%s))")}[kind]
        script = self.pgbench_script("%s-%s.sql" % ("c" if same else "b", kind),
                                     "SELECT %s;\nSELECT %s;\n" % (acq % name, rel % name))
        tps, usage = self.pgbench(script, self.clients, seconds=seconds,
                                  worker=kind == "zklock", tcp=tcp, options=options)
        return {"n": tps * seconds, "seconds": seconds, "delays": None}, usage

    def loop_driver(self, cmd, same):
        out, usage = self.driver_run(cmd, lambda o: o["n"])
        events = out.get("events")
        return {"n": out["n"], "seconds": out["seconds"],
                "delays": handoff_delays(events) if events is not None else None}, usage

    def loop_rate(self, got, name):
        """A loop contender's acquisitions, their rate, and its usage."""
        parts, usage = got[name]
        n = sum(x["n"] for x in parts)
        return n, n / sum(x["seconds"] for x in parts), usage

    def distinct_rate_row(self, shape, name, rate, n, usage, target=None, note=None):
        """Print and record the rate of clients on distinct locks."""
        self.say("  %-34s %8.0f acquisitions/s" % (name, rate))
        self.res.add(shape, "%d clients, %d locks: acquisitions/s" % (self.clients, self.clients),
                     name, rate, "/s", target=target, cpu=usage, n=int(n), note=note)

    def shape_loop(self, shape, same):
        self.say("%s %d clients on %s (%d rounds)" % (
            shape, self.clients, "one lock" if same else "%d distinct locks" % self.clients,
            self.loop_rounds))
        mode = "same" if same else "distinct"
        p = [str(self.clients), str(self.loop_seconds), str(self.loop_warmup), mode]
        contenders = [
            ("zklock", lambda: self.loop_sql("zklock", same)),
            ("zklock/pgbench", lambda: self.loop_pgbench("zklock", same)),
            (TCP, lambda: self.loop_pgbench("zklock", same, tcp=True)),
            (CURATOR, lambda: self.loop_driver(self.java + ["loop"] + p, same)),
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
        }
        got = self.rounds(shape, contenders, self.loop_rounds)
        for name, _ in contenders:
            if name not in got:
                continue
            n, rate, usage = self.loop_rate(got, name)
            parts = got[name][0]
            target = ("ratio>=", 1.5) if name.startswith("zklock") else None
            if not same:
                self.distinct_rate_row(shape, name, rate, n, usage, target, notes.get(name))
                continue
            delays = None
            if parts[0]["delays"] is not None:
                delays = [d for x in parts for d in x["delays"]]
            self.say("  %-34s %8.0f handoffs/s%s" % (
                name, rate, "" if delays is None else
                "  median handoff delay %.3f ms" % median(delays)))
            self.res.add(shape, "%d clients, 1 lock: handoffs/s" % self.clients, name, rate, "/s",
                         target=target, cpu=usage, n=int(n), note=notes.get(name))
            if delays is not None:
                self.res.add(shape, "median handoff delay", name, median(delays), "ms",
                             cpu=usage, n=len(delays))
        self.zk_cpu_rows(shape, got, ["zklock", "zklock/pgbench", TCP, CURATOR, "kazoo",
                                      "ZK floor: create+delete"],
                         tcp_target=None if same else ("ratio<=", 0.5))
        if not same:
            self.stats_pair(shape, "%d clients, %d locks: acquisitions/s"
                            % (self.clients, self.clients), TCP,
                            lambda stats: self.loop_pgbench(
                                "zklock", False, tcp=True, seconds=1,
                                options=None if stats else "-c zklock.track_stats=off"),
                            lambda x: x["n"] / x["seconds"],
                            "%s, %d clients, rounds of 1 s" % (TCP, self.clients))
