#!/usr/bin/env bash
# Where the time of shape (b) goes: 16 pgbench clients, each on a lock of
# its own, against one ZooKeeper run as production runs it and one cluster
# with zklock, for SECONDS (default 10).  Prints the CPU time per cycle (one
# acquire + release) of each part, read from /proc for every thread: the
# backends, the zklock worker (one thread: the client library runs in its
# loop), the ZooKeeper server, pgbench; and their context
# switches per cycle.  With linux-perf (`perf`, installed by
# test/install-deps.sh), it also samples the whole machine (`perf record
# -a -g`) over the same window and prints the hottest symbols of the
# worker and of the backends.  Stops everything it started, by pid.
# SHAPE: b (the default: 16 clients over the Unix socket), b-tcp (the same
# over TCP to 127.0.0.1, -j 2, as issue 32 measures it) or a-tcp (shape
# (a): one client on one lock over TCP).  Also printed: a client's mean
# cycle (clients x seconds / cycles, Little's law, not timed), and
# ZooKeeper's own figures over the window (mntr, after srst): its writes
# and reads per cycle and the mean time of each from its reading of the
# request to its answer, and its mean fsync; ZooKeeper counts these in
# whole milliseconds, so a mean below 1 ms is a share of requests that
# took one.  PROFILE_WARMUP: seconds of unmeasured load first (default 20;
# 0: none).  PROFILE_PERF=0: no perf sampling, which costs CPU in the
# window and so lengthens what it measures.
#
#   bash bench/profile.sh [SECONDS] [SHAPE]
set -euo pipefail

TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
ZKSERVER=$TOP/test/zkserver.sh
# shellcheck source-path=SCRIPTDIR source=../test/lib/common.sh
. "$TOP/test/lib/common.sh"
SECONDS_RUN=${1:-10}
SHAPE=${2:-b}
case $SHAPE in
b) CLIENTS=16 THREADS=2 ;;
b-tcp) CLIENTS=16 THREADS=2 ;;
a-tcp) CLIENTS=1 THREADS=1 ;;
*)
	echo "profile.sh: SHAPE must be b, b-tcp or a-tcp" >&2
	exit 2
	;;
esac

WORK=$(make_workdir zklock-profile)
exit_profile() {
	[ -n "${WORK:-}" ] || return 0
	pg_stop "$WORK/pg" 2>/dev/null || true
	"${AS_USER[@]}" bash "$ZKSERVER" stop "$WORK/zk" 2>/dev/null || true
	rm -rf "$WORK"
}
trap exit_profile EXIT

ZK_CONNECT=$(ZK_PRODUCTION=1 "${AS_USER[@]}" bash "$ZKSERVER" start "$WORK/zk" 1)
pg_init "$WORK/pg" "$ZK_CONNECT" zkprofile "max_connections = 50"
pg_start "$WORK/pg"
PORT=$(cat "$WORK/pg/port")
PSQL=("$PGBIN/psql" -X -At -h "$WORK/pg" -p "$PORT" -U postgres -d postgres)
# Where pgbench connects: the Unix socket, or TCP as users run it.
PGB_HOST=$WORK/pg
[ "$SHAPE" = b ] || PGB_HOST=127.0.0.1
"${PSQL[@]}" -q -c 'CREATE EXTENSION zklock'
for ((i = 0; i < 300; i++)); do
	[ "$("${PSQL[@]}" -c 'SELECT state FROM zk_status()')" = connected ] && break
	sleep 0.1
done

printf '%s\n' "SELECT zk_lock_acquire('profile-' || :client_id);" \
	"SELECT zk_lock_release('profile-' || :client_id);" >"$WORK/b.sql"
# Shape (a) is the same script with one client: one lock, uncontended.
chmod 644 "$WORK/b.sql"
WORKER=$("${PSQL[@]}" -c "SELECT pid FROM pg_stat_activity WHERE backend_type = 'zklock worker'")
ZK_PID=$(cat "$WORK/zk/zk1.pid")

