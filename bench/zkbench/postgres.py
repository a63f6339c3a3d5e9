"""zkbench.postgres: the PostgreSQL side.  Cluster is one of the clusters
run.sh started (one-off queries by psql, zk_status(), the zklock worker's
pid); Session is an open psql session that statements go into and result
lines come out of; Acquisitions counts zklock's acquisitions on clusters
through such sessions.
"""

import json
import subprocess

from .processes import PROCS, BenchError, run, spawn


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


class Acquisitions:
    """zklock's acquisitions so far on clusters, summed (zk_status()'s
    acquired), read through a psql session per cluster opened beforehand:
    a read takes a round trip, not a psql start, so that reads just before
    a meter starts and just before it stops bracket its window closely.
    The difference of two reads is the cycles done between them: pgbench's
    tps is the mean of its whole run, start-up included, and would misstate
    a window's cycles by several per cent."""

    def __init__(self, clusters, log):
        self.sessions = []
        try:
            for c in clusters:
                self.sessions.append(Session(c, log))
        except BaseException:
            self.close()
            raise

    def count(self):
        return sum(int(s.query("SELECT acquired FROM zk_status()")) for s in self.sessions)

    def close(self):
        """Close every session, whatever one of them does: an error here
        must not hide the one that brought the caller to close them."""
        sessions, self.sessions = self.sessions, []
        for s in sessions:
            try:
                s.close()
            except Exception:  # a session that will not end is killed
                s.p.kill()
                s.p.wait()
                if s.p in PROCS:
                    PROCS.remove(s.p)
