"""zkbench.zookeeper: ZooKeeper's own counters, read with its four-letter
words: mntr (the server's version, state and latencies) and cons (per
session: packets in and out, and lcxid, which numbers its requests).
Shape (d) counts a session's requests and watch notifications with them.
"""

import re
import socket
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