# Warm up (ZooKeeper's JIT, the plans), unmeasured: ZooKeeper's CPU per
# cycle keeps falling for about 20 s of this load.
WARMUP=${PROFILE_WARMUP:-20}
if [ "$WARMUP" -gt 0 ]; then
	"${AS_USER[@]}" "$PGBIN/pgbench" -n -M prepared -h "$PGB_HOST" -p "$PORT" -U postgres \
		-c "$CLIENTS" -j "$THREADS" -T "$WARMUP" -f "$WORK/b.sql" postgres >/dev/null
fi

# A four-letter command to ZooKeeper (the first server of ZK_CONNECT);
# prints the lines of its answer whose key is one of those given, or all
# of them when none is given.
four_letters() {
	/usr/bin/python3 - "$ZK_CONNECT" "$@" <<'EOF'
import socket, sys
host, port = sys.argv[1].split(",")[0].rsplit(":", 1)
with socket.create_connection((host, int(port)), timeout=10) as s:
    s.sendall(sys.argv[2].encode())
    out = b""
    while True:
        d = s.recv(65536)
        if not d:
            break
        out += d
for line in out.decode().splitlines():
    if len(sys.argv) == 3 or line.split("\t")[0] in sys.argv[3:]:
        print(line)
EOF
}

# Per-thread CPU ticks and context switches of the parts, before and after.
snapshot() {
	/usr/bin/python3 - "$WORKER" "$ZK_PID" "$PORT" <<'EOF'
import os, sys
worker, zk, port = sys.argv[1], sys.argv[2], sys.argv[3]
def threads(pid):
    for tid in os.listdir("/proc/%s/task" % pid):
        try:
            st = open("/proc/%s/task/%s/stat" % (pid, tid)).read()
            comm = open("/proc/%s/task/%s/comm" % (pid, tid)).read().strip()
            sched = dict(l.split(":", 1) for l in open("/proc/%s/task/%s/status" % (pid, tid))
                         if l.startswith(("voluntary_ctxt", "nonvoluntary_ctxt")))
        except OSError:
            continue
        f = st[st.rindex(")") + 2:].split()
        yield tid, comm, int(f[11]) + int(f[12]), sum(int(v) for v in sched.values())
parts = {}
def add(part, ticks, cs):
    t, c = parts.get(part, (0, 0))
    parts[part] = (t + ticks, c + cs)
# The worker has one thread (the client library runs in its loop); any
# other would be listed on its own.
for tid, comm, ticks, cs in threads(worker):
    add("worker" if tid == worker else "worker thread %s" % tid, ticks, cs)
for tid, comm, ticks, cs in threads(zk):
    add("ZooKeeper server (JVM)", ticks, cs)
for pid in os.listdir("/proc"):
    if not pid.isdigit():
        continue
    try:
        cmd = open("/proc/%s/cmdline" % pid).read()
    except OSError:
        continue
    if cmd.startswith("postgres: zkprofile: postgres postgres"):
        for tid, comm, ticks, cs in threads(pid):
            add("backends", ticks, cs)
    elif cmd.startswith("/usr/lib/postgresql/15/bin/pgbench") and ("-p\0%s\0" % port) in cmd:
        for tid, comm, ticks, cs in threads(pid):
            add("pgbench", ticks, cs)
for k, (t, c) in sorted(parts.items()):
    print("%s\t%d\t%d" % (k, t, c))
EOF
}

"${AS_USER[@]}" "$PGBIN/pgbench" -n -M prepared -h "$PGB_HOST" -p "$PORT" -U postgres \
	-c "$CLIENTS" -j "$THREADS" -T "$((SECONDS_RUN + 8))" -f "$WORK/b.sql" postgres >"$WORK/pgbench.out" &
