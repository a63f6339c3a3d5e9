#!/usr/bin/env bash
# Runs zklock's whole test suite from a fresh clone on a fresh Debian 12
# machine: installs dependencies, builds and installs the extension, runs the
# pg_regress and isolation suites (make installcheck) against a private
# cluster and ZooKeeper, then the TAP tests in test/t.  Everything runs in a
# temporary copy of the tree; every server started is stopped by pid at exit.
# Unit tests of the pure code (test/unit) run after the build, before any server.
# The last line printed is "N passed, N failed"; the exit status is non-zero
# if anything failed.  ZKLOCK_KEEP_WORK=1 keeps the work directory even on
# success (it is always kept on failure, for the logs).  ZKLOCK_TAP=PATTERN
# runs only the TAP tests whose file names match the shell glob PATTERN
# (ZKLOCK_TAP=none: none), for a quicker round while developing.
set -euo pipefail

TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
ZKSERVER=$TOP/test/zkserver.sh
# shellcheck source-path=SCRIPTDIR source=lib/common.sh
. "$TOP/test/lib/common.sh"

PASSED=0
FAILED=0
WORK=
FAILED_STAGES=()

say() { printf '\n==== %s ====\n' "$*"; }

# shellcheck disable=SC2119 # no background children of its own to stop
cleanup_on_exit

stage_failed() {
	FAILED_STAGES+=("$1")
}

# Print "P F" for a pg_regress / pg_isolation_regress log (PostgreSQL 15
# prints one "test NAME ... ok|FAILED" line per test).  A run that failed
# without failing a test (say, it could not connect) counts as one failure.
count_pg_regress() {
	local log=$1 rc=$2 p f
	p=$(grep -cE '\.\.\. (ok|failed \(ignored\))( |$)' "$log" || true)
	f=$(grep -cE '\.\.\. FAILED' "$log" || true)
	[ "$rc" -eq 0 ] || [ "$f" -gt 0 ] || f=1
	echo "$p $f"
}

# Print "P F" for prove -v output: top-level "ok" lines pass; failures are
# summed from prove's "Failed X/Y subtests" (which also counts planned tests
# that never ran); to-do tests count for neither.  A failing prove run with
# nothing counted (a test died before any output) counts as one failure.
count_prove() {
	local log=$1 rc=$2 p f
	p=$(grep -E '^ok [0-9]+' "$log" | grep -cvi '# todo' || true)
	f=$(sed -nE 's/^Failed ([0-9]+)\/[0-9]+ subtests.*/\1/p' "$log" | awk '{s += $1} END {print s + 0}')
	[ "$rc" -eq 0 ] || [ "$f" -gt 0 ] || f=1
	echo "$p $f"
}

add_counts() {
	local p f
	read -r p f <<<"$1"
	PASSED=$((PASSED + p))
	FAILED=$((FAILED + f))
}

