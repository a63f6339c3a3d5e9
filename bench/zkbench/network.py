"""zkbench.network: shape (g), the same lock over a network, as two shapes
per delay (0.25 ms and 1 ms each way), measured in the same rounds.

  (g) D ms, ZK remote      the lock taken next to PostgreSQL, ZooKeeper
                           remote: zkrelay.c relays every client's
                           connection to ZooKeeper with the delay (zklock's
                           worker moved to the relay by a reload of
                           zklock.hosts; Curator, in one warm JVM, and kazoo
                           connect through it); pgbench reaches PostgreSQL
                           on loopback.
  (g) D ms, app+ZK remote  the application remote too: pgbench reaches
                           PostgreSQL through a second relay with the same
                           delay, in the transaction-scope pattern (BEGIN;
                           SELECT zk_lock_acquire_xact(...); COMMIT).
                           Its cycle rows compare with Curator's lock
                           alone (the same measurements as ZK remote's).
                           Beside them the same transaction without the
                           lock (BEGIN; COMMIT), by each client; the
                           transaction with its lock against Curator's
                           lock taken around the same transaction
                           (acquire; BEGIN; COMMIT over JDBC through the
                           same relay; release, in the same warm JVM); and
                           what the lock adds to the transaction, each
                           side's transaction less its own client's bare
                           one.

Measured: the uncontended cycle, and the cycles per second of 16 clients
on 16 distinct locks.  It measures with (a)'s and (b)'s means (a_pgbench,
a_jvm, a_driver, loop_pgbench, loop_jvm, loop_driver, from the sibling
shapes Bench puts together).
"""

import time

from .harness import TCP, Harness
from .processes import BenchError, Driver
from .results import CURATOR
from .stats import median

# zklock with the application remote too (both legs delayed), in the
# transaction-scope pattern.
TCP_APP = "zklock/pgbench TCP, app remote (xact)"
# The same transaction without the lock (BEGIN; COMMIT), through the same
# relay: what the application pays for its transaction anyway.
BARE_APP = "BEGIN; COMMIT alone, app remote"
# What the lock adds to the application's transaction: each side's
# transaction with its lock less the same transaction without it, sent by
# the same client (pgbench for zklock, JDBC for Curator).
LOCK_SHARE = "what the lock adds to a transaction, median"
# The application's transaction with the lock: zklock's against Curator's
# lock taken around the same transaction.
WITH_LOCK = "the transaction with its lock, median"
# Curator's user's cycle with the application remote: the lock taken
# around the same transaction, over JDBC through the same relay.
CURATOR_APP = "Curator + BEGIN; COMMIT, app remote"
# The same transaction without the lock, over the same JDBC connection: what
# Curator's client pays for it anyway.
BARE_JDBC = "BEGIN; COMMIT alone over JDBC, app remote"
# The bare transaction's own metric: it is no lock's cycle.
BARE = "transaction without a lock, median"
LOCK_SHARE_ZKLOCK = "zklock (xact less BEGIN; COMMIT)"


