"""bench.py: runs the shapes of zklock's benchmark against servers that
bench/run.sh has started, and prints, writes and charts the results.

run.sh starts one ZooKeeper and the PostgreSQL clusters, builds the
drivers, then runs this with /usr/bin/python3 (see run.sh for the meaning of
every number).  Contenders, all on the same ZooKeeper:

  zklock            zk_lock_acquire + zk_lock_release, timed inside the
                    backend by PL/pgSQL loops (bench.sql);
  zklock/pgbench    the same calls sent by pgbench: what a client sees;
  Curator           InterProcessMutex, one CuratorFramework (CuratorBench.java);
  kazoo             kazoo.recipe.lock.Lock, one KazooClient (kazoo_bench.py);
  pg_advisory_lock  the local floor, timed in the backend, and by pgbench;
  ZK floor          zkfloor.c on libzookeeper_mt: bare requests, no lock.

Every process it starts is recorded and stopped, by pid, when it exits.
Exit status: 0 when every measurement ran (targets met or not), 1 if one
failed.  Targets never decide the status: no test asserts on a time.
"""

import argparse
import csv
import json
import math
import os
import re
import signal
import socket
import statistics
import subprocess
import sys
import time

PROCS = []


class BenchError(Exception):
    pass


# ---- processes --------------------------------------------------------------

def spawn(cmd, **kw):
    p = subprocess.Popen(cmd, **kw)
    PROCS.append(p)
    return p


def stop_spawned():
    live = [p for p in PROCS if p.poll() is None]
    for p in live:
        try:
            p.terminate()
        except ProcessLookupError:
            pass
    deadline = time.time() + 5
    for p in live:
        try:
            p.wait(timeout=max(0.1, deadline - time.time()))
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
    PROCS.clear()


def run(cmd, timeout=300, cwd=None):
    p = spawn(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
              stderr=subprocess.PIPE, text=True, cwd=cwd)
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        p.communicate()
        raise BenchError("%s timed out after %ds" % (os.path.basename(cmd[0]), timeout))
    finally:
        if p in PROCS:
            PROCS.remove(p)
    if p.returncode != 0:
        raise BenchError("%s exited with %d: %s" % (os.path.basename(cmd[0]), p.returncode,
                                                    err.strip()[-1500:]))
    return out


class Driver:
    """A driver (Java, Python, C) whose stdout is read line by line."""

    def __init__(self, cmd, log):
        self.cmd = cmd
        self.p = spawn(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                       stderr=log, text=True, bufsize=1)

    def line(self, timeout=120):
        import select
        end = time.time() + timeout
        while True:
            left = end - time.time()
            if left <= 0:
                raise BenchError("%s: no output for %ds" % (os.path.basename(self.cmd[0]), timeout))
            r, _, _ = select.select([self.p.stdout], [], [], left)
            if r:
                text = self.p.stdout.readline()
                if text == "":
                    self.p.wait()
                    raise BenchError("%s exited with %s; see bench.log"
                                     % (os.path.basename(self.cmd[0]), self.p.returncode))
                return text.rstrip("\n")

    def expect(self, prefix, timeout=120):
        text = self.line(timeout)
        if not text.startswith(prefix):
            raise BenchError("%s: expected %r, got %r" % (os.path.basename(self.cmd[0]),
                                                          prefix, text[:200]))
        return text[len(prefix):].strip()

    def send(self, text="go"):
        self.p.stdin.write(text + "\n")
        self.p.stdin.flush()

    def finish(self, timeout=60):
        try:
            self.p.stdin.close()
        except BrokenPipeError:
            pass
        self.p.wait(timeout=timeout)
        if self.p in PROCS:
            PROCS.remove(self.p)


# ---- PostgreSQL -------------------------------------------------------------

class Cluster:
    def __init__(self, spec, name):
        self.sockdir, port = spec.rsplit(":", 1)
        self.port = int(port)
        self.name = name

    def psql_cmd(self):
        return ["psql", "-X", "-q", "-At", "-v", "ON_ERROR_STOP=1", "-h", self.sockdir,
                "-p", str(self.port), "-U", "postgres", "-d", "postgres"]

    def query(self, sql, timeout=300):
        return run(self.psql_cmd() + ["-c", sql], timeout=timeout).strip()

    def status(self):
        return json.loads(self.query("SELECT row_to_json(s) FROM zk_status() s"))

    def worker_pid(self):
        out = self.query("SELECT pid FROM pg_stat_activity WHERE backend_type = 'zklock worker'")
        return int(out) if out else None


class Session:
    """An open psql session: statements in, result lines out."""
    END = "__zkbench_end__"

    def __init__(self, cluster, log):
        self.p = spawn(cluster.psql_cmd(), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                       stderr=log, text=True, bufsize=1)

    def send(self, sql):
        self.p.stdin.write(sql.rstrip().rstrip(";") + ";\n\\echo " + self.END + "\n")
        self.p.stdin.flush()

    def read(self):
        lines = []
        for text in self.p.stdout:
            text = text.rstrip("\n")
            if text == self.END:
                return "\n".join(lines)
            lines.append(text)
        self.p.wait()
        raise BenchError("psql session ended (status %s); see bench.log" % self.p.returncode)

    def query(self, sql):
        self.send(sql)
        return self.read()

    def backend_pid(self):
        return int(self.query("SELECT pg_backend_pid()"))

    def close(self):
        try:
            self.p.stdin.close()
        except BrokenPipeError:
            pass
        self.p.wait(timeout=60)
        if self.p in PROCS:
            PROCS.remove(self.p)


