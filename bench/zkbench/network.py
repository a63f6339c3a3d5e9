"""zkbench.network: shape (g), the same lock over a network.  zkrelay.c
relays every client's connection to ZooKeeper through loopback with a fixed
delay each way (0.25 ms and 1 ms): zklock (through pgbench, its worker's
session moved to the relay by a reload of zklock.hosts), Curator and kazoo
then pay a real round trip for each request they wait for.  Measured: the
uncontended acquire + release, and the acquisitions per second of 16
clients on 16 distinct locks.  Here zklock's one round trip per acquire
(create and listing sent together) against Curator's three shows.
pgbench runs over the Unix socket and over TCP (-j 2), as in (a).  It
measures with (a)'s and (b)'s means (a_pgbench, a_driver, loop_pgbench,
loop_driver, from the sibling shapes Bench puts together).
"""

import time

from .harness import TCP, Harness
from .processes import BenchError, Driver
from .results import CURATOR


class NetworkShape(Harness):
    def relay(self, delay_us):
        """Start a relay to ZooKeeper with delay_us each way; returns its
        connect string (the process is stopped, by pid, with the others)."""
        zk_port = self.a.zk.split(",")[0].rsplit(":", 1)[1]
        d = Driver([self.a.relay, zk_port, str(delay_us)], self.log)
        return "127.0.0.1:%d" % int(d.line(timeout=10))

    def point_main_at(self, connect):
        """Move the main cluster's zklock session to connect (a reload of
        zklock.hosts: the worker restarts and reattaches to its session)."""
        self.main.query("ALTER SYSTEM SET zklock.hosts = '%s'" % connect)
        self.main.query("SELECT pg_reload_conf()")
        end = time.time() + 60
        while time.time() < end:
            s = self.main.status()
            if s["state"] == "connected" and s["server"] == connect:
                self.worker = self.main.worker_pid()
                return
            time.sleep(0.1)
        raise BenchError("the main cluster's zklock worker did not move to %s" % connect)

    def shape_g(self):
        direct = self.a.zk
        try:
            for delay_us in self.g_delays_us:
                self.g_one_delay(delay_us)
        finally:
            self.point_main_at(direct)

    def g_one_delay(self, delay_us):
        connect = self.relay(delay_us)
        shape = "(g) %g ms" % (delay_us / 1000.0)
        self.say("%s one-way delay through zkrelay: uncontended cycle and %d clients on %d "
                 "distinct locks (%d rounds)" % (shape, self.clients, self.clients,
                                                 self.g_rounds))
        self.point_main_at(connect)
        java = self.java[:-1] + [connect]
        kazoo = self.kazoo[:-1] + [connect]
        p = [str(self.clients), str(self.loop_seconds), str(self.loop_warmup), "distinct"]
        at_1ms = delay_us >= 1000
        cycle = [
            ("zklock/pgbench", lambda: self.a_pgbench("zklock")),
            (TCP, lambda: self.a_pgbench("zklock", tcp=True)),
            (CURATOR, lambda: self.a_driver(java + ["a"])),
            ("kazoo", lambda: self.a_driver(kazoo + ["a"])),
        ]
        got = self.rounds(shape, cycle, self.g_rounds)
        for name, _ in cycle:
            if name in got:
                target = ("ratio<=", 0.4) if at_1ms and name.startswith("zklock") else None
                self.cycle_rows(shape, "", "%-34s" % name, name, got, target=target)
        loops = [
            ("zklock/pgbench", lambda: self.loop_pgbench("zklock", False)),
            (TCP, lambda: self.loop_pgbench("zklock", False, tcp=True)),
            (CURATOR, lambda: self.loop_driver(java + ["loop"] + p, False)),
            ("kazoo", lambda: self.loop_driver(kazoo + ["loop"] + p, False)),
        ]
        got = self.rounds(shape, loops, self.g_rounds)
        for name, _ in loops:
            if name not in got:
                continue
            n, rate, usage = self.loop_rate(got, name)
            target = ("ratio>=", 2) if at_1ms and name.startswith("zklock") else None
            self.distinct_rate_row(shape, name, rate, n, usage, target)
