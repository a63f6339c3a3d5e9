"""zkbench.fleet: shape (h), a fleet.  Three PostgreSQL clusters, each with
its own zklock worker, on a three-server ZooKeeper ensemble (fsync on, as
production runs it); on each cluster pgbench, as users run it (-M prepared
over TCP to 127.0.0.1, -j 2), drives 16 clients each looping on a lock of
its own, the three clusters at once.  Against it, on the same ensemble,
three Curator processes of 16 threads each (one CuratorFramework per
process), their measured windows starting together.  Measured: the cycles
(acquire + release) per second of the whole fleet, and the CPU time of the
three ZooKeeper servers, summed, per cycle.  No lock is shared: lock names
differ between clusters, and each Curator process has a directory of its
own.
"""

import json
import time

from .cpu import Meter
from .harness import TCP, Harness
from .processes import BenchError
from .results import CURATOR
from .zookeeper import Servers


class FleetShape(Harness):
    def fleet_zklock(self):
        """The three clusters' pgbench at once; returns ({n, seconds}, usage)."""
        scripts = []
        for c in self.fleet:
            name = "'bench-h-%s-' || :client_id" % c.name
            scripts.append((c, self.pgbench_script("h-%s.sql" % c.name,
                                                   "SELECT zk_lock_acquire(%s);\n"
                                                   "SELECT zk_lock_release(%s);\n"
                                                   % (name, name))))
        tps, usage = self.pgbench_clusters(scripts, self.clients, self.fleet_seconds,
                                           self.fleet_workers, self.fleet_zk_pids,
                                           self.fleet_servers.counters)
        return {"n": tps * self.fleet_seconds, "seconds": self.fleet_seconds}, usage

    def fleet_curator(self, jvms):
        """Three Curator processes (warm JVMs), their measured windows
        starting together."""
        start_ms = int((time.time() + self.fleet_lead) * 1000)
        for j in jvms:
            j.start(["loop", self.clients, self.fleet_seconds, self.loop_warmup, "distinct",
                     start_ms])
        for j in jvms:
            j.d.expect("measuring", timeout=180)
        m = Meter(self.fleet_zk_pids, [j.pid for j in jvms], counters=self.fleet_servers.counters)
        outs = [json.loads(j.d.line(timeout=180)) for j in jvms]
        usage = m.stop()
        rate = sum(o["n"] / o["seconds"] for o in outs)
        usage["ops"] = rate * usage["wall"]
        usage["jit_ms"] = sum(o.get("jit_ms", 0) for o in outs)
        usage["gc_ms"] = sum(o.get("gc_ms", 0) for o in outs)
        return {"n": rate * self.fleet_seconds, "seconds": self.fleet_seconds}, usage

    def shape_h(self):
        shape = "(h) fleet"
        k = len(self.fleet)
        self.say("%s %d clusters on a %d-server ensemble, %d clients each on distinct locks, "
                 "against %d Curator processes of %d threads (%d rounds)"
                 % (shape, k, len(self.fleet_zk_pids), self.clients, k, self.clients,
                    self.fleet_rounds))
        self.fleet_workers = [c.worker_pid() for c in self.fleet]
        self.fleet_servers = Servers(self.a.fleet_zk, self.fleet_zk_pids)
        # The ensemble's JVMs are fresh: unmeasured load first, as before (a):
        # bare requests, one round of zklock's (its multis), and the Curator
        # JVMs' warm-up windows.
        for cmd in self.warm_floor:
            self.warm_fleet_floor(cmd)
        self.fleet_zklock()
        java = self.java[:-1] + [self.a.fleet_zk]
        jvms = []
        try:
            for i in range(k):
                jvms.append(self.jvm_open(java, ["loop", self.clients, self.fleet_seconds,
                                                 self.loop_warmup, "distinct"],
                                          "the fleet's loop",
                                          root="/zkbench/curator-fleet%d" % (i + 1)))
            together = self.jvms_warm_together(lambda: self.fleet_curator(jvms), k,
                                               "the fleet's loop")
            self.shape_h_rounds(shape, k, jvms, together)
        finally:
            for j in jvms:
                j.close()

    def warm_fleet_floor(self, cmd):
        """One of the bare client's unmeasured warm-ups of the ensemble, tried
        up to three times: in some runs its first create had no answer for
        the whole operation timeout (the servers logged nothing of it; the
        cause was not found), which is no contender's figure.  Each failed
        try is printed."""
        for attempt in range(1, 4):
            try:
                self.driver_run([self.a.floor, self.a.fleet_zk] + cmd, lambda o: o["n"])
                return
            except BenchError as e:
                if attempt == 3:
                    raise
                self.say("  (h): the ensemble's warm-up (zkfloor %s) failed, try %d of 3: %s"
                         % (cmd[0], attempt, e))

    def shape_h_rounds(self, shape, k, jvms, together):
        contenders = [(TCP, self.fleet_zklock), (CURATOR, lambda: self.fleet_curator(jvms))]
        got = self.rounds(shape, contenders, self.fleet_rounds, warm=True)
        notes = {
            TCP: "fleet: %d clusters, each with its zklock worker, on a %d-server ZooKeeper "
                 "ensemble; on each, pgbench -M prepared -c %d -j 2 over TCP, every client on "
                 "a lock of its own, the clusters at once; lock CPU: the pgbench processes, "
                 "their backends and the workers; ZooKeeper CPU: the servers' summed; %s"
                 % (k, len(self.fleet_zk_pids), self.clients, self.WARM_ROUND_NOTE),
            CURATOR: "fleet: %d Curator processes (one CuratorFramework each, one warm JVM "
                     "each) of %d threads, each thread on a lock of its own, on the same "
                     "ensemble, their measured windows starting together; %s; %s; %s"
                     % (k, self.clients, jvms[0].warm_note, together, self.WARM_ROUND_NOTE),
        }
        for name, _ in contenders:
            if name not in got:
                continue
            n, rate, usage = self.loop_rate(got, name)
            self.say("  %-34s %8.0f cycles/s" % (name, rate))
            self.res.add(shape, "%d clusters x %d clients, distinct locks: cycles/s"
                         % (k, self.clients), name, rate, "/s",
                         target=("ratio>=", 1.5) if name == TCP else None, cpu=usage, n=int(n),
                         note=notes[name], rounds=self.round_rates(got, name))
        self.zk_cpu_rows(shape, got, [TCP, CURATOR])
        self.jvm_rows(shape, CURATOR, got)
