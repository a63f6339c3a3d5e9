#!/usr/bin/env bash
# zklock-run.sh: run a command while holding a zklock lock, for migration
# tools that zklock cannot be put inside (Flyway, Liquibase, Rails,
# golang-migrate, sqitch): one fleet-wide deploy at a time.
#
#   zklock-run.sh LOCK TIMEOUT -- COMMAND [ARG...]
#
# Connects with psql (PGHOST, PGPORT, PGDATABASE, PGUSER, ... as libpq
# reads them; PGAPPNAME names the deployer in zk_lock_contenders), waits up
# to TIMEOUT (an interval: '10min') for LOCK in session scope, runs COMMAND,
# releases the lock and exits with COMMAND's status.  It exits 1 without
# running COMMAND when the lock is not granted (the psql error on stderr,
# 55P03 when TIMEOUT ran out).  The lock is held by this script's own
# connection: if the script or its host dies, the lock goes when
# PostgreSQL notices the connection is gone (see doc/operations.md, "A
# deploy host vanished").  The database needs CREATE EXTENSION zklock and
# the role EXECUTE on zk_lock_acquire(text, interval) and
# zk_lock_release(text).
set -euo pipefail

if [ $# -lt 4 ] || [ "$3" != -- ]; then
	sed -n '6p' "$0" >&2
	exit 2
fi
lock=$1
timeout=$2
shift 3

coproc PSQL { exec psql -X -q -A -t -v ON_ERROR_STOP=1 -v lock="$lock" -v timeout="$timeout"; }
psql_in=${PSQL[1]}
psql_out=${PSQL[0]}
# shellcheck disable=SC2153 # coproc sets PSQL_PID
psql_pid=$PSQL_PID

echo "SELECT zk_lock_acquire(:'lock', CAST(:'timeout' AS interval)) > 0;" >&"$psql_in"
if ! read -r granted <&"$psql_out" || [ "$granted" != t ]; then
	wait "$psql_pid" || true
	echo "zklock-run.sh: lock \"$lock\" not granted; $* not run" >&2
	exit 1
fi

rc=0
"$@" || rc=$?

echo "SELECT zk_lock_release(:'lock');" >&"$psql_in"
read -r _ <&"$psql_out" || true
echo '\q' >&"$psql_in"
wait "$psql_pid" || true
exit "$rc"