finish() {
	say "summary"
	if [ ${#FAILED_STAGES[@]} -gt 0 ]; then
		echo "failed: ${FAILED_STAGES[*]}"
	fi
	echo "$PASSED passed, $FAILED failed"
	[ "$FAILED" -eq 0 ] && [ ${#FAILED_STAGES[@]} -eq 0 ]
}

say "dependencies"
bash "$TOP/test/install-deps.sh"

PGXS_SRC=$(dirname "$(dirname "$("$PG_CONFIG" --pgxs)")")
PERL_TEST_LIB=$PGXS_SRC/test/perl
PG_REGRESS=$PGXS_SRC/test/regress/pg_regress

WORK=$(make_workdir zklock-test)
TREE=$WORK/tree
copy_tree "$TOP" "$TREE"
echo "work directory: $WORK (tests run as $RUN_USER)"
cd "$TREE"

say "build and install"
if ! "${AS_USER[@]}" make -C "$TREE" PG_CONFIG="$PG_CONFIG" -j"$(nproc)" ||
	! "${AS_ROOT[@]}" make -C "$TREE" PG_CONFIG="$PG_CONFIG" install ||
	! "${AS_USER[@]}" make -C "$TREE/test/tools"; then
	stage_failed build
	FAILED=$((FAILED + 1))
	finish
	exit 1
fi

# Unit tests of the pure code (test/unit), without a server: TAP through
# prove, counted like the TAP tests.
say "unit tests"
rc=0
run_logged "$WORK/unit.log" bash -c 'make -s -C "$1/test/unit" lock_rule_test &&
	cd "$1" && prove -v --exec "" test/unit/lock_rule_test' _ "$TREE" || rc=$?
add_counts "$(count_prove "$WORK/unit.log" "$rc")"
[ "$rc" -eq 0 ] || stage_failed unit

# PostgreSQL's habits (make check-static): sources formatted as pgindent
# formats them, a -Wall -Wextra build without a warning, cppcheck clean.
say "static checks"
if run_logged "$WORK/static.log" make -s -C "$TREE" PG_CONFIG="$PG_CONFIG" check-static; then
	PASSED=$((PASSED + 1))
else
	FAILED=$((FAILED + 1))
	stage_failed static-checks
fi

# Which suites the extension's Makefile defines (REGRESS, ISOLATION).
# shellcheck disable=SC2016 # $($*) is make syntax, not shell
printf 'print-%%:\n\t@echo $($*)\n' >"$WORK/printvar.mk"
make_var() {
	"${AS_USER[@]}" make -s --no-print-directory -C "$TREE" PG_CONFIG="$PG_CONFIG" \
		-f Makefile -f "$WORK/printvar.mk" "print-$1"
}
REGRESS_TESTS=$(make_var REGRESS)
ISOLATION_TESTS=$(make_var ISOLATION)

if [ -n "$REGRESS_TESTS$ISOLATION_TESTS" ]; then
	say "ZooKeeper and PostgreSQL for make installcheck"
	if ZK_CONNECT=$("${AS_USER[@]}" bash "$TREE/test/zkserver.sh" start "$WORK/zk" 1) &&
		pg_init "$WORK/pg" "$ZK_CONNECT" zklock_installcheck \
			"zklock.session_timeout = '10s'" "max_prepared_transactions = 10" &&
		pg_start "$WORK/pg"; then
		echo "ZooKeeper at $ZK_CONNECT; PostgreSQL on 127.0.0.1:$(cat "$WORK/pg/port"), socket in $WORK/pg"
		PGENV=(env PGHOST="$WORK/pg" PGPORT="$(cat "$WORK/pg/port")" PGUSER=postgres
			PATH="$PATH" make -C "$TREE" PG_CONFIG="$PG_CONFIG" installcheck TAP_TESTS=)

		if [ -n "$REGRESS_TESTS" ]; then
			say "pg_regress: $REGRESS_TESTS"
			rc=0
			run_logged "$WORK/regress.log" "${PGENV[@]}" ISOLATION= || rc=$?
			counts=$(count_pg_regress "$WORK/regress.log" "$rc")
			add_counts "$counts"
			if [ "$rc" -ne 0 ]; then
				stage_failed pg_regress
				if [ -f "$TREE/regression.diffs" ]; then
					say "regression.diffs (pg_regress)"
					head -n 500 "$TREE/regression.diffs"
				fi
			fi
		fi
		if [ -n "$ISOLATION_TESTS" ]; then
			say "isolation: $ISOLATION_TESTS"
			rc=0
			run_logged "$WORK/isolation.log" "${PGENV[@]}" REGRESS= || rc=$?
			counts=$(count_pg_regress "$WORK/isolation.log" "$rc")
			add_counts "$counts"
			if [ "$rc" -ne 0 ]; then
				stage_failed isolation
				if [ -f "$TREE/output_iso/regression.diffs" ]; then
					say "output_iso/regression.diffs (isolation)"
					head -n 500 "$TREE/output_iso/regression.diffs"
				fi
			fi
		fi
	else
		stage_failed installcheck-setup
		FAILED=$((FAILED + 1))
	fi
	if [[ " ${FAILED_STAGES[*]} " =~ \ (pg_regress|isolation|installcheck-setup)\  ]]; then
		say "tail of the PostgreSQL log"
		tail -n 60 "$WORK/pg/server.log" 2>/dev/null || true
		say "tail of the ZooKeeper log"
		tail -n 40 "$WORK/zk/zk1.log" 2>/dev/null || true
	fi
	pg_stop "$WORK/pg"
	bash "$ZKSERVER" stop "$WORK/zk"
else
	echo "no REGRESS or ISOLATION suites in the Makefile; skipping make installcheck"
fi

shopt -s nullglob
TAP_TESTS=()
for t in test/t/${ZKLOCK_TAP:-*}.pl; do
	[ -f "$t" ] && TAP_TESTS+=("$t")
done
shopt -u nullglob
if [ ${#TAP_TESTS[@]} -gt 0 ]; then
	say "TAP: ${TAP_TESTS[*]}"
	rc=0
	# What PostgreSQL::Test::Utils/Cluster expect from PGXS's prove_installcheck:
	# server binaries on PATH, PG_REGRESS for --config-auth, TESTDIR for
	# tmp_check; PG* variables would point the tests at the wrong server.
	# Without a terminal prove picks a formatter that holds each test's
	# output until it ends; the console one shows progress live in CI logs.
	run_logged "$WORK/prove.log" env -u PGHOST -u PGPORT -u PGUSER -u PGDATABASE \
		PATH="$PATH" PERL5LIB="$PERL_TEST_LIB:$TREE/test/lib" \
		PG_REGRESS="$PG_REGRESS" TESTDIR="$TREE" PG_CONFIG="$PG_CONFIG" \
		prove -v --formatter TAP::Formatter::Console "${TAP_TESTS[@]}" || rc=$?
	counts=$(count_prove "$WORK/prove.log" "$rc")
	add_counts "$counts"
	if [ "$rc" -ne 0 ]; then
		stage_failed prove
		sed -nE 's/^(test\/t\/[^ ]+\.pl) +\(Wstat.*/\1/p' "$WORK/prove.log" | while IFS= read -r t; do
			base=$(basename "$t" .pl)
			say "tail of tmp_check/log/regress_log_$base"
			tail -n 80 "$TREE/tmp_check/log/regress_log_$base" 2>/dev/null || true
			for f in "$TREE/tmp_check/log/${base}"_*.log; do
				[ -f "$f" ] || continue
				say "tail of ${f#"$TREE"/}"
				tail -n 40 "$f"
			done
		done
		for f in "$TREE"/tmp_check/zk_*/zk*.log; do
			[ -f "$f" ] || continue
			say "tail of ${f#"$TREE"/}"
			tail -n 25 "$f"
		done
	fi
else
	echo "no TAP tests in test/t; skipping prove"
fi

# The benchmark's smallest shape, so that it cannot rot; it asserts no time.
say "bench smoke"
rc=0
run_logged "$WORK/bench-smoke.log" bash "$TREE/bench/run.sh" --smoke || rc=$?
if [ "$rc" -eq 0 ]; then
	PASSED=$((PASSED + 1))
else
	FAILED=$((FAILED + 1))
	stage_failed "bench-smoke"
fi

finish
