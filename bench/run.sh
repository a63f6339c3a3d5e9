#!/usr/bin/env bash
# zklock's benchmark (`make bench`): zklock side by side with Apache
# Curator's InterProcessMutex, kazoo's Lock, pg_advisory_lock (the local
# floor) and bare ZooKeeper requests (the ZooKeeper floor), all on one
# private ZooKeeper.  bench/README.md says what each number means.
#
#   bash bench/run.sh           every shape, (a) to (h); prints one table,
#                               writes bench/out/results.csv and bench.png
#   bash bench/run.sh --smoke   every shape and the chart at a tiny size and
#                               2 rounds, to check that each still works
#                               (make bench BENCH_QUICK=1); results in the
#                               work directory, never bench/out (CI)
#
# Installs missing dependencies (test/install-deps.sh), builds and installs
# zklock only when the installed copy is missing or older than the sources,
# compiles the Java and C drivers into a temporary work directory, starts
# one ZooKeeper server and three PostgreSQL clusters on loopback ports, and,
# for the fleet (h), a three-server ensemble and three more clusters; runs
# bench/bench.py (the package bench/zkbench), draws the chart, and stops
# everything it started, by pid, however it ends.  Exit status: non-zero when
# a shape failed or gave no figure, or the chart could not be drawn.
# ZKLOCK_KEEP_WORK=1 keeps the work directory (it is always kept on failure);
# BENCH_OUT=DIR writes a full run's results.csv and bench.png to DIR instead
# of bench/out.
set -euo pipefail

TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
ZKSERVER=$TOP/test/zkserver.sh
# shellcheck source-path=SCRIPTDIR source=../test/lib/common.sh
. "$TOP/test/lib/common.sh"

SMOKE=0
case "${1:-}" in
--smoke) SMOKE=1 ;;
"") ;;
*) echo "usage: bash bench/run.sh [--smoke]" >&2; exit 2 ;;
esac

WORK=
BENCH_PID=
ZK_START_PID=
FLEET_START_PID=
FLEET_INIT_PID=
STARTED=$SECONDS

cleanup_on_exit BENCH_PID ZK_START_PID FLEET_START_PID FLEET_INIT_PID

say() { printf '==== %s ====\n' "$*"; }

say "dependencies"
bash "$TOP/test/install-deps.sh"

WORK=$(make_workdir zklock-bench)
echo "work directory: $WORK"
# The code measured: its commit, "-dirty" when the tree differs from it.
echo "code: $(git -C "$TOP" describe --always --dirty 2>/dev/null || echo 'unknown (not a git checkout)')"

