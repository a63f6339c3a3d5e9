"""zkbench.harness: what every shape of the benchmark stands on.  Harness
holds the servers (ZooKeeper, the PostgreSQL clusters), the drivers'
command lines, the results, and the size of every shape (full or smoke),
and the helpers the shapes share: interleaved rounds of contenders (the
order reversed every other round, so each pair of contenders alternates),
a metered driver run, Curator's warm JVM (one per shape, warmed until its
JIT's compile time stops rising, then driven round by round), open psql
sessions for (a)'s loop, pgbench, the rows of a cycle's median and p99,
ZooKeeper's CPU, requests, transactions and fsyncs per cycle, waiting for
zklock's slots to empty and for ZooKeeper's container reaper.

The shapes (zkbench.uncontended, loops, waiters, many_locks, max_locks, network,
fleet) are subclasses of Harness; zkbench.benchmark.Bench puts them together.
"""

import json
import os
import re
import subprocess
import time

from .cpu import NCPU, Meter, add_usage
from .postgres import Acquisitions, Cluster, Session
from .processes import PROCS, BenchError, Driver, spawn
from .results import Results
from .stats import median, pct
from .zookeeper import Servers, ZooKeeper


# The contender users run: pgbench -M prepared over TCP to 127.0.0.1 with
# two threads (issue 32's targets are taken on it).
TCP = "zklock/pgbench TCP"
# zklock's own cost: the cycle timed inside the backend by a PL/pgSQL loop,
# without the client's round trips to PostgreSQL.  Never a target's row.
INBACKEND = "zklock in-backend"
ZK_CPU = "ZooKeeper CPU per cycle"
ZK_REQ = "ZooKeeper requests per cycle"
ZK_TXN = "ZooKeeper transactions per cycle"
ZK_FSYNC = "ZooKeeper fsyncs per cycle"


class Got(tuple):
    """What rounds() got for a contender: (data of each round, usage summed
    over the rounds), and .usages, the usage of each round."""

    def __new__(cls, parts, usage, usages):
        t = tuple.__new__(cls, (parts, usage))
        t.usages = usages
        return t


class WarmJvm:
    """One Curator JVM (CuratorBench serve) kept for a whole shape: warmed
    until the JIT's compile time stops rising, then driven round by round."""

    def __init__(self, cmd, log):
        self.d = Driver(cmd, log)
        self.d.expect("ready", timeout=120)
        self.pid = self.d.p.pid
        self.warm_note = ""

    def start(self, args):
        self.d.send(" ".join(str(x) for x in args))

    def close(self):
        try:
            self.d.send("quit")
        except (BrokenPipeError, OSError):
            pass
        self.d.finish()


