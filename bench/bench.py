"""bench.py: runs the shapes of zklock's benchmark against servers that
bench/run.sh has started, and prints, writes and charts the results.

run.sh starts one ZooKeeper and the PostgreSQL clusters, builds the
drivers, then runs this with /usr/bin/python3 (bench/README.md says what
every number means).  Contenders, all on the same ZooKeeper:

  zklock            zk_lock_acquire + zk_lock_release, timed inside the
                    backend by PL/pgSQL loops (bench.sql);
  zklock/pgbench    the same calls sent by pgbench: what a client sees
                    (over the Unix socket, and, as users run it, over TCP
                    with -j 2: zklock/pgbench TCP, issue 32's targets);
  Curator           InterProcessMutex, one CuratorFramework (CuratorBench.java);
  kazoo             kazoo.recipe.lock.Lock, one KazooClient (kazoo_bench.py);
  pg_advisory_lock  the local floor, timed in the backend, and by pgbench;
  ZK floor          zkfloor.c on libzookeeper_mt: bare requests, no lock.

The code is in the package zkbench, next to this file: processes,
postgres, zookeeper, cpu, stats and results are the parts; harness is what
the shapes share; uncontended (a), loops (b, c), waiters (d), many_locks
(e), max_locks (f), network (g, through zkrelay.c) and fleet (h, three
clusters on a three-server ensemble) are the shapes; benchmark runs them
all.  --smoke
runs every shape at a tiny size: it checks that each still works.

Every process it starts is recorded and stopped, by pid, when it exits.
Exit status: 0 when every measurement ran and gave a figure (targets met
or not), 1 if one failed.  Targets never decide the status: no test
asserts on a time.
"""

import argparse
import signal
import sys

from zkbench.benchmark import Bench
from zkbench.processes import BenchError, stop_spawned


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
    ap.add_argument("--relay", required=True, help="zkrelay, the delaying relay of shape (g)")
    ap.add_argument("--fleet", help="SOCKETDIR:PORT,... of the clusters of the fleet, shape (h)")
    ap.add_argument("--fleet-zk", help="connect string of the fleet's ZooKeeper ensemble")
    ap.add_argument("--fleet-zk-pids", help="pids of the ensemble's servers, comma-separated")
    ap.add_argument("--cross", help="SOCKETDIR:PORT,... of more clusters on --zk, for (c) "
                                    "across clusters (with main)")
    ap.add_argument("--reaper-interval", type=float, default=60.0,
                    help="ZooKeeper's container check interval, s (znode.container."
                         "checkIntervalMs; its default: 60)")
    ap.add_argument("--work", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--smoke", action="store_true",
                    help="every shape at a tiny size: checks that each works")
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