# ---- ZooKeeper's own counters -----------------------------------------------

class ZooKeeper:
    def __init__(self, connect, pid):
        host, port = connect.split(",")[0].rsplit(":", 1)
        self.addr = (host, int(port))
        self.pid = pid

    def fourlw(self, word):
        with socket.create_connection(self.addr, timeout=5) as s:
            s.sendall(word.encode())
            chunks = []
            while True:
                b = s.recv(65536)
                if not b:
                    break
                chunks.append(b)
        return b"".join(chunks).decode(errors="replace")

    def mntr(self):
        out = {}
        for text in self.fourlw("mntr").splitlines():
            k, _, v = text.partition("\t")
            try:
                out[k] = float(v)
            except ValueError:
                out[k] = v
        return out

    def cons(self):
        """Per session: packets received and sent, and lcxid, the xid of its
        last request (clients number their requests, pings excluded)."""
        out = {}
        for text in self.fourlw("cons").splitlines():
            m = re.search(r"\((.*)\)", text)
            if not m:
                continue
            f = dict(kv.split("=", 1) for kv in m.group(1).split(",") if "=" in kv)
            if "sid" not in f:
                continue
            out[int(f["sid"], 16)] = {"recved": int(f["recved"]), "sent": int(f["sent"]),
                                      "lcxid": int(f.get("lcxid", "0x0"), 16)}
        return out

    def session(self, sid):
        s = self.cons().get(sid)
        if s is None:
            raise BenchError("ZooKeeper session 0x%x not found by cons" % sid)
        return s

    def wait_quiet(self, sid, base, min_new, timeout=90):
        """Wait until the session has sent min_new requests since base and
        then none for half a second: every waiter is queued and watching."""
        last, since = None, time.time()
        end = time.time() + timeout
        while time.time() < end:
            cur = self.session(sid)["lcxid"]
            if cur != last:
                last, since = cur, time.time()
            elif cur - base >= min_new and time.time() - since >= 0.5:
                return
            time.sleep(0.1)
        raise BenchError("session 0x%x did not settle (%d requests, wanted %d)"
                         % (sid, (last or 0) - base, min_new))


# ---- CPU --------------------------------------------------------------------

NCPU = os.cpu_count() or 1
HZ = os.sysconf("SC_CLK_TCK")


def _cpu_total():
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:9]]
    return sum(v), v[3] + v[4]