PGBENCH=$!
sleep 1
# ZooKeeper's own figures count from here (srst resets them).
if [ "$(four_letters srst)" != "Server stats reset." ]; then
	echo "profile.sh: ZooKeeper did not reset its statistics (srst)" >&2
	exit 1
fi
before=$(snapshot)
acq0=$("${PSQL[@]}" -c 'SELECT acquired FROM zk_status()')
if [ "${PROFILE_PERF:-1}" != 0 ] && command -v perf >/dev/null; then
	perf record -q -a -g -o "$WORK/perf.data" -- sleep "$SECONDS_RUN" 2>/dev/null || true
else
	sleep "$SECONDS_RUN"
fi
after=$(snapshot)
# The backends' pids, for perf's report: pgbench's connections.
BACKENDS=$("${PSQL[@]}" -c "SELECT string_agg(pid::text, ',') FROM pg_stat_activity
	WHERE backend_type = 'client backend' AND application_name = 'pgbench'")
acq1=$("${PSQL[@]}" -c 'SELECT acquired FROM zk_status()')
zk_figures=$(four_letters mntr zk_cnt_updatelatency zk_avg_updatelatency \
	zk_cnt_readlatency zk_avg_readlatency zk_avg_fsynctime)
wait "$PGBENCH"
cycles=$((acq1 - acq0))
if [ "$cycles" -le 0 ]; then
	echo "profile.sh: no cycle was done in the window" >&2
	exit 1
fi
HZ=$(getconf CLK_TCK)

echo "shape $SHAPE: $CLIENTS clients, $CLIENTS locks, $cycles cycles in ${SECONDS_RUN} s" \
	"($(awk -v n="$cycles" -v s="$SECONDS_RUN" 'BEGIN { printf "%.0f", n / s }') /s)"
echo "mean cycle of a client: $(awk -v n="$cycles" -v s="$SECONDS_RUN" -v c="$CLIENTS" \
	'BEGIN { printf "%.3f", c * s * 1000 / n }') ms"
echo "$zk_figures" | awk -F '\t' -v n="$cycles" '
	{ v[$1] = $2 }
	END {
		printf "ZooKeeper (mntr): %.3f writes per cycle, %s ms each from its reading to its answer;", v["zk_cnt_updatelatency"] / n, v["zk_avg_updatelatency"]
		printf " %.3f reads per cycle, %s ms each; fsync %s ms\n", v["zk_cnt_readlatency"] / n, v["zk_avg_readlatency"], v["zk_avg_fsynctime"] }'
printf '%-40s %12s %14s\n' "part" "CPU us/cycle" "switches/cycle"
join -t $'\t' <(echo "$before" | sort) <(echo "$after" | sort) |
	awk -F '\t' -v n="$cycles" -v hz="$HZ" '{
		printf "%-40s %12.1f %14.2f\n", $1, ($4 - $2) * 1e6 / hz / n, ($5 - $3) / n }'

if [ -f "$WORK/perf.data" ]; then
	echo
	echo "hottest symbols of the zklock worker (perf, whole machine, ${SECONDS_RUN} s):"
	perf report -q -i "$WORK/perf.data" --no-children -g none --pid "$WORKER" --sort sym \
		--stdio 2>/dev/null | grep -v '^$' | grep -v '^ *|' | grep -v '^ *-' | head -15 || true
	echo
	echo "hottest symbols of the backends (perf, whole machine, ${SECONDS_RUN} s):"
	perf report -q -i "$WORK/perf.data" --no-children -g none --pid "$BACKENDS" --sort dso,sym \
		--stdio 2>/dev/null | grep -v '^$' | grep -v '^ *|' | grep -v '^ *-' | head -25 || true
	echo
	echo "CPU by command (perf samples, whole machine):"
	perf report -q -i "$WORK/perf.data" --no-children -g none --sort comm --stdio 2>/dev/null |
		grep -v '^$' | grep -v '^ *|' | grep -v '^ *-' | head -10 || true
fi
