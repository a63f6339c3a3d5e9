#!/usr/bin/env bash
# Runs the explorer (test/explore/explore.py) as `make explore` and
# test/run_all.sh do.
#
#   test/explore/run.sh [--tap] [explore.py]
#
# Two explorations one after the other: a fixed seed (EXPLORE_SEED, default
# 4545) and a random one, both printed, each for EXPLORE_SECONDS / 2 seconds
# (default 180 in all).  EXPLORE_ALL=1 enables every feature of the grammar
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
HALF=$(( (SECONDS_ALL + 1) / 2 ))
FIXED=${EXPLORE_SEED:-4545}
RANDOM_SEED=$(( (RANDOM << 15) | RANDOM ))
ARGS=(--seconds "$HALF" --pg-config "${PG_CONFIG:-pg_config}")
[ "${EXPLORE_ALL:-0}" != 1 ] || ARGS+=(--all)
[ -z "${EXPLORE_FOUND:-}" ] || ARGS+=(--found "$EXPLORE_FOUND")

[ "$TAP" = no ] || echo "1..2"
rc=0
n=0
for seed in "$FIXED" "$RANDOM_SEED"; do
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
