"""zkbench.benchmark: the whole run.  Bench puts the shapes together, warms
ZooKeeper up, runs every shape in order ((a), then (f) while conditions are
those of (a), then (b) to (e), the fleet (h), and (g)), prints the table and
issue 32's targets on the TCP contender, writes results.csv and the chart's
data files, and says whether every measurement ran and gave a figure.
"""

import math
import os
import time

from .cpu import NCPU
from .fleet import FleetShape
from .harness import TCP, ZK_CPU
from .loops import LoopShapes
from .many_locks import ManyLocksShape
from .max_locks import MaxLocksShape
from .network import NetworkShape
from .uncontended import UncontendedShape
from .waiters import WaitersShape


class Bench(UncontendedShape, LoopShapes, WaitersShape, ManyLocksShape, MaxLocksShape,
            FleetShape, NetworkShape):
    def environment(self):
        m = self.zk.mntr()
        conf = dict(line.split("=", 1) for line in self.zk.fourlw("conf").splitlines() if "=" in line)
        return ("ZooKeeper %s, %s, as production runs it: tickTime=%s, an fsync per write "
                "(mntr zk_cnt_fsynctime=%d); %d CPUs; load average before the run %s"
                % (str(m.get("zk_version", "?")).split("-")[0], m.get("zk_server_state", "?"),
                   conf.get("tickTime", "?"), int(m.get("zk_cnt_fsynctime", 0)), NCPU,
                   " ".join(open("/proc/loadavg").read().split()[:3])))

    def warm_up(self):
        """A fresh ZooKeeper JVM runs its request path interpreted at first:
        whoever came first would pay for its JIT.  Unmeasured load first."""
        self.say("warming up ZooKeeper (unmeasured)")
        for cmd in self.warm_floor:
            self.driver_run(self.floor + cmd, lambda o: o["n"])
        self.main.query("SELECT count(*) FROM unnest(zkbench.uncontended('zklock', 'bench-a', "
                        "%g, %d, 1000000))" % self.warm_sql)

    def shapes_run(self):
        """The shapes this run measures, as the table names them."""
        return ["(a)", "(b)", "(c)", "(d)"] + (["(e)"] if self.e else []) + \
            (["(f)"] if self.f else []) + \
            ["(g) %g ms" % (d / 1000.0) for d in self.g_delays_us] + \
            (["(h) fleet"] if self.fleet else [])

    def run(self):
        env = self.environment()
        self.say(env)
        started = time.time()
        self.warm_up()
        self.shape_a()
        self.attempt("(f)", "zklock", self.shape_f)
        self.shape_loop("(b)", same=False)
        self.shape_loop("(c)", same=True)
        self.shape_d()
        self.attempt("(e)", "zklock", self.shape_e)
        if self.fleet:
            self.attempt("(h) fleet", "zklock", self.shape_h)
        self.attempt("(g)", "zklock", self.shape_g)
        elapsed = time.time() - started
        m = self.zk.mntr()
        self.say("")
        self.say(self.res.table())
        self.say("")
        self.say(env)
        self.say("ZooKeeper over the run: avg/max request latency %s/%s ms.  busy: cores busy "
                 "on the whole machine (of %d); cpu ms/op: CPU time per acquisition of the "
                 "ZooKeeper server / of the lock client (its processes and threads)"
                 % (m.get("zk_avg_latency"), m.get("zk_max_latency"), NCPU))
        self.say("")
        self.say(self.res.targets_table(
            TCP, "Issue 32's targets, on zklock as users run it (%s: pgbench -M prepared -j 2 "
                 "over TCP); in the issue, the 1 ms delay is shape (f), here (g):" % TCP))
        self.say("")
        good, bad, unknown = self.res.targets_summary()
        self.say("targets: %d met, %d missed%s; measurements took %.0f s"
                 % (good, bad, ", %d not measured" % unknown if unknown else "", elapsed))
        csv_path = os.path.join(self.a.out, "results.csv")
        self.res.write_csv(csv_path)
        self.chart_data()
        self.say("CSV: %s" % csv_path)
        failed = self.res.errors + self.res.missing_figures(self.shapes_run())
        if failed:
            self.say("FAILED measurements:")
            for e in failed:
                self.say("  " + e)
            return 1
        return 0

    def chart_data(self):
        """One data file per chart panel, for bench/chart.gp, and the sizes
        its titles name."""
        panels = {
            "a": ("(a)", "acquire+release, median"),
            "b": ("(b)", "%d clients, %d locks: acquisitions/s" % (self.clients, self.clients)),
            "c": ("(c)", "%d clients, 1 lock: handoffs/s" % self.clients),
            "d": ("(d)", "%d waiters: ZK requests per handoff" % self.waiters[-1]),
            "g1": ("(g) 1 ms", "acquire+release, median"),
            "g2": ("(g) 1 ms", "%d clients, %d locks: acquisitions/s" % (self.clients, self.clients)),
            "bz": ("(b)", ZK_CPU),
            "h": ("(h) fleet", "%d clusters x %d clients, distinct locks: cycles/s"
                  % (len(self.fleet), self.clients)),
        }
        for key, (shape, metric) in panels.items():
            with open(os.path.join(self.a.work, "chart-%s.dat" % key), "w") as f:
                for r in self.res.rows:
                    if (r["shape"], r["metric"]) == (shape, metric) and \
                            isinstance(r["value"], (int, float)) and not math.isnan(r["value"]):
                        f.write('"%s" %.6g\n' % (r["contender"], r["value"]))
        with open(os.path.join(self.a.work, "chart-sizes.gp"), "w") as f:
            f.write("clients = %d\nwaiters = %d\nclusters = %d\n"
                    % (self.clients, self.waiters[-1], len(self.fleet)))
