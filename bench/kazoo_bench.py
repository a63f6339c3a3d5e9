"""kazoo_bench: the kazoo contender of zklock's benchmark (bench/run.sh).

Every thread uses its own kazoo.recipe.lock.Lock, created once and reused;
all threads share ONE KazooClient, as an application would.  Results go to
stdout as one JSON object per run (times in ms).  The modes and their
arguments are those of CuratorBench.java:

    kazoo_bench.py CONNECT a SECONDS WARMUP MAXN
    kazoo_bench.py CONNECT loop THREADS SECONDS WARMUP distinct|same
    kazoo_bench.py CONNECT waiters N

"waiters" prints "session 0x..." and waits for a line on stdin, queues N
waiters behind a holder, prints "started" and waits for a line, lets the
holder go, prints "done {json}" and waits for a line before it closes the
session.  Modes a and loop print "measuring" when the measured part starts,
and after their result wait for a line or the end of stdin before they
close the session, so that run.sh can read their CPU time first.

Run with Debian's python3-kazoo: /usr/bin/python3 kazoo_bench.py ...
"""

import json
import sys
import threading
import time

from kazoo.client import KazooClient
from kazoo.recipe.lock import Lock

ROOT = "/zkbench/kazoo"


def now_ms():
    return time.perf_counter() * 1e3


def session(client):
    return "0x%x" % client.client_id[0]


def uncontended(client, seconds, warmup, maxn):
    lock = Lock(client, ROOT + "/a")
    for _ in range(warmup):
        lock.acquire()
        lock.release()
    lat = []
    print("measuring", flush=True)
    start = now_ms()
    end = start + seconds * 1e3
    while len(lat) < maxn and now_ms() < end:
        s = now_ms()
        lock.acquire()
        lock.release()
        lat.append(round(now_ms() - s, 4))
    return {"n": len(lat), "seconds": (now_ms() - start) / 1e3,
            "session": session(client), "lat_ms": lat}


def run_threads(targets):
    failures = []

    def guard(fn):
        def run():
            try:
                fn()
            except Exception as e:  # reported after the join
                failures.append(e)
        return run

    threads = [threading.Thread(target=guard(fn)) for fn in targets]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if failures:
        raise failures[0]


def loop(client, nthreads, seconds, warmup, same):
    t0 = [0.0]

    def opened():
        print("measuring", flush=True)
        t0[0] = now_ms()

    barrier = threading.Barrier(nthreads, action=opened)
    events = []

    def worker(i):
        lock = Lock(client, ROOT + ("/c" if same else "/b%d" % i))
        mine = []
        events.append(mine)

        def run():
            for _ in range(warmup):
                lock.acquire()
                lock.release()
            barrier.wait()
            end = t0[0] + seconds * 1e3
            while now_ms() < end:
                lock.acquire()
                granted = now_ms()
                released = now_ms()
                lock.release()
                mine.append([round(granted - t0[0], 4), round(released - t0[0], 4)])
        return run

    run_threads([worker(i) for i in range(nthreads)])
    flat = [e for mine in events for e in mine]
    return {"n": len(flat), "seconds": seconds, "session": session(client), "events": flat}


def waiters(client, n):
    path = ROOT + "/d%d" % n
    holder = Lock(client, path)
    print("session " + session(client), flush=True)
    sys.stdin.readline()
    holder.acquire()
    t0 = [now_ms()]
    events = []

    def worker():
        lock = Lock(client, path)
        lock.acquire()
        granted = now_ms()
        released = now_ms()
        lock.release()
        events.append([round(granted - t0[0], 4), round(released - t0[0], 4)])

    box = {}

    def run_all():
        try:
            run_threads([worker] * n)
        except Exception as e:  # re-raised below
            box["error"] = e

    runner = threading.Thread(target=run_all)
    runner.start()
    print("started", flush=True)
    sys.stdin.readline()
    t0[0] = now_ms()
    holder.release()
    runner.join()
    if "error" in box:
        raise box["error"]
    result = {"n": len(events), "seconds": (now_ms() - t0[0]) / 1e3,
              "session": session(client), "events": events}
    print("done " + json.dumps(result), flush=True)
    sys.stdin.readline()
    return None


def main():
    args = sys.argv[1:]
    if len(args) < 3:
        sys.exit(__doc__)
    client = KazooClient(hosts=args[0], timeout=10.0)
    client.start(timeout=15)
    try:
        mode = args[1]
        if mode == "a":
            result = uncontended(client, float(args[2]), int(args[3]), int(args[4]))
        elif mode == "loop":
            result = loop(client, int(args[2]), float(args[3]), int(args[4]), args[5] == "same")
        elif mode == "waiters":
            result = waiters(client, int(args[2]))
        else:
            sys.exit(__doc__)
        if result is not None:
            print(json.dumps(result), flush=True)
            sys.stdin.readline()
    finally:
        client.stop()
        client.close()


if __name__ == "__main__":
    main()