class Harness:
    def __init__(self, a):
        self.a = a
        self.smoke = a.smoke
        self.zk = ZooKeeper(a.zk, a.zk_pid)
        self.main = Cluster(a.main, "main")
        self.e = Cluster(a.e, "e") if a.e else None
        self.f = Cluster(a.f, "f") if a.f else None
        # The fleet: clusters on a three-server ensemble (zkbench.fleet).
        self.fleet = [Cluster(spec, "fleet%d" % (i + 1))
                      for i, spec in enumerate(a.fleet.split(","))] if a.fleet else []
        self.fleet_zk_pids = [int(x) for x in a.fleet_zk_pids.split(",")] \
            if a.fleet_zk_pids else []
        self.res = Results()
        self.log = open(os.path.join(a.work, "bench.log"), "a")
        self.java = ["java", "-Xss512k", "-cp", a.java_cp, "CuratorBench", a.zk]
        self.kazoo = ["/usr/bin/python3", a.kazoo, a.zk]
        self.floor = [a.floor, a.zk]
        self.worker = self.main.worker_pid()
        # ZooKeeper's container check interval (znode.container.checkIntervalMs).
        self.reaper_interval_s = a.reaper_interval
        self.set_sizes()
        self.sessions = {}

    def set_sizes(self):
        """Shape parameters; the smoke run only checks that everything works,
        every shape at a tiny size."""
        # Unmeasured load before the first shape: zkfloor's arguments, and
        # zkbench.uncontended's seconds and warm-up cycles.
        if self.smoke:
            self.warm_floor = (["pipelined", "0.2", "10", "1000"], ["threads", "0.2", "5", "4"])
            self.warm_sql = (0.2, 10)
        else:
            self.warm_floor = (["pipelined", "3", "300", "1000000"],
                               ["threads", "2", "20", "16"])
            self.warm_sql = (1, 300)
        # (a) runs a_rounds times a_seconds per contender, (b) and (c)
        # loop_rounds times loop_seconds, interleaved (see rounds()), the
        # loops of a round starting together loop_lead seconds after they
        # are started.
        # The smoke (quick) run keeps 2 rounds, so that the alternating
        # order and the ratios' spread are exercised too.
        if self.smoke:
            self.a_rounds, self.a_seconds, self.a_warmup, self.a_maxn = 2, 0.3, 10, 50
            self.clients = 4
            self.loop_rounds, self.loop_seconds, self.loop_lead = 2, 1.0, 1.5
            self.loop_warmup = 5
            self.waiters = [3, 5]
            self.e_sessions, self.e_locks = 2, 50
        else:
            self.a_rounds, self.a_seconds, self.a_warmup, self.a_maxn = 5, 1.0, 500, 20000
            self.clients = 16
            self.loop_rounds, self.loop_seconds, self.loop_lead = 5, 3.0, 3.0
            self.loop_warmup = 20
            self.waiters = [10, 100]
            self.e_sessions, self.e_locks = 10, 1000
        # Curator's JVM, one per shape (and per process of (c) across
        # clusters and (h)): warm-up windows of jvm_window seconds of the
        # shape's own work until the JIT's compile time rose by less than
        # jvm_settled_ms in each of two windows in a row, at most
        # jvm_max_windows windows.  ZooKeeper's JVM is warmed the same way
        # before the first shape (zklock's multis and Curator's requests),
        # its compile time read with jstat.
        if self.smoke:
            self.jvm_window, self.jvm_settled_ms, self.jvm_max_windows = 0.3, 20, 3
            self.jvm_together_windows = 1
        else:
            self.jvm_window, self.jvm_settled_ms, self.jvm_max_windows = 1.0, 10, 60
            self.jvm_together_windows = 8
        # Equal offered load (CPU per cycle compared at the same rate):
        # (b)'s clients, rate-limited, for load_seconds, load_rounds rounds.
        if self.smoke:
            self.load_rates, self.load_rounds, self.load_seconds = [200], 2, 1.0
        else:
            self.load_rates, self.load_rounds, self.load_seconds = [1000, 3000], 5, 3.0
        # (c) across clusters: the same lock from k clusters (self.clients
        # / k pgbench clients each) against k Curator processes.
        self.cx_sizes = [2] if self.smoke else [2, 4]
        # (f) runs f_rounds times f_seconds per cluster, for each of its two
        # pairs (short rounds, finely interleaved: the ratio is taken round
        # by round); the second pair with f_held locks held on the large
        # cluster.  A session's first call warms up with a_warmup cycles,
        # the later ones with f_rewarm.
        # (g) runs g_rounds of (a)'s cycle and of (b)'s loop for each delay.
        self.g_delays_us = [250, 1000]
        self.g_rounds = 2 if self.smoke else 5
        if self.smoke:
            self.f_rounds, self.f_seconds, self.f_held, self.f_rewarm = 2, 0.1, 500, 5
        else:
            self.f_rounds, self.f_seconds, self.f_held, self.f_rewarm = 10, 0.4, 5000, 20
        # Statistics on and off (issue 34), after (a) and (b): stats_rounds
        # pairs of rounds, the two sides interleaved, the ratio taken round
        # by round as in (f): (a)'s cycle for stats_a_seconds (a session's
        # first round warms up with a_warmup cycles, later ones with
        # f_rewarm), and pgbench over TCP, (b)'s clients, for 1 s.
        if self.smoke:
            self.stats_rounds, self.stats_a_seconds = 1, 0.1
        else:
            self.stats_rounds, self.stats_a_seconds = 10, 0.4
        # (h), the fleet: fleet_rounds of fleet_seconds, the clients of every
        # cluster (or the threads of every Curator process) starting together
        # fleet_lead seconds after they are started; each cluster and each
        # Curator process has self.clients clients.
        if self.smoke:
            self.fleet_rounds, self.fleet_seconds, self.fleet_lead = 2, 1.0, 3.0
        else:
            self.fleet_rounds, self.fleet_seconds, self.fleet_lead = 5, 3.0, 5.0

    def say(self, text):
        print(text, flush=True)

    def meter(self, *lock):
        return Meter(self.zk.pid, list(lock), counters=self.zk.counters)

    def backends(self, cluster, appname, want, timeout=10):
        """Pids of the backends of application_name appname, once there are want."""
        end = time.time() + timeout
        while True:
            out = cluster.query("SELECT string_agg(pid::text, ' ') FROM pg_stat_activity "
                                "WHERE application_name = '%s'" % appname)
            pids = [int(x) for x in out.split()] if out else []
            if len(pids) >= want or time.time() > end:
                return pids
            time.sleep(0.05)

    def attempt(self, shape, contender, fn):
        try:
            fn()
        except Exception as e:  # recorded; the run goes on with the next contender
            self.res.error(shape, contender, e)

    # -- rounds --

    # What rounds(warm=True) adds to the notes of its contenders' rows.
    WARM_ROUND_NOTE = ("one unmeasured round of every contender, in the first round's order, "
                       "right before the measured rounds")

    def rounds(self, shape, contenders, nrounds, warm=False):
        """Measure every contender nrounds times, interleaved: each round
        runs every contender once, in the given order in even rounds and
        reversed in odd ones, so that of any two contenders each goes first
        in half the rounds, and load that comes and goes on the machine is
        shared by all.  contenders: (name, measure) pairs; measure()
        returns (data, usage).  Returns name -> Got (list of data, summed
        usage, .usages of each round) for those that never failed.
        warm: one unmeasured round of every contender first
        (WARM_ROUND_NOTE), for shapes whose servers ran one contender's
        load alone for a while just before (the Curator JVMs' joint
        warm-up); a failure there is printed, and the contender is tried
        again in the measured rounds."""
        if warm:
            rates = []
            for name, measure in contenders:
                try:
                    data, _ = measure()
                    rates.append("%s %.0f/s" % (name, data["n"] / data["seconds"]))
                except Exception as e:  # the measured rounds try it again
                    rates.append("%s failed: %s" % (name, e))
            self.say("  %s: %s" % (self.WARM_ROUND_NOTE, "; ".join(rates)))
        got = {name: ([], []) for name, _ in contenders}
        failed = set()
        for r in range(nrounds):
            for name, measure in (contenders if r % 2 == 0 else contenders[::-1]):
                if name in failed:
                    continue
                try:
                    data, usage = measure()
                except Exception as e:  # recorded; the other contenders go on
                    self.res.error(shape, name, e)
                    failed.add(name)
                    continue
                got[name][0].append(data)
                got[name][1].append(usage)
        return {name: Got(parts, add_usage(usages), usages)
                for name, (parts, usages) in got.items() if name not in failed and parts}

    def driver_run(self, cmd, ops):
        """Start a driver, meter its measured part; returns (its JSON, usage);
        ops(json) counts the acquisitions."""
        d = Driver(cmd, self.log)
        d.expect("measuring", timeout=180)
        m = self.meter(d.p.pid)
        out = json.loads(d.line(timeout=180))
        usage = m.stop()
        usage["ops"] = ops(out)
        d.finish()
        return out, usage

    # -- Curator's warm JVM --

    def jvm_open(self, java, args, what, root=None):
        """Start a Curator JVM (CuratorBench serve) on java (self.java or its
        copy for another connect string; root: its -Dzkbench.root) and warm
        it with windows of args (a command of mode a or loop, its seconds
        replaced by the window's) until its compile time stops rising.
        Returns the WarmJvm; the caller closes it."""
        cmd = list(java)
        if root:
            cmd = cmd[:1] + ["-Dzkbench.root=" + root] + cmd[1:]
        jvm = WarmJvm(cmd + ["serve"], self.log)
        try:
            self.jvm_warm(jvm, args, what)
        except Exception:
            jvm.close()
            raise
        return jvm

    def jvm_warm(self, jvm, args, what):
        args = [str(x) for x in args]
        args[1 if args[0] == "a" else 2] = str(self.jvm_window)
        if args[0] == "loop" and len(args) > 5:
            args[5] = "0"		# no common start time for a warm-up window
        jits, settled, t0 = [], 0, time.time()
        while len(jits) < self.jvm_max_windows:
            jvm.start(args)
            jvm.d.expect("measuring", timeout=180)
            out = json.loads(jvm.d.line(timeout=180))
            jits.append(out.get("jit_ms", 0))
            settled = settled + 1 if jits[-1] < self.jvm_settled_ms else 0
            if settled >= 2:
                break
        jvm.warm_note = ("Curator's JVM warmed with %d windows of %g s of %s (%.0f s in all) "
                         "until its JIT's compile time rose by less than %d ms a window twice "
                         "in a row%s; JIT ms per window: %s"
                         % (len(jits), self.jvm_window, what, time.time() - t0,
                            self.jvm_settled_ms, "" if settled >= 2 else
                            " (NOT settled: stopped at the limit of %d windows)"
                            % self.jvm_max_windows, " ".join("%d" % j for j in jits)))
        self.say("  " + jvm.warm_note)

    def jvms_warm_together(self, window, k, what):
        """Curator JVMs whose measured windows run together (k of them: (c)
        across clusters, the fleet) compile more the first time they do,
        each warmed alone before: warm them together too, with whole
        unmeasured windows (window() runs one, like a measured round, and
        returns (data, usage) with usage["jit_ms"] summed over the JVMs),
        until their JIT's compile time rises by less than jvm_settled_ms
        per JVM in each of two windows in a row, at most
        jvm_together_windows.  Returns a note saying so."""
        jits, settled = [], 0
        while len(jits) < self.jvm_together_windows:
            _, usage = window()
            jits.append(usage.get("jit_ms") or 0)
            settled = settled + 1 if jits[-1] < k * self.jvm_settled_ms else 0
            if settled >= 2:
                break
        note = ("then the %d JVMs warmed together with %d unmeasured windows of %s until their "
                "JIT's compile time rose by less than %d ms a window twice in a row%s; JIT ms "
                "per window, summed: %s"
                % (k, len(jits), what, k * self.jvm_settled_ms, "" if settled >= 2 else
                   " (NOT settled: stopped at the limit of %d windows)" % self.jvm_together_windows,
                   " ".join("%d" % j for j in jits)))
        self.say("  " + note)
        return note

    def jvm_run(self, jvm, args, ops):
        """One measured round in a warm JVM: returns (its JSON, usage); the
        usage carries the JVM's JIT and GC milliseconds of the window."""
        jvm.start(args)
        jvm.d.expect("measuring", timeout=180)
        m = self.meter(jvm.pid)
        line = jvm.d.line(timeout=180)
        usage = m.stop()
        if line.startswith("error "):		# the command failed; the JVM goes on
            raise BenchError("CuratorBench: %s" % line[6:])
        out = json.loads(line)
        if out.get("jdbc_driver"):
            usage["jdbc_driver"] = out["jdbc_driver"]
        usage["ops"] = ops(out)
        usage["jit_ms"], usage["gc_ms"] = out.get("jit_ms"), out.get("gc_ms")
        return out, usage

    def jvm_rows(self, shape, name, got):
        """The JIT and GC milliseconds of Curator's JVM in each measured
        window, as rows (their rounds are the windows)."""
        if name not in got:
            return
        jit = [u.get("jit_ms") for u in got[name].usages]
        gc = [u.get("gc_ms") for u in got[name].usages]
        if any(x is None for x in jit + gc):
            return
        self.say("  %-34s JIT ms per measured window: %s; GC ms: %s"
                 % (name + " JVM", " ".join("%d" % x for x in jit), " ".join("%d" % x for x in gc)))
        self.res.add(shape, "JVM JIT ms per measured window (max)", name, float(max(jit)), "ms",
                     rounds=jit)
        self.res.add(shape, "JVM GC ms per measured window (max)", name, float(max(gc)), "ms",
                     rounds=gc)

    # -- ZooKeeper's container reaper, after (e) and (f) --

    def wait_reaper(self, shape, before, timeout=600):
        """Wait until ZooKeeper's container reaper has deleted the lock
        directories a shape emptied: until the server's znode count is back
        to before (its count when the shape started), or has not moved for
        two check intervals; says how long it took."""
        t0, last, since = time.time(), None, time.time()
        interval = self.reaper_interval_s
        while time.time() - t0 < timeout:
            c = self.zk.counters()
            n = c["znodes"] if c else None
            if n is not None and n <= before:
                break
            if n != last:
                last, since = n, time.time()
            elif time.time() - since > 2 * interval + 5:
                break
            time.sleep(0.5)
        c = self.zk.counters()
        self.say("  %s: waited %.1f s for ZooKeeper's container reaper (znodes %d before the "
                 "shape, %s now)" % (shape, time.time() - t0, before,
                                     c["znodes"] if c else "?"))

    # -- the uncontended cycle of (a) and (f) --

    def a_session(self, key, cluster, setup=None):
        """One open session per SQL contender of (a) and (f), kept across
        rounds; setup: a statement it runs first."""
        if key not in self.sessions:
            s = Session(cluster, self.log)
            if setup:
                s.query(setup)
            self.sessions[key] = (s, int(s.query("SELECT pg_backend_pid()")))
        return self.sessions[key]

    def close_sessions(self):
        for s, _ in self.sessions.values():
            s.close()
        self.sessions.clear()

    def uncontended_sql(self, key, cluster, worker, kind, lockname, seconds, warmup,
                        setup=None):
        """(a)'s loop: warmup cycles, then seconds of acquire + release of one
        lock in one session of cluster (setup: a statement the session runs
        first); returns the cycles' latencies and the usage of the session's
        backend (and of worker, the cluster's zklock worker)."""
        s, pid = self.a_session(key, cluster, setup)
        m = self.meter(pid, worker if kind == "zklock" else None)
        out = s.query("SELECT zkbench.uncontended('%s', '%s', %g, %d, %d)"
                      % (kind, lockname, seconds, warmup, self.a_maxn))
        lat = [float(x) for x in out.strip("{}").split(",") if x]
        # The warmup is inside the window: count its cycles too.
        return lat, m.stop(ops=len(lat) + warmup)

    def cycle_rows(self, shape, what, shown, name, got, target=None, note=None):
        """Print and record the median and p99 of one contender's cycles; return the median."""
        parts, usage = got[name]
        lat = [x for p in parts for x in p]
        self.say("  %s median %.3f ms  p99 %.3f ms  (%d cycles)"
                 % (shown, median(lat), pct(lat, 0.99), len(lat)))
        self.res.add(shape, "%sacquire+release, median" % what, name, median(lat), "ms",
                     target=target, cpu=usage, n=len(lat), note=note,
                     rounds=[median(p) for p in parts])
        self.res.add(shape, "%sacquire+release, p99" % what, name, pct(lat, 0.99), "ms",
                     cpu=usage, n=len(lat), rounds=[pct(p, 0.99) for p in parts])
        return median(lat)

    @staticmethod
    def per_cycle(usage, key, scale=1.0):
        v, ops = usage.get(key), usage.get("ops")
        return v * scale / ops if v is not None and ops else float("nan")

    def zk_count_rows(self, shape, name, usage, usages=None, prefix="", per="cycle",
                      fsync_target=None):
        """ZooKeeper's requests, transactions and fsyncs per cycle (or per
        what per names) of a contender over its metered windows; no row
        for a figure that could not be counted.  fsync_target: a target
        for the fsyncs' row."""
        out = []
        for metric, key in ((ZK_REQ, "zk_req"), (ZK_TXN, "zk_txn"), (ZK_FSYNC, "zk_fsync")):
            v = self.per_cycle(usage, key)
            out.append(v)
            if v != v:
                continue
            self.res.add(shape, prefix + metric.replace("per cycle", "per " + per), name, v,
                         "per " + per, cpu=usage,
                         target=fsync_target if key == "zk_fsync" else None,
                         rounds=[self.per_cycle(u, key) for u in usages] if usages else None)
        return out

    def zk_cpu_row(self, shape, name, usage, target=None, usages=None, prefix="",
                   fsync_target=None):
        """Record ZooKeeper's CPU time per cycle (acquire + release) of a
        contender, in microseconds, from its metered usage: the ZooKeeper
        server's (or the ensemble's servers') CPU over the measured window,
        divided by the cycles done in it; and, from ZooKeeper's counters
        over the same windows, its requests (packets received),
        transactions (zxid delta) and fsyncs (mntr zk_cnt_fsynctime, a
        count) per cycle.  n/a (a missing figure) when the CPU time could
        not be read."""
        value = self.per_cycle(usage, "zk_ms", 1000.0)
        rounds = [self.per_cycle(u, "zk_ms", 1000.0) for u in usages] if usages else None
        self.res.add(shape, prefix + ZK_CPU, name, value, "us", target=target, cpu=usage,
                     rounds=rounds)
        req, txn, fs = self.zk_count_rows(shape, name, usage, usages, prefix,
                                          fsync_target=fsync_target)
        self.say("  %-34s %8.0f us of ZooKeeper CPU, %.2f requests, %.2f transactions, "
                 "%.2f fsyncs per cycle" % (name, value, req, txn, fs))

    def zk_cpu_rows(self, shape, got, names, tcp_target=None, prefix="", tcp_fsync_target=None):
        """zk_cpu_row for each of names measured; tcp_target (ZooKeeper's
        CPU) and tcp_fsync_target (its fsyncs) on the TCP row."""
        for name in names:
            if name in got:
                self.zk_cpu_row(shape, name, got[name][1],
                                target=tcp_target if name == TCP else None,
                                usages=getattr(got[name], "usages", None), prefix=prefix,
                                fsync_target=tcp_fsync_target if name == TCP else None)

    def stats_pair(self, shape, metric, contender, measure, figure, what):
        """Statistics on and off (issue 34): measure(stats) returns a round's
        (data, usage) with zklock.track_stats on or off, figure(data) its
        figure; stats_rounds rounds of each, interleaved.  Records the
        figure of each side (median over its rounds) and their ratio, taken
        round by round (the median of each round's on / off), as (f) does:
        load that comes and goes falls on both sides."""
        self.say("%s statistics on and off: %s (%d rounds each)" % (shape, what, self.stats_rounds))
        on, off = "track_stats on", "track_stats off"
        got = self.rounds(shape, [(on, lambda: measure(True)), (off, lambda: measure(False))],
                          self.stats_rounds)
        if on not in got or off not in got:
            return
        f_on = [figure(x) for x in got[on][0]]
        f_off = [figure(x) for x in got[off][0]]
        ratios = [a / b for a, b in zip(f_on, f_off) if b]
        for side, figs in ((on, f_on), (off, f_off)):
            self.say("  %-16s %s %.3f" % (side, metric, median(figs)))
            self.res.add(shape, "%s, %s" % (metric, side), contender, median(figs),
                         "ms" if "median" in metric else "/s", cpu=got[side][1])
        ratio = median(ratios) if ratios else float("nan")
        self.say("  on / off, round by round: %.3f (%s)"
                 % (ratio, " ".join("%.2f" % r for r in ratios)))
        self.res.add(shape, "%s, track_stats on / off" % metric, contender, ratio, "x",
                     note="%s: %s with zklock.track_stats on and off, %d interleaved rounds "
                          "each; the ratio is the median over the rounds of the round's on / "
                          "off (%s); of the overall figures: %.3f"
                          % (shape, what, self.stats_rounds,
                             " ".join("%.2f" % r for r in ratios),
                             median(f_on) / median(f_off) if median(f_off) else float("nan")))

    # -- pgbench, for (a), (b) and (c) --

    def pgbench_script(self, name, body):
        path = os.path.join(self.a.work, name)
        with open(path, "w") as f:
            f.write(body)
        return path

    def pgbench_start(self, cluster, script, clients, seconds=None, log_prefix=None,
                      transactions=None, tcp=False, options=None, rate=None, port=None):
        """Start pgbench -M prepared on cluster: over its Unix socket with
        as many threads as cores (at most one per client), or, tcp, over TCP
        to 127.0.0.1 with two threads (-j 2), as users run it.  options:
        PGOPTIONS for its sessions; rate: the offered load (-R, transactions
        per second of all clients); port: another TCP port to reach the
        cluster through (a relay)."""
        if tcp:
            where = ["-h", "127.0.0.1", "-j", str(min(clients, 2))]
        else:
            where = ["-h", cluster.sockdir, "-j", str(min(clients, NCPU))]
        cmd = ["pgbench", "-n", "-M", "prepared", *where, "-p", str(port or cluster.port),
               "-U", "postgres", "-c", str(clients), "-f", script]
        if rate:
            cmd += ["-R", str(rate)]
        cmd += ["-t", str(transactions)] if transactions else ["-T", str(max(1, round(seconds)))]
        if log_prefix:
            cmd += ["-l", "--log-prefix=" + log_prefix]
        cmd.append("postgres")
        env = dict(os.environ, PGOPTIONS=options) if options else None
        return spawn(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                     stderr=subprocess.PIPE, text=True, cwd=self.a.work, env=env)

    @staticmethod
    def pgbench_tps(p):
        """Wait for a pgbench started by pgbench_start; its transactions per second."""
        out, err = p.communicate(timeout=300)
        PROCS.remove(p)
        if p.returncode != 0:
            raise BenchError("pgbench exited with %d: %s" % (p.returncode, err.strip()[-1500:]))
        tps = re.search(r"tps = ([0-9.]+) \(without initial connection time\)", out)
        if not tps:
            raise BenchError("pgbench printed no tps:\n" + out[-500:])
        return float(tps.group(1))

    def pgbench(self, script, clients, seconds=None, log_prefix=None, transactions=None,
                worker=True, tcp=False, options=None, rate=None, port=None):
        # zklock's cycles in the meter's window, counted (Acquisitions).
        counter = Acquisitions([self.main], self.log) if worker and seconds else None
        try:
            p = self.pgbench_start(self.main, script, clients, seconds, log_prefix,
                                   transactions, tcp, options, rate, port)
            pids = self.backends(self.main, "pgbench", clients)
            a0 = counter.count() if counter else None
            m = self.meter(p.pid, self.worker if worker else None, *pids)
            if not seconds:
                # A number of transactions (the smoke's (a)): the window is
                # the whole run (the lock client's CPU is then not counted:
                # its processes are gone when it ends).
                tps = self.pgbench_tps(p)
                usage = m.stop(ops=transactions * clients)
                return tps, usage
            # Read the counters while pgbench and its backends still run.
            time.sleep(max(0.1, round(seconds) - 0.3))
            a1 = counter.count() if counter else None
            usage = m.stop()
            tps = self.pgbench_tps(p)
            usage["ops"] = a1 - a0 if counter else tps * usage["wall"]
            return tps, usage
        finally:
            if counter:
                counter.close()

    def pgbench_clusters(self, scripts, clients, seconds, workers, zk_pids, counters):
        """pgbench over TCP on several clusters at once, scripts a list of
        (cluster, script), clients sessions each, metered together: their
        pgbench processes, backends and workers against zk_pids and
        counters (ZooKeeper's).  Returns (summed tps, usage), usage's ops
        the acquisitions counted in the window (Acquisitions)."""
        counter = Acquisitions([c for c, _ in scripts], self.log)
        try:
            t0 = time.time()
            procs = [self.pgbench_start(c, s, clients, seconds=seconds, tcp=True)
                     for c, s in scripts]
            pids = []
            for c, _ in scripts:
                pids += self.backends(c, "pgbench", clients)
            a0 = counter.count()
            m = Meter(zk_pids, [p.pid for p in procs] + workers + pids, counters=counters)
            # Read the counters while every pgbench and its backends still run.
            time.sleep(max(0.1, t0 + round(seconds) - 0.3 - time.time()))
            a1 = counter.count()
            usage = m.stop()
            tps = sum(self.pgbench_tps(p) for p in procs)
            usage["ops"] = a1 - a0
            return tps, usage
        finally:
            counter.close()

    # -- zklock's slots, for (e) and (f) --

    def wait_slots(self, cluster, want, timeout=120):
        end = time.time() + timeout
        while time.time() < end:
            used = cluster.status()["slots_used"]
            if used == want:
                return
            time.sleep(0.02)
        raise BenchError("zklock slots in use stayed at %d, expected %d" % (used, want))