# The installed extension is used as it is unless the sources (not build
# products, which a build after the install leaves newer) are newer.
PKGLIB=$("$PG_CONFIG" --pkglibdir)
SHAREDIR=$("$PG_CONFIG" --sharedir)
if [ ! -f "$PKGLIB/zklock.so" ] || [ ! -f "$SHAREDIR/extension/zklock--1.0.sql" ] ||
	[ -n "$(find "$TOP/src" "$TOP/zklock--1.0.sql" "$TOP/zklock.control" \
		\( -name '*.[ch]' -o -name '*.sql' -o -name '*.control' \) \
		-newer "$PKGLIB/zklock.so" -print -quit)" ]; then
	say "build and install zklock"
	if [ ${#AS_ROOT[@]} -gt 0 ] && ! command -v sudo >/dev/null; then
		echo "zklock is missing or older than its sources, and installing it needs root:" \
			"run 'make install' as root first" >&2
		exit 1
	fi
	copy_tree "$TOP" "$WORK/tree"
	"${AS_USER[@]}" make -s -C "$WORK/tree" PG_CONFIG="$PG_CONFIG" -j"$(nproc)" >/dev/null
	"${AS_ROOT[@]}" make -s -C "$WORK/tree" PG_CONFIG="$PG_CONFIG" install >/dev/null
else
	echo "zklock is installed and up to date"
fi

# Both ZooKeepers start in the background while the drivers compile:
# ZooKeeper as production runs it (default tickTime, an fsync per write,
# and its JVM as Debian's zkServer.sh starts it: no heap or GC flag, the
# JVM's own defaults, G1 and a heap of up to a quarter of the memory, and
# -XX:+HeapDumpOnOutOfMemoryError), one standalone server for shapes (a) to
# (g), and a three-server ensemble for the fleet (h).  The container reaper
# checks every 60 s, ZooKeeper's default; the smoke run checks every second,
# so that its wait for the reaper after (e) and (f) stays short.
REAPER_S=60
ZK_PROPS=
if [ "$SMOKE" -eq 1 ]; then
	REAPER_S=1
	ZK_PROPS="znode.container.checkIntervalMs=1000"
fi
export ZK_JVM_FLAGS="-XX:+HeapDumpOnOutOfMemoryError"
ZK_SYSTEM_PROPERTIES=$ZK_PROPS ZK_PRODUCTION=1 "${AS_USER[@]}" bash "$ZKSERVER" start "$WORK/zk" 1 >"$WORK/zk.connect" &
ZK_START_PID=$!
ZK_PRODUCTION=1 "${AS_USER[@]}" bash "$ZKSERVER" start "$WORK/zkfleet" 3 >"$WORK/zkfleet.connect" &
FLEET_START_PID=$!
# The fleet's three clusters are made meanwhile too; their zklock.hosts, the
# ensemble's connect string, is added once the ensemble is up.  Room for 16
# pgbench clients each; little shared memory, they hold few locks.
# So are the clusters that take (c)'s lock beside main in (c) across
# clusters (2 and 4 clusters; 2 in the smoke run): x2, x3, x4, on the
# standalone server.
FLEET=(fleet1 fleet2 fleet3)
CROSS=(x2 x3 x4)
[ "$SMOKE" -eq 1 ] && CROSS=(x2)
for c in "${FLEET[@]}" "${CROSS[@]}"; do
	pg_init "$WORK/$c" "" "zkbench_$c" "max_connections = 40" "shared_buffers = 32MB" || exit 1
done >"$WORK/fleet-initdb.log" 2>&1 &
FLEET_INIT_PID=$!

say "drivers"
# Curator and the ZooKeeper Java client, from Debian's packages; and
# PostgreSQL's JDBC driver, for Curator's application transaction in (g).
CP=
for j in curator-recipes curator-framework curator-client zookeeper zookeeper-jute \
	guava failureaccess slf4j-api slf4j-nop postgresql; do
	[ -r "/usr/share/java/$j.jar" ] && CP="$CP${CP:+:}/usr/share/java/$j.jar"
done
mkdir -p "$WORK/classes"
javac -nowarn -cp "$CP" -d "$WORK/classes" "$TOP/bench/CuratorBench.java"
cc -O2 -Wall -o "$WORK/zkfloor" "$TOP/bench/zkfloor.c" -lzookeeper_mt -lpthread
cc -O2 -Wall -o "$WORK/zkrelay" "$TOP/bench/zkrelay.c" -lpthread
echo "CuratorBench (javac), zkfloor and zkrelay (cc), kazoo_bench.py (/usr/bin/python3)"

say "ZooKeeper and PostgreSQL"
wait "$ZK_START_PID" || { echo "ZooKeeper did not start (test/zkserver.sh)" >&2; exit 1; }
ZK_START_PID=
ZK_CONNECT=$(cat "$WORK/zk.connect")
# main: every shape but (e), and the max_locks = 1024 side of (f); room for 100
# waiters, 16 loop clients and a few more.
pg_init "$WORK/main" "$ZK_CONNECT" zkbench_main "max_connections = 150"
# e: shape (e), the defaults with only zklock.max_locks changed.
pg_init "$WORK/e" "$ZK_CONNECT" zkbench_e "zklock.max_locks = 10000"
CLUSTERS=(main e)
# f: shape (f), main's settings but zklock.max_locks = 100000: about 230 MB
# of zklock slots (2,276 bytes each) on top of PostgreSQL's own ~150 MB.
# A machine without that much to spare skips the shape, and says so.
F_SLOTS=100000
F_NEED_MB=1024
F_SKIP=
avail_mb=$(awk '/^MemAvailable:/ { print int($2 / 1024) }' /proc/meminfo 2>/dev/null || true)
if [ -n "$avail_mb" ] && [ "$avail_mb" -lt "$F_NEED_MB" ]; then
	F_SKIP="only $avail_mb MB of memory available, shape (f) wants $F_NEED_MB MB"
	echo "skipping shape (f): $F_SKIP" >&2
else
	pg_init "$WORK/f" "$ZK_CONNECT" zkbench_f "max_connections = 150" \
		"zklock.max_locks = $F_SLOTS"
	CLUSTERS+=(f)
fi
# The fleet, shape (h): three clusters, each with its own worker, on a
# three-server ensemble run as production runs it.
wait "$FLEET_START_PID" || { echo "the fleet's ZooKeeper ensemble did not start" >&2; exit 1; }
FLEET_START_PID=
FLEET_ZK=$(cat "$WORK/zkfleet.connect")
wait "$FLEET_INIT_PID" || { cat "$WORK/fleet-initdb.log" >&2; echo "initdb of the fleet's clusters failed" >&2; exit 1; }
FLEET_INIT_PID=
for c in "${FLEET[@]}"; do
	echo "zklock.hosts = '$FLEET_ZK'" >>"$WORK/$c/data/postgresql.conf"
done
for c in "${CROSS[@]}"; do
	echo "zklock.hosts = '$ZK_CONNECT'" >>"$WORK/$c/data/postgresql.conf"
done
CLUSTERS+=("${FLEET[@]}" "${CROSS[@]}")
# The clusters start side by side (pg_start waits for each).
STARTS=()
for c in "${CLUSTERS[@]}"; do
	pg_start "$WORK/$c" &
	STARTS+=($!)
done
for p in "${STARTS[@]}"; do wait "$p" || exit 1; done
for c in "${CLUSTERS[@]}"; do
	"$PGBIN/psql" -X -q -v ON_ERROR_STOP=1 -h "$WORK/$c" -p "$(cat "$WORK/$c/port")" \
		-U postgres -d postgres -c 'CREATE EXTENSION zklock' -f "$TOP/bench/bench.sql"
done
# The worker connects in the background: wait (bounded) for its session.
for c in "${CLUSTERS[@]}"; do
	for ((i = 0; i < 300; i++)); do
		state=$("$PGBIN/psql" -X -At -h "$WORK/$c" -p "$(cat "$WORK/$c/port")" -U postgres \
			-d postgres -c 'SELECT state FROM zk_status()' 2>/dev/null || true)
		[ "$state" = connected ] && break
		sleep 0.1
	done
	[ "$state" = connected ] || { echo "cluster $c: zklock worker not connected ($state)" >&2; exit 1; }
done
echo "ZooKeeper at $ZK_CONNECT, the fleet's ensemble at $FLEET_ZK; clusters ${CLUSTERS[*]} on 127.0.0.1:$(
	for c in "${CLUSTERS[@]}"; do printf '%s ' "$(cat "$WORK/$c/port")"; done)"

# BENCH_OUT: where a full run writes results.csv and bench.png (default
# bench/out), so that two runs can be kept side by side.
if [ "$SMOKE" -eq 1 ]; then
	OUT=$WORK/out
else
	OUT=${BENCH_OUT:-$TOP/bench/out}
fi
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd -P)