def _proc_usage(pid):
    """CPU ticks of a process (all its threads) and its threads' context
    switches, or None once it is gone."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        ticks = int(fields[11]) + int(fields[12])
        switches = 0
        for task in os.listdir("/proc/%d/task" % pid):
            with open("/proc/%d/task/%s/status" % (pid, task)) as f:
                for text in f:
                    if "ctxt_switches:" in text:
                        switches += int(text.split()[1])
        return ticks, switches
    except (OSError, IndexError, ValueError):
        return None


class Meter:
    """CPU over a window: cores busy on the whole machine, CPU time of the
    ZooKeeper server, and CPU time and context switches of the processes
    that make up the lock client (a zklock worker and backends, a driver,
    pgbench).  stop() returns sums that add up across rounds; ops (the
    acquisitions in the window) is filled in by the caller."""

    def __init__(self, zk, lock):
        self.zk = zk
        self.lock = [p for p in lock if p]
        self.t0 = _cpu_total()
        self.zk0 = _proc_usage(zk) if zk else None
        self.lock0 = {p: _proc_usage(p) for p in self.lock}

    def stop(self, ops=None):
        total, idle = _cpu_total()
        dt = total - self.t0[0]
        out = {"wall": dt / NCPU / HZ, "busy": (dt - (idle - self.t0[1])) / HZ,
               "zk_ms": None, "lock_ms": None, "lock_cs": None, "ops": ops}
        if self.zk0:
            now = _proc_usage(self.zk)
            if now:
                out["zk_ms"] = (now[0] - self.zk0[0]) * 1000.0 / HZ
        if self.lock and all(self.lock0.values()):
            ms = cs = 0
            for p in self.lock:
                now = _proc_usage(p)
                if now is None:		# exited inside the window: not counted
                    return out
                ms += (now[0] - self.lock0[p][0]) * 1000.0 / HZ
                cs += now[1] - self.lock0[p][1]
            out["lock_ms"], out["lock_cs"] = ms, cs
        return out


def add_usage(parts):
    """Sum the Meter results of several rounds."""
    out = {}
    for k in ("wall", "busy", "zk_ms", "lock_ms", "lock_cs", "ops"):
        vals = [u.get(k) for u in parts]
        out[k] = None if not vals or any(v is None for v in vals) else sum(vals)
    return out


def usage_view(u):
    """Cores busy, and ZooKeeper and lock-client CPU ms and switches per op."""
    if not u or not u.get("wall"):
        return {}
    v = {"busy": u["busy"] / u["wall"]}
    if u.get("ops"):
        if u.get("zk_ms") is not None:
            v["zk"] = u["zk_ms"] / u["ops"]
        if u.get("lock_ms") is not None:
            v["lock"] = u["lock_ms"] / u["ops"]
            v["cs"] = u["lock_cs"] / u["ops"]
    return v


# ---- statistics -------------------------------------------------------------

def pct(values, q):
    s = sorted(values)
    if not s:
        return float("nan")
    return s[max(0, math.ceil(q * len(s)) - 1)]


def median(values):
    return statistics.median(values) if values else float("nan")


def handoff_delays(events):
    """events: [granted, released] of every cycle of every client, one clock.
    The delay of a handoff is the next grant after a release."""
    ev = sorted(events)
    return [ev[i + 1][0] - ev[i][1] for i in range(len(ev) - 1)]


# ---- results ----------------------------------------------------------------

CURATOR = "Curator"


class Results:
    def __init__(self):
        self.rows = []
        self.errors = []

    def add(self, shape, metric, contender, value, unit, target=None, cpu=None, n=None,
            note=None):
        row = {"shape": shape, "metric": metric, "contender": contender, "value": value,
               "unit": unit, "target": target, "cpu": cpu or {}, "n": n, "note": note}
        self.rows.append(row)
        return row

    def error(self, shape, contender, exc):
        msg = "%s %s: %s" % (shape, contender, exc)
        print("  ERROR " + msg, flush=True)
        self.errors.append(msg)

    def curator(self, row):
        for r in self.rows:
            if (r["shape"], r["metric"], r["contender"]) == (row["shape"], row["metric"], CURATOR):
                return r["value"] if isinstance(r["value"], (int, float)) else None
        return None

    def ratio(self, row):
        c = self.curator(row)
        v = row["value"]
        if c is None or not isinstance(v, (int, float)) or c == 0 or math.isnan(v):
            return None
        return v / c

    def met(self, row):
        t = row["target"]
        if t is None:
            return None
        kind, bound = t
        v = row["value"]
        if kind == "ratio<=":
            r = self.ratio(row)
            return None if r is None else r <= bound
        if kind == "ratio>=":
            r = self.ratio(row)
            return None if r is None else r >= bound
        if not isinstance(v, (int, float)) or math.isnan(v):
            return None if kind != "is" else v == bound
        if kind == "<=":
            return v <= bound
        if kind == ">=":
            return v >= bound
        return v == bound

    @staticmethod
    def target_text(t):
        if t is None:
            return ""
        kind, bound = t
        return {"ratio<=": "<= %gx Curator", "ratio>=": ">= %gx Curator",
                "<=": "<= %g", ">=": ">= %g", "is": "%s"}[kind] % (bound,)

    @staticmethod
    def fmt(v, unit):
        if not isinstance(v, (int, float)):
            return str(v)
        if math.isnan(v):
            return "n/a"
        if unit in ("ms",):
            return "%.3f" % v
        if unit in ("/s", "bytes"):
            return "{:,.0f}".format(v)
        if unit in ("s", "MB"):
            return "%.2f" % v
        return "%.2f" % v

    @staticmethod
    def cpu_text(cpu):
        v = usage_view(cpu)
        busy = "%.1f" % v["busy"] if "busy" in v else ""
        per_op = ""
        if "zk" in v or "lock" in v:
            per_op = "%s/%s" % ("%.3f" % v["zk"] if "zk" in v else "-",
                                "%.3f" % v["lock"] if "lock" in v else "-")
        return busy, per_op

    def table(self):
        head = ["shape", "metric", "contender", "value", "unit", "vs Curator", "target",
                "met?", "busy", "cpu ms/op zk/lock"]
        lines, notes = [], []
        for r in self.ordered():
            ratio = self.ratio(r)
            met = self.met(r)
            mark = ""
            if r["note"]:
                notes.append(r["note"])
                mark = " [%d]" % len(notes)
            lines.append([r["shape"], r["metric"], r["contender"] + mark,
                          self.fmt(r["value"], r["unit"]), r["unit"],
                          "" if ratio is None else "%.2fx" % ratio,
                          self.target_text(r["target"]),
                          "" if r["target"] is None else ("n/a" if met is None else
                                                          ("yes" if met else "NO")),
                          *self.cpu_text(r["cpu"])])
        width = [max(len(str(x[i])) for x in lines + [head]) for i in range(len(head))]
        right = {3, 5, 8}
        out = []

        def fmt_line(cells):
            return "  ".join(str(c).rjust(width[i]) if i in right else str(c).ljust(width[i])
                             for i, c in enumerate(cells)).rstrip()

        out.append(fmt_line(head))
        out.append(fmt_line(["-" * w for w in width]))
        prev = None
        for cells in lines:
            if prev is not None and cells[0] != prev:
                out.append("")
            prev = cells[0]
            out.append(fmt_line(cells))
        if notes:
            out.append("")
            for i, n in enumerate(notes, 1):
                out.append("[%d] %s" % (i, n))
        return "\n".join(out)

    def ordered(self):
        """The rows by shape ((f) runs right after (a), while conditions are
        those of (a)); within a shape, in the order they were added."""
        return sorted(self.rows, key=lambda r: r["shape"])

    def write_csv(self, path):
        with open(path, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["shape", "metric", "contender", "value", "unit", "vs_curator", "target",
                        "met", "cpu_cores_busy", "zk_cpu_ms_per_op", "lock_cpu_ms_per_op",
                        "lock_ctxsw_per_op", "samples", "note"])
            for r in self.ordered():
                ratio = self.ratio(r)
                met = self.met(r)
                v = r["value"]
                u = usage_view(r["cpu"])
                w.writerow([r["shape"], r["metric"], r["contender"],
                            ("%.6g" % v) if isinstance(v, float) else v, r["unit"],
                            "" if ratio is None else "%.4f" % ratio,
                            self.target_text(r["target"]),
                            "" if met is None else ("yes" if met else "no"),
                            *("%.4g" % u[k] if k in u else "" for k in ("busy", "zk", "lock", "cs")),
                            "" if r["n"] is None else r["n"], r["note"] or ""])

    def targets_summary(self):
        met = [self.met(r) for r in self.rows if r["target"] is not None]
        return sum(1 for m in met if m), sum(1 for m in met if m is False), \
            sum(1 for m in met if m is None)


# ---- the benchmark ----------------------------------------------------------

class Bench:
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
        # Shape parameters; the smoke run only checks that everything works.
        # (a) runs a_rounds times a_seconds per contender, (b) and (c)
        # loop_rounds times loop_seconds, interleaved (see rounds()).
        if self.smoke:
            self.a_rounds, self.a_seconds, self.a_warmup, self.a_maxn = 1, 0.3, 10, 50
        else:
            self.a_rounds, self.a_seconds, self.a_warmup, self.a_maxn = 3, 1.0, 500, 20000
        self.clients = 16
        self.loop_rounds, self.loop_seconds = 2, 3.0
        self.loop_warmup = 20
        self.waiters = [10, 100]
        self.e_sessions, self.e_locks = 10, 1000
        # (f) runs f_rounds times f_seconds per cluster, for each of its two
        # pairs (short rounds, finely interleaved: the ratio is taken round
        # by round); the second pair with f_held locks held on the large
        # cluster.  A session's first call warms up with a_warmup cycles,
        # the later ones with f_rewarm.
        if self.smoke:
            self.f_rounds, self.f_seconds, self.f_held, self.f_rewarm = 2, 0.1, 500, 5
        else:
            self.f_rounds, self.f_seconds, self.f_held, self.f_rewarm = 10, 0.4, 5000, 20
        self.sessions = {}

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

    # -- shape (a) --

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

    def a_sql(self, kind):
        return self.uncontended_sql(kind, self.main, self.worker, kind, "bench-a",
                                    self.a_seconds, self.a_warmup)

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

    def a_pgbench(self, kind):
        acq, rel = {"zklock": ("zk_lock_acquire('bench-a-pgbench')",
                               "zk_lock_release('bench-a-pgbench')"),
                    "advisory": ("pg_advisory_lock(hashtext('bench-a-pgbench'))",
                                 "pg_advisory_unlock(hashtext('bench-a-pgbench'))")}[kind]
        script = self.pgbench_script("a-%s.sql" % kind, "SELECT %s;\nSELECT %s;\n" % (acq, rel))
        prefix = os.path.join(self.a.work, "pgbench-a-%s" % kind)
        base = os.path.basename(prefix) + "."
        for old in os.listdir(self.a.work):
            if old.startswith(base):
                os.remove(os.path.join(self.a.work, old))
        worker = kind == "zklock"
        if self.smoke:
            _, usage = self.pgbench(script, 1, log_prefix=prefix, transactions=self.a_maxn,
                                    worker=worker)
        else:
            _, usage = self.pgbench(script, 1, seconds=self.a_seconds, log_prefix=prefix,
                                    worker=worker)
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

    def shape_a(self):
        self.say("(a) one client, uncontended acquire + release (%d rounds)" % self.a_rounds)
        notes = {
            "zklock": "zklock: zk_lock_acquire + zk_lock_release timed with clock_timestamp() "
                      "in a PL/pgSQL loop; lock CPU = its backend + the zklock worker",
            "zklock/pgbench": "client side: the two statements of a cycle sent by pgbench "
                              "(-M prepared) over the Unix socket; pgbench's per-transaction log",
            "ZK floor: create+delete": "ZK floor: zkfloor.c on libzookeeper_mt (zklock's own "
                                       "library), synchronous zoo_create + zoo_delete of an "
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
            ("zklock", lambda: self.a_sql("zklock")),
            ("zklock/pgbench", lambda: self.a_pgbench("zklock")),
            (CURATOR, lambda: self.a_driver(self.java + ["a"])),
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
            target = ("ratio<=", 0.6) if name.startswith("zklock") else None
            medians[name] = self.cycle_rows("(a)", "", "%-34s" % name, name, got,
                                            target=target, note=notes.get(name))
        if "zklock" in medians:
            for name, label in (("ZK floor: create+delete", "create+delete"),
                                ("ZK floor: zklock's requests", "zklock's requests")):
                if name in medians:
                    self.res.add("(a)", "zklock median - ZK floor (%s)" % label, "zklock",
                                 medians["zklock"] - medians[name], "ms", target=("<=", 0.15))

    # -- shapes (b) and (c) --

    def loop_sql(self, kind, same):
        lead = 3.0
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

    def loop_pgbench(self, kind, same):
        name = "'bench-c-pgbench'" if same else "'bench-b-pgbench-' || :client_id"
        acq, rel = {"zklock": ("zk_lock_acquire(%s)", "zk_lock_release(%s)"),
                    "advisory": ("pg_advisory_lock(hashtext(%s))",
                                 "pg_advisory_unlock(hashtext(%s))")}[kind]
        script = self.pgbench_script("%s-%s.sql" % ("c" if same else "b", kind),
                                     "SELECT %s;\nSELECT %s;\n" % (acq % name, rel % name))
        tps, usage = self.pgbench(script, self.clients, seconds=self.loop_seconds,
                                  worker=kind == "zklock")
        return {"n": tps * self.loop_seconds, "seconds": self.loop_seconds, "delays": None}, usage

    def loop_driver(self, cmd, same):
        out, usage = self.driver_run(cmd, lambda o: o["n"])
        events = out.get("events")
        return {"n": out["n"], "seconds": out["seconds"],
                "delays": handoff_delays(events) if events is not None else None}, usage

    def shape_loop(self, shape, same):
        self.say("%s %d clients on %s (%d rounds)" % (
            shape, self.clients, "one lock" if same else "%d distinct locks" % self.clients,
            self.loop_rounds))
        mode = "same" if same else "distinct"
        p = [str(self.clients), str(self.loop_seconds), str(self.loop_warmup), mode]
        contenders = [
            ("zklock", lambda: self.loop_sql("zklock", same)),
            ("zklock/pgbench", lambda: self.loop_pgbench("zklock", same)),
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
            "ZK floor: create+delete": "ZK floor: 16 threads sharing one libzookeeper_mt "
                                       "session, each doing synchronous create + delete in its "
                                       "own directory",
            "zklock/pgbench": "client side: pgbench -c 16, two statements per cycle",
        }
        got = self.rounds(shape, contenders, self.loop_rounds)
        for name, _ in contenders:
            if name not in got:
                continue
            parts, usage = got[name]
            n = sum(x["n"] for x in parts)
            rate = n / sum(x["seconds"] for x in parts)
            target = ("ratio>=", 1.5) if name.startswith("zklock") else None
            if not same:
                self.say("  %-34s %8.0f acquisitions/s" % (name, rate))
                self.res.add(shape, "%d clients, %d locks: acquisitions/s"
                             % (self.clients, self.clients), name, rate, "/s", target=target,
                             cpu=usage, n=int(n), note=notes.get(name))
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

    # -- shape (d) --

    def d_rows(self, contender, n, base, queued, end, extra_note=None):
        per_handoff = (end["lcxid"] - queued["lcxid"]) / n
        notify = ((end["sent"] - queued["sent"]) - (end["recved"] - queued["recved"])) / n
        whole = (end["lcxid"] - base["lcxid"]) / (n + 1)
        self.say("  %-34s %5.2f requests/handoff  %5.2f notifications/handoff  "
                 "%5.2f requests/acquisition" % (contender, per_handoff, notify, whole))
        target = ("<=", 3) if contender == "zklock" else None
        self.res.add("(d)", "%d waiters: ZK requests per handoff" % n, contender, per_handoff,
                     "req", target=target, note=extra_note)
        self.res.add("(d)", "%d waiters: watch notifications per handoff" % n, contender,
                     notify, "events")
        self.res.add("(d)", "%d waiters: ZK requests per acquisition, whole cycle" % n,
                     contender, whole, "req")

    def d_zklock(self, n):
        name = "bench-d%d" % n
        sid = int(self.main.status()["session_id"], 16)
        s0 = self.main.status()
        base = self.zk.session(sid)
        holder = Session(self.main, self.log)
        holder.query("SELECT zk_lock_acquire('%s')" % name)
        procs = [spawn(self.main.psql_cmd() + ["-c", "SELECT zkbench.wait_once('%s')" % name],
                       stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=self.log,
                       text=True) for _ in range(n)]
        self.zk.wait_quiet(sid, base["lcxid"], 3 * n)
        s1 = self.main.status()
        queued = self.zk.session(sid)
        holder.query("SELECT zk_lock_release('%s')" % name)
        for p in procs:
            p.communicate(timeout=120)
            PROCS.remove(p)
            if p.returncode != 0:
                raise BenchError("a waiter failed (status %d); see bench.log" % p.returncode)
        holder.close()
        # Releases do not wait: the counters are read once every node is gone.
        end_by = time.time() + 30
        while self.main.status()["slots_used"] > 0 and time.time() < end_by:
            time.sleep(0.02)
        s2 = self.main.status()
        end = self.zk.session(sid)
        handoffs = s2.get("handoffs", 0) - s1.get("handoffs", 0)
        note = None
        if handoffs:
            note = ("zklock's own counters (zk_status) over the handoffs: %d handoffs, "
                    "%.2f zk_requests, %.2f release_requests, %.2f handoff_requests, "
                    "%.2f watch_events per handoff" % (
                        handoffs,
                        (s2["zk_requests"] - s1["zk_requests"]) / handoffs,
                        (s2.get("release_requests", 0) - s1.get("release_requests", 0)) / handoffs,
                        (s2.get("handoff_requests", 0) - s1.get("handoff_requests", 0)) / handoffs,
                        (s2["watch_events"] - s1["watch_events"]) / handoffs))
            if n == self.waiters[-1]:
                note += "; whole cycle: %.2f zk_requests per acquisition" % (
                    (s2["zk_requests"] - s0["zk_requests"]) / max(1, s2["acquired"] - s0["acquired"]))
        self.d_rows("zklock", n, base, queued, end, extra_note=note)

    def d_driver(self, cmd, contender, n):
        d = Driver(cmd + ["waiters", str(n)], self.log)
        sid = int(d.expect("session", timeout=120), 16)
        time.sleep(0.3)
        base = self.zk.session(sid)
        d.send()
        d.expect("started", timeout=120)
        self.zk.wait_quiet(sid, base["lcxid"], 3 * n)
        queued = self.zk.session(sid)
        d.send()
        d.expect("done", timeout=120)
        end = self.zk.session(sid)
        d.send()
        d.finish()
        self.d_rows(contender, n, base, queued, end)

    def shape_d(self):
        for n in self.waiters:
            self.say("(d) %d waiters on one lock" % n)
            self.attempt("(d)", "zklock", lambda: self.d_zklock(n))
            self.attempt("(d)", CURATOR, lambda: self.d_driver(self.java, CURATOR, n))
            self.attempt("(d)", "kazoo", lambda: self.d_driver(self.kazoo, "kazoo", n))

    # -- shape (e) --

    def wait_slots(self, cluster, want, timeout=120):
        end = time.time() + timeout
        while time.time() < end:
            used = cluster.status()["slots_used"]
            if used == want:
                return
            time.sleep(0.02)
        raise BenchError("zklock slots in use stayed at %d, expected %d" % (used, want))

    def shape_e(self):
        if self.e is None:
            return
        self.say("(e) 10,000 distinct locks held at once by one cluster")
        c = self.e
        shm = json.loads(c.query(
            "SELECT json_build_object('size', sum(size), 'allocated', sum(allocated_size), "
            "'names', string_agg(name, ',')) FROM pg_shmem_allocations WHERE name LIKE 'zklock%'"))
        st = c.status()
        slots = st["slots_total"]
        changed = c.query(
            "SELECT string_agg(name || '=' || setting, ', ' ORDER BY name) FROM pg_settings "
            "WHERE name LIKE 'zklock.%' AND source NOT IN ('default', 'override') "
            "AND name <> 'zklock.hosts'")
        worker = c.worker_pid()
        self.say("  zklock shared memory: %s bytes for %d slots (%s)"
                 % ("{:,}".format(int(shm["allocated"])), slots, shm["names"]))
        self.res.add("(e)", "zklock shared memory, %d slots" % slots, "zklock",
                     shm["allocated"] / 1048576.0, "MB",
                     note="pg_shmem_allocations rows %s (allocated_size); settings changed "
                          "from their defaults besides zklock.hosts: %s"
                          % (shm["names"], changed or "none"))
        self.res.add("(e)", "shared memory per slot", "zklock", shm["allocated"] / slots, "bytes")

        total = self.e_sessions * self.e_locks
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
        finally:
            for s in sessions:
                s.close()
        self.res.add("(e)", "works, only zklock.max_locks changed", "zklock", works, "",
                     target=("is", "yes"))

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

    # -- shape (f) --

    # Settings that name a cluster's own files and ports, not its behaviour.
    OWN_SETTINGS = ("port", "cluster_name", "unix_socket_directories", "data_directory",
                    "config_file", "hba_file", "ident_file", "zklock.hosts")

    def settings_diff(self, a, b):
        sql = ("SELECT json_object_agg(name, setting) FROM pg_settings WHERE name NOT IN (%s)"
               % ", ".join("'%s'" % n for n in self.OWN_SETTINGS))
        sa, sb = json.loads(a.query(sql)), json.loads(b.query(sql))
        return ", ".join("%s %s / %s" % (k, sa.get(k), sb.get(k))
                         for k in sorted(set(sa) | set(sb)) if sa.get(k) != sb.get(k))

    def shape_f(self):
        """(a)'s uncontended cycle for zklock, on main (zklock.max_locks at
        its default, 1024) and on a cluster with zklock.max_locks = 100000,
        interleaved: the cycle must not cost more with more slots.  Twice:
        with nothing else held, then with f_held locks of other names held
        by a background session of the large cluster."""
        if self.f is None:
            if self.a.f_skip:
                self.say("(f) not run: %s" % self.a.f_skip)
                self.res.add("(f)", "acquire+release, zklock.max_locks 100000 / default",
                             "zklock", "not run", "", note="shape (f) not run: " + self.a.f_skip)
            return
        small, big = self.main, self.f
        n_small = small.status()["slots_total"]
        n_big = big.status()["slots_total"]
        shm = float(big.query("SELECT sum(allocated_size) FROM pg_shmem_allocations "
                              "WHERE name LIKE 'zklock%'"))
        differ = self.settings_diff(small, big)
        w_small, w_big = self.worker, big.worker_pid()
        name_s, name_b = "zklock, max_locks=%d" % n_small, "zklock, max_locks=%d" % n_big
        held_text = "{:,}".format(self.f_held)
        self.say("(f) uncontended acquire + release, zklock.max_locks = %d beside %d "
                 "(%d rounds per cluster, twice)" % (n_big, n_small, self.f_rounds))
        self.say("  cluster f: %s bytes of zklock shared memory for %d slots; settings that "
                 "differ from main's: %s" % ("{:,}".format(int(shm)), n_big, differ or "none"))
        def measure(cluster, worker, n):
            key = ("f", n)
            warmup = self.f_rewarm if key in self.sessions else self.a_warmup
            return self.uncontended_sql(key, cluster, worker, "zklock", "bench-f-%d" % n,
                                        self.f_seconds, warmup)

        contenders = [(name_s, lambda: measure(small, w_small, n_small)),
                      (name_b, lambda: measure(big, w_big, n_big))]
        first_note = ("(f): the loop of (a) (zkbench.uncontended: one session, one lock, "
                      "timed in the backend) on cluster main, zklock.max_locks = %d (the "
                      "default), and on cluster f, zklock.max_locks = %d (%.0f MB of zklock "
                      "shared memory), same ZooKeeper; %d interleaved rounds of %g s per "
                      "cluster (%d warm-up cycles in a session's first round, %d in the "
                      "others); the ratio is the median over the rounds of the round's median "
                      "at %d over the same round's at %d; settings that differ (main / f): "
                      "%s; lock CPU = the session's backend + that cluster's zklock worker"
                      % (n_small, n_big, shm / 1048576.0, self.f_rounds, self.f_seconds,
                         self.a_warmup, self.f_rewarm, n_big, n_small, differ or "none"))
        holder = None
        try:
            got = self.rounds("(f)", contenders, self.f_rounds)
            self.f_rows("nothing else held", got, name_s, name_b, n_small, n_big, first_note)

            # Many slots in use: what made a slot claim that scans the slots slow.
            holder = Session(big, self.log)
            holder.query("SET zklock.max_locks_per_backend = %d" % self.f_held)
            t0 = time.time()
            part = json.loads(holder.query("SELECT zkbench.acquire_many('bench-f-held-', %d)"
                                           % self.f_held))
            took = time.time() - t0
            used_b, used_s = big.status()["slots_used"], small.status()["slots_used"]
            self.say("  a session of cluster f took %d locks in %.2f s (first tenth %.0f ms, "
                     "last tenth %.0f ms); slots_used %d of %d"
                     % (self.f_held, took, part["first_tenth_ms"], part["last_tenth_ms"],
                        used_b, n_big))
            if used_b < self.f_held:
                raise BenchError("cluster f shows %d slots used, expected %d"
                                 % (used_b, self.f_held))
            held_note = ("(f), second pair: a background session of cluster f holds %s locks "
                         "of other names (SET zklock.max_locks_per_backend = %d; it took them "
                         "in %.1f s, the first tenth in %.0f ms, the last tenth in %.0f ms; "
                         "slots_used then %d of %d) while the pair runs again; cluster main "
                         "holds none (slots_used %d) and is the baseline again, in the same "
                         "rounds"
                         % (held_text, self.f_held, took, part["first_tenth_ms"],
                            part["last_tenth_ms"], used_b, n_big, used_s))
            got = self.rounds("(f)", contenders, self.f_rounds)
            self.f_rows("%s held at %d" % (held_text, n_big), got, name_s, name_b, n_small,
                        n_big, held_note)
            t0 = time.time()
            holder.query("SELECT zkbench.release_all()")
            holder.close()
            holder = None
            self.wait_slots(big, 0)
            self.say("  released the %s locks: every node deleted after %.2f s"
                     % (held_text, time.time() - t0))
        finally:
            self.close_sessions()
            if holder is not None:
                holder.close()

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

    def f_rows(self, label, got, name_s, name_b, n_small, n_big, note):
        medians = {}
        for name in (name_s, name_b):
            if name not in got:
                continue
            medians[name] = self.cycle_rows("(f)", label + ": ", "%-22s %-26s" % (label + ":", name),
                                            name, got)
        if name_s in medians and name_b in medians:
            # Round by round: load that comes and goes falls on both sides.
            per_round = [median(b) / median(a) for a, b in zip(got[name_s][0], got[name_b][0])
                         if a and b]
            ratio = median(per_round)
            self.say("  %-22s median at max_locks=%d / at %d: %.3f, round by round (%s; "
                     "overall medians: %.3f); target <= 1.1"
                     % (label + ":", n_big, n_small, ratio,
                        " ".join("%.2f" % r for r in per_round), medians[name_b] / medians[name_s]))
            self.res.add("(f)", "%s: median, max_locks %d / %d" % (label, n_big, n_small),
                         "zklock", ratio, "x", target=("<=", 1.1), n=len(per_round),
                         note="%s; the ratio round by round: %s (the overall medians' ratio: "
                              "%.3f)" % (note, " ".join("%.2f" % r for r in per_round),
                                         medians[name_b] / medians[name_s]))

    # -- everything --

    def environment(self):
        m = self.zk.mntr()
        return ("ZooKeeper %s, %s; forceSync=no (the test servers' setting: no fsync per "
                "write; mntr zk_cnt_fsynctime=%d); %d CPUs; load average before the run %s"
                % (str(m.get("zk_version", "?")).split("-")[0], m.get("zk_server_state", "?"),
                   int(m.get("zk_cnt_fsynctime", 0)), NCPU,
                   " ".join(open("/proc/loadavg").read().split()[:3])))

    def warm_up(self):
        """A fresh ZooKeeper JVM runs its request path interpreted at first:
        whoever came first would pay for its JIT.  Unmeasured load first."""
        self.say("warming up ZooKeeper (unmeasured)")
        for cmd in (["pipelined", "3", "300", "1000000"], ["threads", "2", "20", "16"]):
            self.driver_run(self.floor + cmd, lambda o: o["n"])
        self.main.query("SELECT count(*) FROM unnest(zkbench.uncontended('zklock', 'bench-a', "
                        "1, 300, 1000000))")

    def run(self):
        env = self.environment()
        self.say(env)
        started = time.time()
        if not self.smoke:
            self.warm_up()
        self.shape_a()
        self.attempt("(f)", "zklock", self.shape_f)
        if not self.smoke:
            self.shape_loop("(b)", same=False)
            self.shape_loop("(c)", same=True)
            self.shape_d()
            self.attempt("(e)", "zklock", self.shape_e)
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
        good, bad, unknown = self.res.targets_summary()
        self.say("targets: %d met, %d missed%s; measurements took %.0f s"
                 % (good, bad, ", %d not measured" % unknown if unknown else "", elapsed))
        csv_path = os.path.join(self.a.out, "results.csv")
        self.res.write_csv(csv_path)
        self.chart_data()
        self.say("CSV: %s" % csv_path)
        if self.res.errors:
            self.say("FAILED measurements:")
            for e in self.res.errors:
                self.say("  " + e)
            return 1
        return 0

    def chart_data(self):
        """One data file per chart panel, for bench/chart.gp."""
        panels = {
            "a": ("(a)", "acquire+release, median"),
            "b": ("(b)", "%d clients, %d locks: acquisitions/s" % (self.clients, self.clients)),
            "c": ("(c)", "%d clients, 1 lock: handoffs/s" % self.clients),
            "d": ("(d)", "%d waiters: ZK requests per handoff" % self.waiters[-1]),
        }
        for key, (shape, metric) in panels.items():
            with open(os.path.join(self.a.work, "chart-%s.dat" % key), "w") as f:
                for r in self.res.rows:
                    if (r["shape"], r["metric"]) == (shape, metric) and \
                            isinstance(r["value"], (int, float)) and not math.isnan(r["value"]):
                        f.write('"%s" %.6g\n' % (r["contender"], r["value"]))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--zk", required=True, help="ZooKeeper connect string")
    ap.add_argument("--zk-pid", type=int, help="ZooKeeper server pid, for its CPU use")
    ap.add_argument("--main", required=True, help="SOCKETDIR:PORT of the main cluster")
    ap.add_argument("--e", help="SOCKETDIR:PORT of the cluster for shape (e)")
    ap.add_argument("--f", help="SOCKETDIR:PORT of the zklock.max_locks = 100000 cluster "
                                "for shape (f)")
    ap.add_argument("--f-skip", help="why shape (f) is not run (no --f)")
    ap.add_argument("--java-cp", required=True)
    ap.add_argument("--kazoo", required=True)
    ap.add_argument("--floor", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--smoke", action="store_true")
    a = ap.parse_args()

    def on_signal(signum, frame):
        sys.exit(128 + signum)

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGHUP, on_signal)
    try:
        return Bench(a).run()
    except BenchError as e:
        print("bench.py: %s" % e, file=sys.stderr)
        return 1
    finally:
        stop_spawned()


if __name__ == "__main__":
    sys.exit(main())
