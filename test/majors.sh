#!/usr/bin/env bash
# The whole suite on every PostgreSQL major this machine can test, one
# after another (test/run_all.sh comes here when no PG_CONFIG is given):
#
#   15  Debian's packages: the whole suite, with the Debian package stage;
#   18  built from Debian's source package into a cache outside the clone
#       (test/pgcache.sh; the first time while the suite of 15 runs): the
#       whole suite, without the package stage (Debian 12 has no 18 to
#       package for), the bench smoke and the format and cppcheck (they do
#       not depend on the major);
#   17  Debian 13's server headers (its programs need a newer C library than
#       Debian 12's): every source compiled, with -Wall -Wextra and no
#       warning allowed.
#
# Prints a tally per major and, last, the total as "N passed, N failed, N
# skipped"; the exit status is non-zero if anything failed on any major.
# ZKLOCK_TAP, ZKLOCK_PACKAGE and ZKLOCK_TAP_JOBS reach each run as they
# are; ZKLOCK_PG15 names another 15 than Debian's (its pg_config).
set -euo pipefail

TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
TALLY=()
TOTAL_P=0
TOTAL_F=0
TOTAL_S=0
STATUS=0
LOG=$(mktemp --tmpdir --suffix=.zklock-majors)
trap 'rm -f "$LOG"' EXIT
# The 15 to test: Debian's, or ZKLOCK_PG15 (its pg_config).  On 18 the
# upgrade test (054) comes from it (ZKLOCK_UPGRADE_FROM, unless set), which
# the suite of 15 has just installed this zklock into.
PG15=${ZKLOCK_PG15:-/usr/lib/postgresql/15/bin/pg_config}
export ZKLOCK_UPGRADE_FROM=${ZKLOCK_UPGRADE_FROM:-$PG15}

say() { printf '\n######## %s ########\n' "$*"; }

# tally LABEL P F S SECONDS
tally() {
	TALLY+=("$(printf '%-22s %s passed, %s failed, %s skipped (%d min %02d s)' \
		"$1:" "$2" "$3" "$4" $(($5 / 60)) $(($5 % 60)))")
	TOTAL_P=$((TOTAL_P + $2))
	TOTAL_F=$((TOTAL_F + $3))
	TOTAL_S=$((TOTAL_S + $4))
	[ "$3" -eq 0 ] || STATUS=1
}

# suite LABEL PG_CONFIG: test/run_all.sh against that PostgreSQL; its tally
# is its last "N passed, N failed, N skipped" line.
suite() {
	local label=$1 config=$2 rc=0 start=$SECONDS line p f s
	say "PostgreSQL $label: $config"
	: >"$LOG"
	# A pipeline, not a bare wait for a process substitution: a bare wait
	# would wait for 18's build as well.
	PG_CONFIG=$config bash "$TOP/test/run_all.sh" 2>&1 | tee -a "$LOG" || rc=${PIPESTATUS[0]}
	line=$(grep -E '^[0-9]+ passed, [0-9]+ failed, [0-9]+ skipped$' "$LOG" | tail -n 1 || true)
	if [ -n "$line" ]; then
		read -r p _ f _ s _ <<<"${line//,/}"
	else
		p=0 f=0 s=0
	fi
	# A run that failed without counting a failure still failed.
	[ "$rc" -eq 0 ] || [ "$f" -gt 0 ] || f=1
	tally "$label" "$p" "$f" "$s" $((SECONDS - start))
}