say "benchmark$([ "$SMOKE" -eq 1 ] && echo ' (smoke: every shape, tiny sizes)')"
ARGS=(--zk "$ZK_CONNECT" --zk-pid "$(cat "$WORK/zk/zk1.pid")"
	--main "$WORK/main:$(cat "$WORK/main/port")"
	--java-cp "$WORK/classes:$CP" --kazoo "$TOP/bench/kazoo_bench.py"
	--floor "$WORK/zkfloor" --relay "$WORK/zkrelay" --work "$WORK" --out "$OUT"
	--e "$WORK/e:$(cat "$WORK/e/port")"
	--fleet "$(for c in "${FLEET[@]}"; do printf '%s:%s,' "$WORK/$c" "$(cat "$WORK/$c/port")"; done | sed 's/,$//')"
	--fleet-zk "$FLEET_ZK"
	--cross "$(for c in "${CROSS[@]}"; do printf '%s:%s,' "$WORK/$c" "$(cat "$WORK/$c/port")"; done | sed 's/,$//')"
	--reaper-interval "$REAPER_S"
	--fleet-zk-pids "$(cat "$WORK"/zkfleet/zk[123].pid | paste -sd,)")
[ "$SMOKE" -eq 1 ] && ARGS+=(--smoke)
if [ -n "$F_SKIP" ]; then
	ARGS+=(--f-skip "$F_SKIP")
else
	ARGS+=(--f "$WORK/f:$(cat "$WORK/f/port")")
fi
rc=0
# -B: no __pycache__ left in the checkout.
/usr/bin/python3 -B "$TOP/bench/bench.py" "${ARGS[@]}" &
BENCH_PID=$!
wait "$BENCH_PID" || rc=$?
BENCH_PID=

# Drawn in the work directory first: a failed chart leaves the last one alone.
if gnuplot -e "datadir='$WORK'; out='$WORK/bench.png'" "$TOP/bench/chart.gp" &&
	[ -s "$WORK/bench.png" ]; then
	cp "$WORK/bench.png" "$OUT/bench.png"
	echo "chart: $OUT/bench.png"
else
	echo "gnuplot drew no chart (bench/chart.gp, data in $WORK/chart-*.dat)" >&2
	rc=1
fi

say "stopping"
# Side by side too; the exit's clean-up stops, by pid, whatever is left.
for c in "${CLUSTERS[@]}"; do pg_stop "$WORK/$c" & done
"${AS_USER[@]}" bash "$ZKSERVER" stop "$WORK/zk" &
"${AS_USER[@]}" bash "$ZKSERVER" stop "$WORK/zkfleet" &
wait
echo "whole run: $((SECONDS - STARTED)) s"
exit "$rc"