class NetworkShape(Harness):
    def relay(self, port, delay_us):
        """Start a relay to 127.0.0.1:port (ZooKeeper, or PostgreSQL) with
        delay_us each way; returns (its Driver, its connect string); the
        caller stops it, by pid (and so would the exit's clean-up)."""
        d = Driver([self.a.relay, str(port), str(delay_us)], self.log)
        return d, "127.0.0.1:%d" % int(d.line(timeout=10))

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

    @staticmethod
    def g_shapes(delay_us):
        """The two shapes of a delay: the lock taken next to PostgreSQL with
        ZooKeeper remote, and the application remote too."""
        ms = delay_us / 1000.0
        return "(g) %g ms, ZK remote" % ms, "(g) %g ms, app+ZK remote" % ms

    def g_one_delay(self, delay_us):
        zk_port = self.a.zk.split(",")[0].rsplit(":", 1)[1]
        zk_relay, connect = self.relay(zk_port, delay_us)
        pg_relay, pg_connect = self.relay(self.main.port, delay_us)
        pg_port = int(pg_connect.rsplit(":", 1)[1])
        shape, app_shape = self.g_shapes(delay_us)
        self.say("%s one-way delay through zkrelay between every client and ZooKeeper; %s the "
                 "same delay between pgbench and PostgreSQL too: uncontended cycle and %d "
                 "clients on %d distinct locks (%d rounds)"
                 % (shape, app_shape, self.clients, self.clients, self.g_rounds))
        try:
            self.point_main_at(connect)
            java = self.java[:-1] + [connect]
            kazoo = self.kazoo[:-1] + [connect]
            p = [self.clients, self.loop_seconds, self.loop_warmup, "distinct"]
            # Curator's transaction needs PostgreSQL's JDBC driver (Debian's
            # libpostgresql-jdbc-java, in run.sh's class path); without it,
            # or when its warm-up fails, Curator's side of the app-remote
            # comparisons is modelled.  Each client keeps its own defaults
            # (SSL: the server has none); the timeouts make a stalled
            # connection fail its command, not the shape.
            jdbc_url = None
            self.jdbc_missing = "no JDBC driver in the class path"
            if any(j.endswith("/postgresql.jar") for j in self.a.java_cp.split(":")):
                jdbc_url = ("jdbc:postgresql://127.0.0.1:%d/postgres?user=postgres"
                            "&connectTimeout=15&socketTimeout=60" % pg_port)
            jvm = self.jvm_open(java, ["loop"] + p, "%s's loop" % shape)
            try:
                self.jvm_warm(jvm, ["a", self.a_seconds, self.f_rewarm, self.a_maxn],
                              "%s's cycle" % shape)
                if jdbc_url:
                    try:
                        for bare in ("", "bare"):
                            self.jvm_warm(jvm, ["a", self.a_seconds, self.f_rewarm, self.a_maxn,
                                                jdbc_url] + ([bare] if bare else []),
                                          "%s's transaction%s" % (app_shape, " with the lock"
                                                                  if not bare else " alone"))
                    except Exception as e:  # Curator's lock-only rows go on
                        self.jdbc_missing = "Curator's JDBC warm-up failed: %s" % e
                        jdbc_url = None
                if not jdbc_url:
                    self.say("  %s: Curator's side of %s is modelled"
                             % (self.jdbc_missing, app_shape))
                self.g_rounds_of(delay_us, shape, app_shape, jvm, kazoo, p, pg_port, jdbc_url)
            finally:
                jvm.close()
        finally:
            for d in (zk_relay, pg_relay):
                d.p.terminate()
                d.finish()

    def lock_share_rows(self, app_shape, got):
        """The application remote: its transaction without the lock, and two
        comparisons with Curator, whose user pays for the same transaction
        with the lock taken around it.  In each round: the median of each
        side's transaction with its lock (zklock's by pgbench, Curator's
        lock around the transaction over JDBC), and, for what the lock adds,
        each less the median of the same transaction without the lock sent
        by the same client (pgbench; JDBC), so that no difference between
        the two clients is charged to a lock.  Each value is the median of
        its rounds' figures, which give the spread.  Where Curator's
        transaction could not run (self.jdbc_missing says why), Curator's
        side is modelled from its cycle alone, plus pgbench's bare
        transaction, and its rows say so."""
        if TCP_APP not in got or BARE_APP not in got:
            return
        xact = [median(p) for p in got[TCP_APP][0]]
        bare = [median(p) for p in got[BARE_APP][0]]
        assert len(xact) == len(bare)
        self.say("  %-34s median %.3f ms  (the median of its rounds' medians)"
                 % (BARE_APP, median(bare)))
        self.res.add(app_shape, BARE, BARE_APP, median(bare), "ms", rounds=bare,
                     note="%s: the application's transaction without the lock (BEGIN; COMMIT), "
                          "by pgbench -M prepared -j 2 through the same relay: what the "
                          "application pays for its transaction with or without a lock; the "
                          "median of its rounds' medians" % app_shape)
        share = [x - b for x, b in zip(xact, bare)]
        self.say("  %-34s %.3f ms  (rounds' medians less the bare transaction's)"
                 % (LOCK_SHARE_ZKLOCK, median(share)))
        self.res.add(app_shape, LOCK_SHARE, LOCK_SHARE_ZKLOCK, median(share), "ms", rounds=share,
                     note="%s: in each round, the median of zklock's app+ZK remote transaction "
                          "(BEGIN; SELECT zk_lock_acquire_xact(...); COMMIT) less the median of "
                          "%s (both by pgbench); the median of the rounds' differences"
                          % (LOCK_SHARE, BARE_APP))
        self.res.add(app_shape, WITH_LOCK, TCP_APP, median(xact), "ms", rounds=xact,
                     note="%s: the median of the rounds' medians of zklock's app+ZK remote "
                          "transaction" % WITH_LOCK)
        if CURATOR_APP in got and BARE_JDBC in got:
            whole = [median(p) for p in got[CURATOR_APP][0]]
            bare_j = [median(p) for p in got[BARE_JDBC][0]]
            assert len(whole) == len(bare_j)
            cur = [w - b for w, b in zip(whole, bare_j)]
            driver = "PostgreSQL JDBC driver %s" % (got[CURATOR_APP].usages[0].get("jdbc_driver")
                                                    or "of unknown version")
            self.say("  %-34s median %.3f ms, %s median %.3f ms  (medians of the rounds' medians)"
                     % (CURATOR_APP, median(whole), BARE_JDBC, median(bare_j)))
            self.res.add(app_shape, BARE, BARE_JDBC, median(bare_j), "ms", rounds=bare_j,
                         note="%s: the same transaction without the lock (BEGIN; COMMIT) over "
                              "Curator's JDBC connection (%s; autocommit on, each statement one "
                              "round trip, prepared on the server from its fifth use), through "
                              "the same relay, in Curator's warm JVM; the median of its rounds' "
                              "medians" % (app_shape, driver))
            self.res.add(app_shape, LOCK_SHARE, CURATOR, median(cur), "ms", rounds=cur,
                         note="%s: measured: in each round, the median of %s (Curator's lock "
                              "taken around the same transaction: acquire; BEGIN; COMMIT over "
                              "JDBC through the same relay; release) less the median of %s; the "
                              "median of the rounds' differences" % (LOCK_SHARE, CURATOR_APP,
                                                                     BARE_JDBC))
            self.res.add(app_shape, WITH_LOCK, CURATOR, median(whole), "ms", rounds=whole,
                         note="%s: measured: the median of the rounds' medians of %s (acquire; "
                              "BEGIN; COMMIT over JDBC through the same relay; release, in the "
                              "same warm JVM)" % (WITH_LOCK, CURATOR_APP))
            return
        if CURATOR not in got:
            return
        why = self.jdbc_missing if CURATOR_APP not in got else "Curator's transaction failed"
        cur = [median(p) for p in got[CURATOR][0]]
        self.res.add(app_shape, LOCK_SHARE, CURATOR, median(cur), "ms", rounds=cur,
                     note="%s: modelled, not measured (%s): Curator's whole cycle, the lock "
                          "taken around the application's transaction; the median of its "
                          "rounds' medians" % (LOCK_SHARE, why))
        whole = [c + b for c, b in zip(cur, bare)]
        self.res.add(app_shape, WITH_LOCK, CURATOR, median(whole), "ms", rounds=whole,
                     note="%s: modelled, not measured (%s): in each round, the median of "
                          "Curator's cycle plus the median of %s; the median of the rounds' "
                          "sums" % (WITH_LOCK, why, BARE_APP))

    def g_rounds_of(self, delay_us, shape, app_shape, jvm, kazoo, p, pg_port, jdbc_url):
        at_1ms = delay_us >= 1000
        app_note = ("%s: the application remote too: pgbench -M prepared -j 2 reaches "
                    "PostgreSQL through a relay with the same delay each way, and takes the "
                    "lock in the transaction-scope pattern users would then write (BEGIN; "
                    "SELECT zk_lock_acquire_xact(...); COMMIT: one statement for the lock, "
                    "released at commit), a cycle being that transaction; Curator's cycle "
                    "rows here are its lock alone, the same measurements as in %s (a leg to "
                    "ZooKeeper only); its lock around the same transaction is compared in the "
                    "rows '%s' and '%s'" % (app_shape, shape, WITH_LOCK, LOCK_SHARE))
        zk_note = ("%s: the lock taken next to PostgreSQL (pgbench on PostgreSQL's machine, "
                   "loopback), ZooKeeper remote: only the ZooKeeper leg is delayed; Curator "
                   "and kazoo reach ZooKeeper through the same relay" % shape)
        cycle = [
            ("zklock/pgbench", lambda: self.a_pgbench("zklock")),
            (TCP, lambda: self.a_pgbench("zklock", tcp=True)),
            (TCP_APP, lambda: self.a_pgbench("xact", tcp=True, port=pg_port)),
            (BARE_APP, lambda: self.a_pgbench("bare", tcp=True, port=pg_port)),
            (CURATOR, lambda: self.a_jvm(jvm)),
            (CURATOR_APP, lambda: self.a_jvm(jvm, jdbc_url)),
            (BARE_JDBC, lambda: self.a_jvm(jvm, jdbc_url, bare=True)),
            ("kazoo", lambda: self.a_driver(kazoo + ["a"])),
        ]
        if not jdbc_url:
            cycle = [c for c in cycle if c[0] not in (CURATOR_APP, BARE_JDBC)]
        got = self.rounds(shape, cycle, self.g_rounds)
        for name, _ in cycle:
            if name in got and name not in (BARE_APP, CURATOR_APP, BARE_JDBC):
                # Issue 32's targets at 1 ms, once: on the TCP row.
                target = ("ratio<=", 0.4) if at_1ms and name == TCP else None
                self.cycle_rows(app_shape if name == TCP_APP else shape, "",
                                "%-34s" % name, name, got, target=target,
                                note=zk_note if name == TCP else
                                app_note if name == TCP_APP else None)
        if CURATOR in got:
            self.cycle_rows(app_shape, "", "%-34s" % (CURATOR + " (again)"), CURATOR, got)
        self.lock_share_rows(app_shape, got)
        self.zk_cpu_rows(shape, got, [TCP, CURATOR])
        self.zk_cpu_rows(app_shape, got, [TCP_APP, CURATOR])
        self.jvm_rows(shape, CURATOR, got)
        self.jvm_rows(app_shape, CURATOR_APP, got)
        loops = [
            ("zklock/pgbench", lambda: self.loop_pgbench("zklock", False)),
            (TCP, lambda: self.loop_pgbench("zklock", False, tcp=True)),
            (TCP_APP, lambda: self.loop_pgbench("xact", False, tcp=True, port=pg_port)),
            (CURATOR, lambda: self.loop_jvm(jvm, ["loop"] + p)),
            ("kazoo", lambda: self.loop_driver(kazoo + ["loop"] + [str(x) for x in p], False)),
        ]
        got = self.rounds(shape, loops, self.g_rounds)
        for name, _ in loops:
            if name not in got:
                continue
            n, rate, usage = self.loop_rate(got, name)
            target = ("ratio>=", 2) if at_1ms and name == TCP else None
            self.distinct_rate_row(app_shape if name == TCP_APP else shape, name, rate, n,
                                   usage, target, rounds=self.round_rates(got, name))
            if name == CURATOR:
                self.distinct_rate_row(app_shape, name, rate, n, usage,
                                       rounds=self.round_rates(got, name))