# compile_only LABEL INCLUDEDIR: every source of src/ compiled against the
# server headers in INCLUDEDIR with the PGXS flags of 15 and -Wall -Wextra,
# each warning an error.  One test in the tally, passed when every file
# compiles (a compile is no test of its own per file); the files that fail
# are named.
compile_only() {
	local label=$1 inc=$2 start=$SECONDS n=0 f=0 src work version
	say "PostgreSQL $label: compile against $inc"
	work=$(mktemp -d --tmpdir --suffix=.zklock-compile)
	# Debian 13's pg_config.h says the C library has strlcpy, which Debian
	# 12's lacks: declare it, so that the only warning left is zklock's own.
	printf '#include <stddef.h>\nextern size_t strlcpy(char *dst, const char *src, size_t siz);\n' \
		>"$work/strlcpy.h"
	version=$(sed -n "s/^default_version *= *'\(.*\)'/\1/p" "$TOP/zklock.control")
	for src in "$TOP"/src/*.c "$TOP"/src/*/*.c; do
		n=$((n + 1))
		# shellcheck disable=SC2046 # pg_config's flags are words
		if ! gcc $(/usr/lib/postgresql/15/bin/pg_config --cflags) -fPIC \
			-Wall -Wextra -Wno-unused-parameter -Werror \
			-include "$work/strlcpy.h" -DZKLOCK_VERSION="\"$version\"" -D_GNU_SOURCE \
			-I"$TOP/src" -I"$inc" -I"$inc/../../internal" \
			-c -o "$work/out.o" "$src"; then
			echo "FAILED: ${src#"$TOP"/}"
			f=$((f + 1))
		fi
	done
	rm -rf "$work"
	echo "$((n - f)) of $n sources compiled"
	if [ "$n" -gt 0 ] && [ "$f" -eq 0 ]; then
		tally "$label" 1 0 0 $((SECONDS - start))
	else
		tally "$label" 0 1 0 $((SECONDS - start))
	fi
}

start=$SECONDS
bash "$TOP/test/install-deps.sh"

# 18's build (the first time; with the cache complete it only prints) runs
# meanwhile, below the suite of 15 in priority: that suite spends most of
# its time waiting, and the build takes the processor left.  17's headers
# come the same way.  Each in a session of its own, so that a run ended
# early ends them, and all they started, too.
BUILD18_LOG=$(mktemp --tmpdir --suffix=.zklock-pg18)
PG18_OUT=$(mktemp --tmpdir --suffix=.zklock-pg18-config)
HEADERS17_LOG=$(mktemp --tmpdir --suffix=.zklock-pg17)
INC17_OUT=$(mktemp --tmpdir --suffix=.zklock-pg17-inc)
BUILD18_PID=
HEADERS17_PID=
cleanup() {
	local p
	for p in $BUILD18_PID $HEADERS17_PID; do
		kill -TERM -- "-$p" 2>/dev/null || true
	done
	rm -f "$LOG" "$BUILD18_LOG" "$PG18_OUT" "$HEADERS17_LOG" "$INC17_OUT"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
build_start=$SECONDS
setsid nice -n 10 bash "$TOP/test/pgcache.sh" 18 >"$PG18_OUT" 2>"$BUILD18_LOG" </dev/null &
BUILD18_PID=$!
setsid bash "$TOP/test/pgcache.sh" 17 >"$INC17_OUT" 2>"$HEADERS17_LOG" </dev/null &
HEADERS17_PID=$!

suite 15 "$PG15"

say "PostgreSQL 18: the cached build (built meanwhile if missing)"
rc=0
wait "$BUILD18_PID" || rc=$?
BUILD18_PID=
build_time=$((SECONDS - build_start))
cat "$BUILD18_LOG"
pg18=$(cat "$PG18_OUT")
if [ "$rc" -eq 0 ] && [ -x "$pg18" ]; then
	if grep -q 'built in' "$BUILD18_LOG"; then
		TALLY+=("$(printf '%-22s %s' '18 (build):' "$(sed -n 's/^pgcache.sh: //p' "$BUILD18_LOG" | grep -E 'built in|ready in' | paste -sd ';' -), beside the suite of 15")")
	else
		TALLY+=("$(printf '%-22s %s' '18 (build):' 'from the cache')")
	fi
	suite 18 "$pg18"
else
	tally "18 (build)" 0 1 0 "$build_time"
fi

rc=0
wait "$HEADERS17_PID" || rc=$?
HEADERS17_PID=
cat "$HEADERS17_LOG"
if [ "$rc" -eq 0 ] && inc17=$(cat "$INC17_OUT") && [ -d "$inc17" ]; then
	compile_only "17 (compile only)" "$inc17"
else
	tally "17 (compile only)" 0 1 0 0
fi

say "summary per PostgreSQL major ($(($((SECONDS - start)) / 60)) min in all)"
printf '%s\n' "${TALLY[@]}"
echo "$TOTAL_P passed, $TOTAL_F failed, $TOTAL_S skipped"
exit "$STATUS"
