"""zkbench.harness: what every shape of the benchmark stands on.  Harness
holds the servers (ZooKeeper, the PostgreSQL clusters), the drivers'
command lines, the results, and the size of every shape (full or smoke),
and the helpers the shapes share: interleaved rounds of contenders, a
metered driver run, open psql sessions for (a)'s loop, pgbench, the rows of
a cycle's median and p99, ZooKeeper's CPU per cycle, waiting for zklock's
slots to empty.

The shapes (zkbench.uncontended, loops, waiters, many_locks, max_locks, network,
fleet) are subclasses of Harness; zkbench.benchmark.Bench puts them together.
"""

import json
import os
import re
import subprocess
import time

from .cpu import NCPU, Meter, add_usage
from .postgres import Cluster, Session
from .processes import PROCS, BenchError, Driver, spawn
from .results import Results
from .stats import median, pct
from .zookeeper import ZooKeeper


# The contender users run: pgbench -M prepared over TCP to 127.0.0.1 with
# two threads (issue 32's targets are taken on it).
TCP = "zklock/pgbench TCP"
ZK_CPU = "ZooKeeper CPU per cycle"


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
        if self.smoke:
            self.a_rounds, self.a_seconds, self.a_warmup, self.a_maxn = 1, 0.3, 10, 50
            self.clients = 4
            self.loop_rounds, self.loop_seconds, self.loop_lead = 1, 1.0, 1.5
            self.loop_warmup = 5
            self.waiters = [3, 5]
            self.e_sessions, self.e_locks = 2, 50
        else:
            self.a_rounds, self.a_seconds, self.a_warmup, self.a_maxn = 3, 1.0, 500, 20000
            self.clients = 16
            self.loop_rounds, self.loop_seconds, self.loop_lead = 2, 3.0, 3.0
            self.loop_warmup = 20
            self.waiters = [10, 100]
            self.e_sessions, self.e_locks = 10, 1000
        # (f) runs f_rounds times f_seconds per cluster, for each of its two
        # pairs (short rounds, finely interleaved: the ratio is taken round
        # by round); the second pair with f_held locks held on the large
        # cluster.  A session's first call warms up with a_warmup cycles,
        # the later ones with f_rewarm.
        # (g) runs g_rounds of (a)'s cycle and of (b)'s loop for each delay.
        self.g_delays_us = [250, 1000]
        self.g_rounds = 1
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
            self.fleet_rounds, self.fleet_seconds, self.fleet_lead = 1, 1.0, 3.0
        else:
            self.fleet_rounds, self.fleet_seconds, self.fleet_lead = 2, 3.0, 5.0

    def say(self, text):
        print(text, flush=True)

    def meter(self, *lock):
        return Meter(self.zk.pid, list(lock))

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

    def rounds(self, shape, contenders, nrounds):
        """Measure every contender nrounds times, interleaved, in an order that
        rotates each round: load that comes and goes on the machine is then
        shared by all.  contenders: (name, measure) pairs; measure() returns
        (data, usage).  Returns name -> (list of data, summed usage) for those
        that never failed."""
        got = {name: ([], []) for name, _ in contenders}
        failed = set()
        for r in range(nrounds):
            k = r % len(contenders)
            for name, measure in contenders[k:] + contenders[:k]:
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
        return {name: (parts, add_usage(usages)) for name, (parts, usages) in got.items()
                if name not in failed and parts}

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
                     target=target, cpu=usage, n=len(lat), note=note)
        self.res.add(shape, "%sacquire+release, p99" % what, name, pct(lat, 0.99), "ms",
                     cpu=usage, n=len(lat))
        return median(lat)

    def zk_cpu_row(self, shape, name, usage, target=None):
        """Record ZooKeeper's CPU time per cycle (acquire + release) of a
        contender, in microseconds, from its metered usage: the ZooKeeper
        server's (or the ensemble's servers') CPU over the measured window,
        divided by the cycles done in it.  n/a (a missing figure) when it
        could not be read."""
        zk, ops = usage.get("zk_ms"), usage.get("ops")
        value = zk * 1000.0 / ops if zk is not None and ops else float("nan")
        self.say("  %-34s %8.0f us of ZooKeeper CPU per cycle" % (name, value))
        self.res.add(shape, ZK_CPU, name, value, "us", target=target, cpu=usage)

    def zk_cpu_rows(self, shape, got, names, tcp_target=None):
        """zk_cpu_row for each of names measured; tcp_target on the TCP row."""
        for name in names:
            if name in got:
                self.zk_cpu_row(shape, name, got[name][1],
                                target=tcp_target if name == TCP else None)

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
                      transactions=None, tcp=False, options=None):
        """Start pgbench -M prepared on cluster: over its Unix socket with
        as many threads as cores (at most one per client), or, tcp, over TCP
        to 127.0.0.1 with two threads (-j 2), as users run it.  options:
        PGOPTIONS for its sessions."""
        if tcp:
            where = ["-h", "127.0.0.1", "-j", str(min(clients, 2))]
        else:
            where = ["-h", cluster.sockdir, "-j", str(min(clients, NCPU))]
        cmd = ["pgbench", "-n", "-M", "prepared", *where, "-p", str(cluster.port),
               "-U", "postgres", "-c", str(clients), "-f", script]
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
                worker=True, tcp=False, options=None):
        p = self.pgbench_start(self.main, script, clients, seconds, log_prefix, transactions,
                               tcp, options)
        pids = self.backends(self.main, "pgbench", clients)
        m = self.meter(p.pid, self.worker if worker else None, *pids)
        if not seconds:
            # A number of transactions (the smoke's (a)): the window is the
            # whole run (the lock client's CPU is then not counted: its
            # processes are gone when it ends).
            tps = self.pgbench_tps(p)
            usage = m.stop(ops=transactions * clients)
            return tps, usage
        # Read the counters while pgbench and its backends still run.
        time.sleep(max(0.1, round(seconds) - 0.3))
        usage = m.stop()
        tps = self.pgbench_tps(p)
        usage["ops"] = tps * usage["wall"]
        return tps, usage

    # -- zklock's slots, for (e) and (f) --

    def wait_slots(self, cluster, want, timeout=120):
        end = time.time() + timeout
        while time.time() < end:
            used = cluster.status()["slots_used"]
            if used == want:
                return
            time.sleep(0.02)
        raise BenchError("zklock slots in use stayed at %d, expected %d" % (used, want))
