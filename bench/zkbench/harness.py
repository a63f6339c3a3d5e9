"""zkbench.harness: what every shape of the benchmark stands on.  Harness
holds the servers (ZooKeeper, the PostgreSQL clusters), the drivers'
command lines, the results, and the size of every shape (full or smoke),
and the helpers the shapes share: interleaved rounds of contenders, a
metered driver run, open psql sessions for (a)'s loop, pgbench, the rows of
a cycle's median and p99, waiting for zklock's slots to empty.

The shapes (zkbench.uncontended, loops, waiters, many_locks, max_locks, network) are
subclasses of Harness; zkbench.benchmark.Bench puts them together.
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


class Harness:
    def __init__(self, a):
        self.a = a
        self.smoke = a.smoke
        self.zk = ZooKeeper(a.zk, a.zk_pid)
        self.main = Cluster(a.main, "main")
        self.e = Cluster(a.e, "e") if a.e else None
        self.f = Cluster(a.f, "f") if a.f else None
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

    def a_session(self, key, cluster):
        """One open session per SQL contender of (a) and (f), kept across rounds."""
        if key not in self.sessions:
            s = Session(cluster, self.log)
            self.sessions[key] = (s, int(s.query("SELECT pg_backend_pid()")))
        return self.sessions[key]

    def close_sessions(self):
        for s, _ in self.sessions.values():
            s.close()
        self.sessions.clear()

    def uncontended_sql(self, key, cluster, worker, kind, lockname, seconds, warmup):
        """(a)'s loop: warmup cycles, then seconds of acquire + release of one
        lock in one session of cluster; returns the cycles' latencies and the
        usage of the session's backend (and of worker, the cluster's zklock
        worker)."""
        s, pid = self.a_session(key, cluster)
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

    # -- pgbench, for (a), (b) and (c) --

    def pgbench_script(self, name, body):
        path = os.path.join(self.a.work, name)
        with open(path, "w") as f:
            f.write(body)
        return path

    def pgbench(self, script, clients, seconds=None, log_prefix=None, transactions=None,
                worker=True):
        cmd = ["pgbench", "-n", "-M", "prepared", "-h", self.main.sockdir,
               "-p", str(self.main.port), "-U", "postgres", "-c", str(clients),
               "-j", str(min(clients, NCPU)), "-f", script]
        cmd += ["-t", str(transactions)] if transactions else ["-T", str(max(1, round(seconds)))]
        if log_prefix:
            cmd += ["-l", "--log-prefix=" + log_prefix]
        cmd.append("postgres")
        p = spawn(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                  text=True, cwd=self.a.work)
        pids = self.backends(self.main, "pgbench", clients)
        m = self.meter(p.pid, self.worker if worker else None, *pids)
        if seconds:
            # Read the counters while pgbench and its backends still run.
            time.sleep(max(0.1, round(seconds) - 0.3))
        usage = m.stop()
        out, err = p.communicate(timeout=300)
        PROCS.remove(p)
        if p.returncode != 0:
            raise BenchError("pgbench exited with %d: %s" % (p.returncode, err.strip()[-1500:]))
        tps = re.search(r"tps = ([0-9.]+) \(without initial connection time\)", out)
        if not tps:
            raise BenchError("pgbench printed no tps:\n" + out[-500:])
        usage["ops"] = float(tps.group(1)) * usage["wall"]
        return float(tps.group(1)), usage

    # -- zklock's slots, for (e) and (f) --

    def wait_slots(self, cluster, want, timeout=120):
        end = time.time() + timeout
        while time.time() < end:
            used = cluster.status()["slots_used"]
            if used == want:
                return
            time.sleep(0.02)
        raise BenchError("zklock slots in use stayed at %d, expected %d" % (used, want))
