#!/usr/bin/env bash
# Demonstrates one zklock lock held across two PostgreSQL clusters: installs
# dependencies, builds and installs the extension, starts one ZooKeeper and
# clusters A and B on loopback ports (temporary directories), then has A take
# 'abc.json' for 3 seconds while B tries, waits, and gets it when A's session
# ends.  Prints each step with a timestamp, the zk_locks view and the znodes;
# stops everything it started by pid at exit (ZKLOCK_KEEP_WORK=1 keeps the
# work directory; it is always kept on failure).
set -euo pipefail

TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
ZKSERVER=$TOP/test/zkserver.sh
# shellcheck source-path=SCRIPTDIR source=lib/common.sh
. "$TOP/test/lib/common.sh"

WORK=
A_PID=

# At exit: A's psql first, then every server under the work directory, by pid.
cleanup_on_exit A_PID

step() { printf '%s  %s\n' "$(date +%H:%M:%S.%3N)" "$*"; }
indent() { sed "s/^/$1/"; }

# psql on cluster A or B as the superuser; extra arguments go to psql.
psql_on() {
	local c=$1
	shift
	"${AS_USER[@]}" "$PGBIN/psql" -X -q -v ON_ERROR_STOP=1 -P pager=off \
		-h "$WORK/$c" -p "$(cat "$WORK/$c/port")" -U postgres -d postgres "$@"
}
zkutil() { "${AS_USER[@]}" "$TREE/test/tools/zkutil" "$ZK_CONNECT" "$@"; }

step "installing dependencies (if missing)"
bash "$TOP/test/install-deps.sh" --demo

WORK=$(make_workdir zklock-demo)
TREE=$WORK/tree
copy_tree "$TOP" "$TREE"

step "building and installing zklock"
"${AS_USER[@]}" make -s -C "$TREE" PG_CONFIG="$PG_CONFIG" -j"$(nproc)" >/dev/null
"${AS_ROOT[@]}" make -s -C "$TREE" PG_CONFIG="$PG_CONFIG" install >/dev/null
"${AS_USER[@]}" make -s -C "$TREE/test/tools" >/dev/null

ZK_CONNECT=$("${AS_USER[@]}" bash "$TREE/test/zkserver.sh" start "$WORK/zk" 1)
step "ZooKeeper at $ZK_CONNECT"
for c in a b; do
	pg_init "$WORK/$c" "$ZK_CONNECT" "demo_$c" "zklock.session_timeout = '10s'"
	pg_start "$WORK/$c"
	psql_on "$c" -c 'CREATE EXTENSION zklock'
	step "cluster ${c^^} on 127.0.0.1:$(cat "$WORK/$c/port"), zklock created"
done

LOCK_PATH=$(psql_on b -At -c "SELECT zk_lock_path('abc.json')")
step "lock 'abc.json' lives at $LOCK_PATH in ZooKeeper"

step "A: SELECT zk_lock_acquire('abc.json'); SELECT pg_sleep(3);  (in the background)"
# A plain command (not a function or pipeline) in the background, so A_PID
# is psql's own process (runuser's, as root) and cleanup can stop it.
"${AS_USER[@]}" "$PGBIN/psql" -X -q -At -v ON_ERROR_STOP=1 -h "$WORK/a" \
	-p "$(cat "$WORK/a/port")" -U postgres -d postgres \
	> >(indent "              [A] ") 2>&1 <<-'EOF' &
	SELECT zk_lock_acquire('abc.json') AS token \gset
	SELECT to_char(clock_timestamp(), 'HH24:MI:SS.MS') || '  A holds abc.json, fencing token ' || :token;
	SELECT pg_sleep(3) \g /dev/null
	SELECT to_char(clock_timestamp(), 'HH24:MI:SS.MS') || '  A ends its session (the lock goes with it)';
EOF
A_PID=$!

# Wait (bounded) until A's node is in ZooKeeper, so B's try is meaningful.
for ((i = 0; i < 100; i++)); do
	[ -n "$(zkutil ls "$LOCK_PATH" 2>/dev/null || true)" ] && break
	sleep 0.1
done

step "B: SELECT zk_lock_try('abc.json')  ->  $(psql_on b -At -c "SELECT zk_lock_try('abc.json')")"

step "A: SELECT * FROM zk_locks"
psql_on a -x -c 'SELECT * FROM zk_locks' | indent "    "
step "ZooKeeper: zkutil ls $LOCK_PATH"
zkutil ls "$LOCK_PATH" | indent "    " || true
first=$(zkutil ls "$LOCK_PATH" | head -n 1 || true)
if [ -n "$first" ]; then
	step "ZooKeeper: zkutil get $LOCK_PATH/$first  (who holds it)"
	{ zkutil get "$LOCK_PATH/$first"; echo; } | indent "    "
fi

step "B: SELECT zk_lock_acquire('abc.json', '10s')  (waits for A)"
# One session for B: acquire (waiting), look at zk_locks and ZooKeeper
# while holding, release.  Timestamps are read after each call returns
# (\gset first), not evaluated alongside it.
psql_on b -At <<-EOF | indent "              [B] "
	SELECT zk_lock_acquire('abc.json', '10s') AS token \gset
	SELECT to_char(clock_timestamp(), 'HH24:MI:SS.MS') || '  B granted abc.json, fencing token ' || :token;
	\echo B: SELECT * FROM zk_locks
	\pset format aligned
	\pset tuples_only off
	\x on
	SELECT * FROM zk_locks;
	\x off
	\echo ZooKeeper: zkutil ls $LOCK_PATH
	\! "$TREE/test/tools/zkutil" "$ZK_CONNECT" ls "$LOCK_PATH"
	\pset format unaligned
	\pset tuples_only on
	SELECT 'B: zk_lock_release(''abc.json'') -> ' || zk_lock_release('abc.json');
EOF

wait "$A_PID" || true
A_PID=
step "ZooKeeper after both sessions: zkutil ls $LOCK_PATH"
zkutil ls "$LOCK_PATH" | indent "    " || true

step "stopping clusters and ZooKeeper"
pg_stop "$WORK/a"
pg_stop "$WORK/b"
bash "$ZKSERVER" stop "$WORK/zk"
step "done"
