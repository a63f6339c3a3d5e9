"""zkbench.zookeeper: ZooKeeper's own counters, read with its four-letter
words: mntr (the server's version, state, latencies, packets received,
fsyncs), srvr (the last zxid) and cons (per session: packets in and out,
and lcxid, which numbers its requests).  Shape (d) counts a session's
requests and watch notifications with them; every metered window counts
the requests, transactions and fsyncs of the server (or of an ensemble's
servers) with counters(); jvm() reads a server JVM's JIT and GC time with
the JDK's jstat.
"""

import re
import socket
import subprocess
import time

from .processes import BenchError


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

    def counters(self):
        """What the server has done so far: packets received (the clients'
        requests; a four-letter word counts as one, pings are rare under
        load), fsyncs of its transaction log (mntr zk_cnt_fsynctime: a
        count, not a time) and their summed time (zk_sum_fsynctime, ms),
        and the last zxid (srvr), whose low 32 bits count the transactions
        of the current epoch.  None when the server does not answer."""
        try:
            m = self.mntr()
            z = re.search(r"Zxid: 0x([0-9a-f]+)", self.fourlw("srvr"))
        except OSError:
            return None
        try:
            return {"req": int(m["zk_packets_received"]), "fsync": int(m["zk_cnt_fsynctime"]),
                    "fsync_ms": float(m.get("zk_sum_fsynctime", 0)),
                    "zxid": int(z.group(1), 16) & 0xffffffff if z else None,
                    "znodes": int(m.get("zk_znode_count", 0))}
        except (KeyError, ValueError):
            return None

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



class Servers:
    """The servers of an ensemble (or the one standalone server), counted
    together: requests and fsyncs summed over the servers (every server
    fsyncs each transaction), transactions once (the highest zxid)."""

    def __init__(self, connect, pids=None):
        self.servers = [ZooKeeper(hp, None) for hp in connect.split(",")]
        self.pids = [p for p in (pids or []) if p]

    def counters(self):
        got = [z.counters() for z in self.servers]
        if not got or any(g is None for g in got):
            return None
        zx = [g["zxid"] for g in got if g["zxid"] is not None]
        return {"req": sum(g["req"] for g in got), "fsync": sum(g["fsync"] for g in got),
                "fsync_ms": sum(g["fsync_ms"] for g in got),
                "zxid": max(zx) if zx else None,
                "znodes": max(g["znodes"] for g in got)}

    def jvm(self):
        """JIT (compilation) and GC milliseconds of the servers' JVMs so far,
        summed, from jstat; None when jstat cannot read them."""
        jit = gc = 0.0
        for pid in self.pids:
            got = jvm_times(pid)
            if got is None:
                return None
            jit += got[0]
            gc += got[1]
        return (jit, gc) if self.pids else None


def jvm_times(pid):
    """(compilation ms, GC ms) of a HotSpot JVM so far, from jstat -compiler
    (its Time column) and jstat -gcutil (GCT), or None."""
    try:
        comp = subprocess.run(["jstat", "-compiler", str(pid)], capture_output=True, text=True,
                              timeout=20).stdout.split("\n")
        gc = subprocess.run(["jstat", "-gcutil", str(pid)], capture_output=True, text=True,
                            timeout=20).stdout.split("\n")
        ch, cv = comp[0].split(), comp[1].split()
        gh, gv = gc[0].split(), gc[1].split()
        return (float(cv[ch.index("Time")]) * 1000.0, float(gv[gh.index("GCT")]) * 1000.0)
    except (OSError, subprocess.SubprocessError, IndexError, ValueError):
        return None
