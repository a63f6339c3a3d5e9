"""zkbench.benchmark: the whole run.  Bench puts the shapes together, warms
ZooKeeper up (bare requests, zklock's multis and Curator's requests, until
the server JVM's compile time stops rising), runs every shape in order
((a), then (f) while conditions are those of (a), then (b) with its equal
load rounds, (c), (c) across clusters, (d), (e), the fleet (h), and (g)),
waiting after (f) and (e) until ZooKeeper's container reaper has deleted
the directories they emptied, prints the table and the targets (each once,
on the TCP row where the shape has one), writes results.csv and the chart's
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
from .zookeeper import Servers


class Bench(UncontendedShape, LoopShapes, WaitersShape, ManyLocksShape, MaxLocksShape,
            FleetShape, NetworkShape):
    def zk_cmdline(self):
        try:
            with open("/proc/%d/cmdline" % self.zk.pid) as f:
                return [x for x in f.read().split("\0") if x]
        except (OSError, TypeError):
            return []

    def zk_jvm_flags(self):
        """The ZooKeeper JVM's own flags (-X..., -XX:...), from its command line."""
        flags = [x for x in self.zk_cmdline() if x.startswith("-X")]
        return " ".join(flags) if flags else "none (the JVM's defaults)"

    def zk_force_sync(self):
        """forceSync as the server's zoo.cfg (its last argument) sets it."""
        args = self.zk_cmdline()
        try:
            with open(args[-1]) as f:
                for line in f:
                    if line.strip().startswith("forceSync="):
                        return line.strip().split("=", 1)[1]
        except (OSError, IndexError):
            return "?"
        return "yes (the default)"

    def environment(self):
        m = self.zk.mntr()
        conf = dict(line.split("=", 1) for line in self.zk.fourlw("conf").splitlines() if "=" in line)
        return ("ZooKeeper %s, %s, as production runs it: tickTime=%s, an fsync per write "
                "(forceSync=%s; fsyncs so far, mntr zk_cnt_fsynctime, a count: %d, mean %.2f "
                "ms); its JVM's flags: %s; container check every %g s; %d CPUs; load average "
                "before the run %s"
                % (str(m.get("zk_version", "?")).split("-")[0], m.get("zk_server_state", "?"),
                   conf.get("tickTime", "?"), self.zk_force_sync(),
                   int(m.get("zk_cnt_fsynctime", 0)), float(m.get("zk_avg_fsynctime", 0)),
                   self.zk_jvm_flags(), self.reaper_interval_s, NCPU,
                   " ".join(open("/proc/loadavg").read().split()[:3])))

    def warm_up(self):
        """A fresh ZooKeeper JVM runs its request path interpreted at first:
        whoever came first would pay for its JIT.  Unmeasured load first, of
        every kind the shapes send: bare requests, zklock's multis (16
        pgbench clients over TCP on distinct locks: coalesced writes) and
        its uncontended cycle, and Curator's loop; the last two again until
        the server JVM's compile time (jstat) stops rising."""
        self.say("warming up ZooKeeper (unmeasured)")
        servers = Servers(self.a.zk, [self.zk.pid])
        jvm0 = servers.jvm()
        for cmd in self.warm_floor:
            self.driver_run(self.floor + cmd, lambda o: o["n"])
        self.main.query("SELECT count(*) FROM unnest(zkbench.uncontended('zklock', 'bench-a', "
                        "%g, %d, 1000000))" % self.warm_sql)
        jvm = self.jvm_open(self.java, ["loop", self.clients, self.jvm_window, 5, "distinct"],
                            "the warm-up's loop")
        try:
            jits, settled, last = [], 0, servers.jvm()
            while len(jits) < self.jvm_max_windows:
                self.loop_pgbench("zklock", False, tcp=True, seconds=self.jvm_window)
                self.jvm_run(jvm, ["loop", self.clients, self.jvm_window, 5, "distinct"],
                             lambda o: o["n"])
                now = servers.jvm()
                if now is None or last is None:
                    break		# jstat cannot read it: one window of each
                jits.append(now[0] - last[0])
                last = now
                settled = settled + 1 if jits[-1] < 2 * self.jvm_settled_ms else 0
                if settled >= 2:
                    break
        finally:
            jvm.close()
        end = servers.jvm()
        if jvm0 is not None and end is not None:
            self.say("  ZooKeeper's JVM: %.0f ms of JIT and %.0f ms of GC during the warm-up; "
                     "JIT ms per window of zklock's and Curator's loops: %s%s"
                     % (end[0] - jvm0[0], end[1] - jvm0[1], " ".join("%.0f" % j for j in jits),
                        "" if settled >= 2 else " (not settled)"))
            self.zk_jvm_at_start = end
        else:
            self.say("  ZooKeeper's JVM: jstat could not read its JIT and GC times")
            self.zk_jvm_at_start = None

    def shapes_run(self):
        """The shapes this run measures, as the table names them."""
        return ["(a)", "(b)", "(c)", "(d)"] + (["(e)"] if self.e else []) + \
            (["(f)"] if self.f else []) + \
            ["(c) across %d clusters" % k for k in self.cx_sizes] + \
            [g for d in self.g_delays_us for g in self.g_shapes(d)] + \
            (["(h) fleet"] if self.fleet else [])

    def run(self):
        env = self.environment()
        self.say(env)
        started = time.time()
        self.warm_up()
        self.shape_a()
        before = self.zk.counters()["znodes"]
        self.attempt("(f)", "zklock", self.shape_f)
        self.wait_reaper("(f)", before)
        self.shape_loop("(b)", same=False)
        self.shape_loop("(c)", same=True)
        self.attempt("(c) across clusters", TCP, self.shape_cross)
        self.shape_d()
        before = self.zk.counters()["znodes"]
        self.attempt("(e)", "zklock", self.shape_e)
        self.wait_reaper("(e)", before)
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
        if getattr(self, "zk_jvm_at_start", None):
            end = Servers(self.a.zk, [self.zk.pid]).jvm()
            if end:
                self.say("ZooKeeper's JVM after its warm-up, over the whole run: %.0f ms of JIT, "
                         "%.0f ms of GC" % (end[0] - self.zk_jvm_at_start[0],
                                            end[1] - self.zk_jvm_at_start[1]))
        self.say("")
        self.say(self.res.targets_table(
            "Targets (issues 32 and 46), each once: on zklock as users run it (%s: pgbench -M "
            "prepared -j 2 over TCP) where the shape has that row; the ratio's [min-max] pairs "
            "round i of zklock with round i of Curator; in issue 32, the 1 ms delay is shape "
            "(f), here (g):" % TCP))
        self.say("")
        good, bad, unknown = self.res.targets_summary()
        self.say("targets: %d met, %d missed%s (each target counted once); measurements took "
                 "%.0f s" % (good, bad, ", %d not measured" % unknown if unknown else "",
                            elapsed))
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
        zk_remote, app_remote = self.g_shapes(1000)
        distinct = "%d clients, %d locks: acquisitions/s" % (self.clients, self.clients)
        panels = {
            "a": [("(a)", "acquire+release, median")],
            "b": [("(b)", distinct)],
            "c": [("(c)", "%d clients, 1 lock: handoffs/s" % self.clients)],
            "d": [("(d)", "%d waiters: ZK requests per handoff" % self.waiters[-1])],
            "g1": [(zk_remote, "acquire+release, median"),
                   (app_remote, "acquire+release, median")],
            "g2": [(zk_remote, distinct), (app_remote, distinct)],
            "bz": [("(b) at %d/s" % self.load_rates[0], ZK_CPU)],
            "h": [("(h) fleet", "%d clusters x %d clients, distinct locks: cycles/s"
                   % (len(self.fleet), self.clients))],
        }
        for key, wanted in panels.items():
            seen = set()
            with open(os.path.join(self.a.work, "chart-%s.dat" % key), "w") as f:
                for r in self.res.rows:
                    if (r["shape"], r["metric"]) in wanted and r["contender"] not in seen and \
                            isinstance(r["value"], (int, float)) and not math.isnan(r["value"]):
                        seen.add(r["contender"])
                        f.write('"%s" %.6g\n' % (r["contender"], r["value"]))
        with open(os.path.join(self.a.work, "chart-sizes.gp"), "w") as f:
            f.write("clients = %d\nwaiters = %d\nclusters = %d\nload = %d\n"
                    % (self.clients, self.waiters[-1], len(self.fleet), self.load_rates[0]))
