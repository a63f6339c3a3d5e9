#!/usr/bin/env bash
# Runs the explorer (test/explore/explore.py) as `make explore` and
# test/run_all.sh do.
#
#   test/explore/run.sh [--tap] [explore.py]
#
# First the scripts of found/ (found by the explorer) and cases/ (written by
# hand from its steps) are replayed, in one set of clusters, as regression
# tests (those marked "-- replay in CI: no" are left out: their
# defect is not fixed on main yet); then two explorations one after the
# other: a fixed seed (EXPLORE_SEED, default 4545) and a random one, both
# printed, sharing what is left of EXPLORE_SECONDS (default 180 in all).
# Under CI (CI set) only the fixed seed runs, for all that time: a gate
# must give one commit one verdict, and programs never drawn before are
# `make explore`'s to try.  EXPLORE_ALL=1 enables every feature of the grammar
# and the nemesis, also those whose defects wait for their issue (see
# `explore.py --list-features`).  PG_CONFIG names the PostgreSQL whose
# zklock is installed.  A violation is printed as a shrunk, replayable
# script and also written to EXPLORE_FOUND (default: the explorer's work
# directory, kept).  With --tap, the output is TAP: one test per seed.
set -uo pipefail

TAP=no
[ "${1:-}" != --tap ] || { TAP=yes; shift; }
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
SECONDS_ALL=${EXPLORE_SECONDS:-180}
FIXED=${EXPLORE_SEED:-4545}
SEEDS=("$FIXED" "$(( (RANDOM << 15) | RANDOM ))")
[ -z "${CI:-}" ] || SEEDS=("$FIXED")
ARGS=(--pg-config "${PG_CONFIG:-pg_config}")
[ "${EXPLORE_ALL:-0}" != 1 ] || ARGS+=(--all)
[ -z "${EXPLORE_FOUND:-}" ] || ARGS+=(--found "$EXPLORE_FOUND")

[ "$TAP" = no ] || echo "1..$(( 1 + ${#SEEDS[@]} ))"
rc=0
n=1
start=$(date +%s)
REPLAY=()
for f in "$HERE"/found/*.sql "$HERE"/cases/*.sql; do
	[ -e "$f" ] || continue
	grep -q '^-- replay in CI: no' "$f" || REPLAY+=("$f")
done
r=0
if [ ${#REPLAY[@]} -gt 0 ]; then
	if [ "$TAP" = yes ]; then
		/usr/bin/python3 "$HERE/explore.py" --pg-config "${PG_CONFIG:-pg_config}" --replay "${REPLAY[@]}" 2>&1 | sed 's/^/# /'
		r=${PIPESTATUS[0]}
	else
		/usr/bin/python3 "$HERE/explore.py" --pg-config "${PG_CONFIG:-pg_config}" --replay "${REPLAY[@]}" || r=$?
	fi
fi
if [ "$TAP" = yes ]; then
	if [ "$r" -eq 0 ]; then
		echo "ok 1 - replay of found/ and cases/: ${#REPLAY[@]} scripts"
	else
		echo "not ok 1 - replay of found/ and cases/: ${#REPLAY[@]} scripts"
	fi
fi
[ "$r" -eq 0 ] || rc=1
LEFT=$(( SECONDS_ALL - ($(date +%s) - start) ))
HALF=$(( LEFT / ${#SEEDS[@]} ))
[ "$HALF" -ge 30 ] || HALF=30
ARGS+=(--seconds "$HALF")
for seed in "${SEEDS[@]}"; do
	n=$((n + 1))
	r=0
	if [ "$TAP" = yes ]; then
		/usr/bin/python3 "$HERE/explore.py" "${ARGS[@]}" --seed "$seed" 2>&1 | sed 's/^/# /'
		r=${PIPESTATUS[0]}
		if [ "$r" -eq 0 ]; then
			echo "ok $n - explore, seed $seed"
		else
			echo "not ok $n - explore, seed $seed"
		fi
	else
		/usr/bin/python3 "$HERE/explore.py" "${ARGS[@]}" --seed "$seed" || r=$?
	fi
	[ "$r" -eq 0 ] || rc=1
done
exit $rc
