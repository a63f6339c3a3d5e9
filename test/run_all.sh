#!/usr/bin/env bash
# Runs zklock's whole test suite from a fresh clone on a fresh Debian 12
# machine: installs dependencies, builds and installs the extension, runs the
# pg_regress and isolation suites (make installcheck) against a private
# cluster and ZooKeeper, then the TAP tests in test/t.  Everything runs in a
# temporary copy of the tree; every server started is stopped by pid at exit.
# Unit tests of the pure code (test/unit) run after the build, before any server.
# The last stage builds the Debian package, installs it into the system and
# runs the pg_regress suite against it (test/package.sh).
# With the whole suite (no ZKLOCK_TAP) on 15, a two-minute soak
# (test/soak) runs after the TAP tests.
# The last line printed is "N passed, N failed"; the exit status is non-zero
# if anything failed.  ZKLOCK_KEEP_WORK=1 keeps the work directory even on
# success (it is always kept on failure, for the logs).  ZKLOCK_TAP=PATTERN
# runs only the TAP tests whose file names match the shell glob PATTERN
# (ZKLOCK_TAP=none: none), for a quicker round while developing; a pattern
# that matches no file is an error, and under CI (CI set, as .ci/run sets it)
# any selection is refused.  ZKLOCK_PACKAGE=skip leaves out the Debian
# package stage (it installs into the system), also refused under CI.
# PG_CONFIG=/path/to/pg_config runs against that PostgreSQL installation
# alone; with no PG_CONFIG, test/majors.sh runs the suite on every major
# this machine can test (Debian's 15, then 18 built from source, then a
# compile against 17's headers) and prints a tally per major
# (ZKLOCK_MAJORS=15: Debian's 15 alone).  The Debian package stage, the
# bench smoke and the static checks' format and cppcheck run on 15 only.
# The TAP tests run ZKLOCK_TAP_JOBS (default 2) at a time.
#
# A green run means every stage ran tests: a stage that runs none (an empty
# REGRESS or ISOLATION, a unit program that prints no test) fails; a TAP
# test skipped ("ok N # skip") counts as skipped, not passed, and under CI a
# skip fails the run; a BAIL_OUT counts one failure for each script it kept
# from running.
set -euo pipefail

TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
# With no PG_CONFIG, every major (test/majors.sh), unless ZKLOCK_MAJORS=15
# asks for Debian's 15 alone (README, "Supported PostgreSQL majors").
[ -n "${PG_CONFIG:-}" ] || [ "${ZKLOCK_MAJORS:-all}" != all ] || exec bash "$TOP/test/majors.sh"
ZKSERVER=$TOP/test/zkserver.sh
# shellcheck source-path=SCRIPTDIR source=lib/common.sh
. "$TOP/test/lib/common.sh"

PASSED=0
FAILED=0
SKIPPED=0
SKIPPED_SCRIPTS=()
PG_MAJOR=
WORK=
FAILED_STAGES=()

say() { printf '\n==== %s ==== (at %d s)\n' "$*" "$SECONDS"; }

# The package stage's script and the tail that shows its log, while they run.
PACKAGE_PID=
TAIL_PID=
cleanup_on_exit PACKAGE_PID TAIL_PID

stage_failed() {
	FAILED_STAGES+=("$1")
}

# Print "P F" for a pg_regress / pg_isolation_regress log (PostgreSQL 15
# prints one "test NAME ... ok|FAILED" line per test, 16 and later a TAP
# line "ok N - NAME" or "not ok N - NAME").  A run that failed without
# failing a test (say, it could not connect) counts as one failure.
count_pg_regress() {
	local log=$1 rc=$2 p f
	p=$(grep -cE '\.\.\. (ok|failed \(ignored\))( |$)|^ok [0-9]+ +- ' "$log" || true)
	f=$(grep -cE '\.\.\. FAILED|^not ok [0-9]+ +- ' "$log" || true)
	[ "$rc" -eq 0 ] || [ "$f" -gt 0 ] || f=1
	echo "$p $f"
}

# Print "P F S" for prove -v output: top-level "ok" lines pass, except
# skipped ones ("ok N # skip"), which are S; failures are summed from prove's
# "Failed X/Y subtests" (which also counts planned tests that never ran);
# to-do tests count for neither.  A failing prove run with nothing counted (a
# test died before any output) counts as one failure.  After a BAIL_OUT,
# prove runs no further script: each of them (the scripts given after the
# one that bailed, named in $3...) counts one failure.
count_prove() {
	local log=$1 rc=$2 p f s bailed
	shift 2
	p=$(grep -E '^ok [0-9]+' "$log" | grep -viE '# (todo|skip)' -c || true)
	s=$(grep -E '^ok [0-9]+' "$log" | grep -ciE '# skip' || true)
	# A script that skipped as a whole (plan skip_all) counts one skip.
	s=$((s + $(grep -cE '^\[[0-9:]+\] [^ ]+\.pl \.+ skipped:' "$log" || true)))
	f=$(sed -nE 's/^Failed ([0-9]+)\/[0-9]+ subtests.*/\1/p' "$log" | awk '{s += $1} END {print s + 0}')
	if grep -q '^Bailout called' "$log" || grep -q '^Bail out!' "$log"; then
		bailed=$(scripts_not_started "$log" "$@")
		echo "BAIL_OUT: $bailed script(s) never ran" >&2
		f=$((f + bailed))
	fi
	[ "$rc" -eq 0 ] || [ "$f" -gt 0 ] || f=1
	echo "$p $f $s"
}

# The scripts of a prove log (the file formatter's) that skipped, as a whole
# (plan skip_all) or some of their tests ("ok N # skip"), one per line.
skipped_scripts() {
	awk '/^\[[0-9:]+\] [^ ]+\.pl \.+ skipped:/ { print $2; next }
		/^\[[0-9:]+\] [^ ]+\.pl \.+ *$/ { cur = $2; next }
		tolower($0) ~ /^ok [0-9]+ # skip/ && cur != "" { print cur }' "$1" | sort -u
}

# Whether a script may skip on this major (test/expected-skips: "MAJOR
# SCRIPT REASON" lines, one list for the whole suite).
skip_expected() {
	awk -v m="$PG_MAJOR" -v t="$1" '$1 == m && $2 == t { found = 1 } END { exit !found }' \
		"$TOP/test/expected-skips"
}

# How many of the scripts named (after the log) prove never started: the
# console formatter prints "NAME .." when it starts one.
scripts_not_started() {
	local log=$1 n=0 t
	shift
	for t in "$@"; do
		grep -qF "$t .." "$log" || n=$((n + 1))
	done
	echo "$n"
}

# Add "P F [S]" to the tally.  A stage that passed no test and failed none
# ran nothing: that is a failure of its own (named in $2).
add_counts() {
	local p f s
	read -r p f s <<<"$1"
	PASSED=$((PASSED + p))
	FAILED=$((FAILED + f))
	SKIPPED=$((SKIPPED + ${s:-0}))
	if [ "$((p + f))" -eq 0 ]; then
		echo "stage $2 ran no test" >&2
		FAILED=$((FAILED + 1))
		stage_failed "$2 (no test ran)"
	fi
}

finish() {
	say "summary"
	if [ ${#FAILED_STAGES[@]} -gt 0 ]; then
		echo "failed: ${FAILED_STAGES[*]}"
	fi
	# The failed TAP tests and their failing lines, here at the end, where a
	# CI log cut to its last part still shows them.
	if [[ " ${FAILED_STAGES[*]} " == *" prove "* ]] && [ -f "$WORK/prove.log" ]; then
		# (|| true: head may close the pipe first, and pipefail would end
		# the run here, before its count.)
		sed -n '/^Test Summary Report/,/^Result:/p' "$WORK/prove.log" | head -n 30 || true
		grep -E '^[[:space:]]*not ok|^# +(Failed test|Looks like)|Bail ?out|Dubious' "$WORK/prove.log" |
			head -n 30 || true
	fi
	# Under CI a skip fails the run unless test/expected-skips names it for
	# this major; a skip outside the TAP scripts (none is expected) always.
	if [ -n "${CI:-}" ] && [ "$SKIPPED" -gt 0 ]; then
		local t unexpected=0 expected=0
		for t in "${SKIPPED_SCRIPTS[@]}"; do
			if skip_expected "$t"; then
				expected=$((expected + 1))
				echo "skipped as test/expected-skips says for $PG_MAJOR: $t"
			else
				unexpected=$((unexpected + 1))
				echo "skipped, and not in test/expected-skips for $PG_MAJOR: $t"
			fi
		done
		if [ "$unexpected" -gt 0 ] || [ "$SKIPPED" -gt "$expected" ]; then
			echo "CI runs every test: $SKIPPED skipped, $expected of them expected"
			FAILED_STAGES+=(skipped-under-ci)
		fi
	fi
	echo "$PASSED passed, $FAILED failed, $SKIPPED skipped"
	[ "$FAILED" -eq 0 ] && [ ${#FAILED_STAGES[@]} -eq 0 ]
}

# Under CI the whole suite runs: no selection of TAP tests, no stage left out.
if [ -n "${CI:-}" ] && [ -n "${ZKLOCK_TAP:-}" ]; then
	echo "CI is set but ZKLOCK_TAP selects tests ($ZKLOCK_TAP): CI runs the whole suite" >&2
	exit 1
fi
if [ -n "${CI:-}" ] && [ -n "${ZKLOCK_PACKAGE:-}" ]; then
	echo "CI is set but ZKLOCK_PACKAGE=$ZKLOCK_PACKAGE: CI runs the whole suite" >&2
	exit 1
fi

say "dependencies"
bash "$TOP/test/install-deps.sh"

PG_MAJOR=$("$PG_CONFIG" --version | sed -E 's/^PostgreSQL ([0-9]+).*/\1/')
# On 18 the upgrade test (054) moves clusters from 15 to it: the 15 it
# comes from (ZKLOCK_UPGRADE_FROM, its pg_config; default Debian's), with
# this zklock installed there too.
if [ "$PG_MAJOR" -ge 18 ] && [ -z "${ZKLOCK_UPGRADE_FROM:-}" ] &&
	[ -x /usr/lib/postgresql/15/bin/pg_config ]; then
	ZKLOCK_UPGRADE_FROM=/usr/lib/postgresql/15/bin/pg_config
fi
[ "$PG_MAJOR" -ge 18 ] || ZKLOCK_UPGRADE_FROM=
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
if [ -n "$ZKLOCK_UPGRADE_FROM" ]; then
	say "build and install into the upgrade's source ($("$ZKLOCK_UPGRADE_FROM" --version))"
	copy_tree "$TOP" "$WORK/tree-old"
	if ! "${AS_USER[@]}" make -C "$WORK/tree-old" PG_CONFIG="$ZKLOCK_UPGRADE_FROM" -j"$(nproc)" >/dev/null ||
		! "${AS_ROOT[@]}" make -C "$WORK/tree-old" PG_CONFIG="$ZKLOCK_UPGRADE_FROM" install >/dev/null; then
		stage_failed build-upgrade-source
		FAILED=$((FAILED + 1))
		finish
		exit 1
	fi
fi

# Unit tests of the pure code (test/unit), without a server: TAP through
# prove, counted like the TAP tests.
say "unit tests"
rc=0
run_logged "$WORK/unit.log" bash -c 'make -s -C "$1/test/unit" PG_CONFIG="$2" all &&
	cd "$1" && prove -v --exec "" $(make -s --no-print-directory -C test/unit print-tests | sed "s|^|test/unit/|")' _ "$TREE" "$PG_CONFIG" || rc=$?
add_counts "$(count_prove "$WORK/unit.log" "$rc")" unit
[ "$rc" -eq 0 ] || stage_failed unit

# The fuzz targets of every parser of data from ZooKeeper or from disk
# (test/fuzz), each for ZKLOCK_FUZZ_SECONDS (default 3) from the seed
# corpus: one TAP test per target, and a crash (a sanitizer's report or a
# broken property) fails it.  `make fuzz` runs them for longer.
say "fuzz"
rc=0
run_logged "$WORK/fuzz.log" bash -c 'make -s -C "$1/test/fuzz" PG_CONFIG="$2" all &&
	cd "$1" && FUZZ_SECONDS="$3" FUZZ_WORK="$4" prove -v --exec "bash test/fuzz/run.sh --tap" \
		$(make -s --no-print-directory -C test/fuzz print-targets | sed "s|^|test/fuzz/|")' \
	_ "$TREE" "$PG_CONFIG" "${ZKLOCK_FUZZ_SECONDS:-3}" "$WORK/fuzz" || rc=$?
add_counts "$(count_prove "$WORK/fuzz.log" "$rc")" fuzz
[ "$rc" -eq 0 ] || stage_failed fuzz

# PostgreSQL's habits (make check-static): sources formatted as pgindent
# formats them, a -Wall -Wextra build without a warning, cppcheck clean.
say "static checks"
# The format and cppcheck do not depend on the major: on 15 only.
LINT=yes
[ "$PG_MAJOR" = 15 ] || LINT=no
if run_logged "$WORK/static.log" make -s -C "$TREE" PG_CONFIG="$PG_CONFIG" LINT="$LINT" check-static; then
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
for suite in "REGRESS:$REGRESS_TESTS" "ISOLATION:$ISOLATION_TESTS"; do
	if [ -z "${suite#*:}" ]; then
		echo "the Makefile defines no ${suite%%:*} suite" >&2
		stage_failed "${suite%%:*} (empty)"
		FAILED=$((FAILED + 1))
	fi
done

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
			add_counts "$counts" pg_regress
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
			add_counts "$counts" isolation
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
# The TAP tests run ZKLOCK_TAP_JOBS at a time (default 2: most of their time
# is spent waiting, for ZooKeeper, a session expiry or a timeout; more at
# once on two cores made timing races in the tests likelier).  They can
# share the machine: each has its own nodes and ZooKeeper servers, in its
# own directories under tmp_check; PostgreSQL's ports are reserved under
# tmp_check/portlock (PostgreSQL::Test::Cluster) and ZooKeeper's in
# zkserver.sh's port directory, so no two take the same port.  The slowest
# start first, so that the last to end is short.  Those in TAP_ALONE run
# after the others, one at a time, alone on the machine (a reason each).
TAP_JOBS=${ZKLOCK_TAP_JOBS:-2}
# The slowest (each a minute or more on a quiet machine), slowest first.
TAP_FIRST=(010_mutex_checker 018_checker_under_faults 011_fault_leader 029_reload_and_outage
	004_no_orphans 005_unavailable 030_configuration 040_batch_jobs 003_no_herd 028_worker_loop
	020_interop_curator 026_data_directory_copies 016_fault_sigstop 035_revocation)
# Alone: these count ZooKeeper's requests against what a quiet run costs,
# or need a step done within a timeout; beside other tests on two cores a
# heartbeat more (the window runs longer), a JVM start of 20 s (the
# ensemble comes back too late) or a slow wait fails them.
#   001  at most one heartbeat in a 1.5 s window;
#   012  phase 1: three ZooKeeper servers restarted within D's 15 s timeout;
#   033  the requests one release costs against a baseline;
#   042  requests per acquire from the metrics equal to README's SQL;
#   043  a wait meant to end within deadlock_timeout (1 s) runs no check.
TAP_ALONE=(001_cross_cluster 012_fault_ensemble_down 033_semaphore 042_monitoring 043_deadlock)
TAP_PAR=()
TAP_SEQ=()
for t in "${TAP_FIRST[@]}"; do
	if [[ " ${TAP_TESTS[*]} " == *" test/t/$t.pl "* ]]; then
		TAP_PAR+=("test/t/$t.pl")
	fi
done
for t in "${TAP_TESTS[@]}"; do
	b=$(basename "$t" .pl)
	if [[ " ${TAP_ALONE[*]} " == *" $b "* ]]; then
		TAP_SEQ+=("$t")
	elif [[ " ${TAP_FIRST[*]} " != *" $b "* ]]; then
		TAP_PAR+=("$t")
	fi
done
if [ ${#TAP_TESTS[@]} -gt 0 ]; then
	say "TAP: ${TAP_TESTS[*]} (${#TAP_PAR[@]} at most $TAP_JOBS at a time, then ${#TAP_SEQ[@]} alone)"
	rc=0
	# What PostgreSQL::Test::Utils/Cluster expect from PGXS's prove_installcheck:
	# server binaries on PATH, PG_REGRESS for --config-auth, TESTDIR for
	# tmp_check; PG* variables would point the tests at the wrong server.
	# The file formatter prints each test's whole output, with its time, when
	# it ends (the console one, in parallel, prints only failures).
	PROVE=(env -u PGHOST -u PGPORT -u PGUSER -u PGDATABASE
		PATH="$PATH" PERL5LIB="$PERL_TEST_LIB:$TREE/test/lib"
		PG_REGRESS="$PG_REGRESS" TESTDIR="$TREE" PG_CONFIG="$PG_CONFIG"
		ZKLOCK_UPGRADE_FROM="$ZKLOCK_UPGRADE_FROM"
		prove -v --timer --formatter TAP::Formatter::File)
	if [ ${#TAP_PAR[@]} -gt 0 ]; then
		run_logged "$WORK/prove.log" "${PROVE[@]}" -j"$TAP_JOBS" "${TAP_PAR[@]}" || rc=$?
	fi
	if [ ${#TAP_SEQ[@]} -gt 0 ] && ! grep -qE '^(Bailout called|Bail out!)' "$WORK/prove.log" 2>/dev/null; then
		run_logged "$WORK/prove.log" "${PROVE[@]}" "${TAP_SEQ[@]}" || rc=$?
	fi
	counts=$(count_prove "$WORK/prove.log" "$rc" "${TAP_TESTS[@]}")
	add_counts "$counts" prove
	mapfile -t SKIPPED_SCRIPTS < <(skipped_scripts "$WORK/prove.log")
	if [ "$rc" -ne 0 ]; then
		stage_failed prove
		# The tests' logs: tmp_check/log up to 16, log from 17 on.
		sed -nE 's/^(test\/t\/[^ ]+\.pl) +\(Wstat.*/\1/p' "$WORK/prove.log" | while IFS= read -r t; do
			base=$(basename "$t" .pl)
			logdir=$TREE/tmp_check/log
			[ -d "$logdir" ] || logdir=$TREE/log
			say "tail of ${logdir#"$TREE"/}/regress_log_$base"
			tail -n 80 "$logdir/regress_log_$base" 2>/dev/null || true
			for f in "$logdir/${base}"_*.log; do
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
elif [ "${ZKLOCK_TAP:-}" = none ]; then
	echo "ZKLOCK_TAP=none: no TAP test run"
else
	echo "no TAP test in test/t matches ${ZKLOCK_TAP:-*}" >&2
	stage_failed "prove (no test matched)"
	FAILED=$((FAILED + 1))
fi

# The soak (test/soak/soak.pl; `make soak` runs it for 30 minutes): two
# clusters and a three-server ensemble under every kind of lock and scope,
# with faults on a schedule, for ZKLOCK_SOAK_SECONDS (default 120); memory,
# slots and nodes must not grow after warm-up, and no two holds overlap.
# Through prove, so that its assertions count in the tally.  It runs with
# the whole suite (no ZKLOCK_TAP selection, as under CI) or with
# ZKLOCK_SOAK=1, and on 15 only: it drives the same C code on every major,
# what differs between majors is covered by the TAP tests on each, and its
# two and a half minutes stay out of 18's run (the suite takes ~37 minutes
# on the two).
say "soak"
if [ "$PG_MAJOR" != 15 ]; then
	echo "the soak runs on PostgreSQL 15 only"
elif [ -n "${ZKLOCK_TAP:-}" ] && [ "${ZKLOCK_SOAK:-0}" != 1 ]; then
	echo "ZKLOCK_TAP selects TAP tests: the soak is left out (ZKLOCK_SOAK=1 runs it)"
else
	rc=0
	run_logged "$WORK/soak.log" env -u PGHOST -u PGPORT -u PGUSER -u PGDATABASE \
		PATH="$PATH" PERL5LIB="$PERL_TEST_LIB:$TREE/test/lib" \
		PG_REGRESS="$PG_REGRESS" TESTDIR="$TREE" PG_CONFIG="$PG_CONFIG" \
		SOAK_SECONDS="${ZKLOCK_SOAK_SECONDS:-120}" \
		prove -v --timer --formatter TAP::Formatter::File test/soak/soak.pl || rc=$?
	add_counts "$(count_prove "$WORK/soak.log" "$rc")" soak
	if [ "$rc" -ne 0 ]; then
		stage_failed soak
		logdir=$TREE/tmp_check/log
		[ -d "$logdir" ] || logdir=$TREE/log
		for f in "$logdir"/soak_*.log; do
			[ -f "$f" ] || continue
			say "tail of ${f#"$TREE"/}"
			tail -n 40 "$f"
		done
	fi
fi

# The explorer (test/explore; `make explore` runs it longer): generated
# programs across two clusters and a kazoo client, faults between steps,
# zklock's promises checked after each, for ZKLOCK_EXPLORE_SECONDS (default
# 180) in all: a fixed seed and a random one, both printed, one TAP test
# each.  Only the features whose defects are fixed on main are enabled
# (test/explore/README.md).  Like the soak: with the whole suite or with
# ZKLOCK_EXPLORE=1, and on 15 only (the same C code on every major).
say "explore"
if [ "$PG_MAJOR" != 15 ]; then
	echo "the explorer runs on PostgreSQL 15 only"
elif [ -n "${ZKLOCK_TAP:-}" ] && [ "${ZKLOCK_EXPLORE:-0}" != 1 ]; then
	echo "ZKLOCK_TAP selects TAP tests: the explorer is left out (ZKLOCK_EXPLORE=1 runs it)"
else
	rc=0
	run_logged "$WORK/explore.log" env PG_CONFIG="$PG_CONFIG" EXPLORE_SECONDS="${ZKLOCK_EXPLORE_SECONDS:-180}" \
		EXPLORE_FOUND="$WORK/explore-found" prove -v --timer --formatter TAP::Formatter::File \
		--exec "bash $TREE/test/explore/run.sh --tap" "$TREE/test/explore/explore.py" || rc=$?
	add_counts "$(count_prove "$WORK/explore.log" "$rc")" explore
	[ "$rc" -eq 0 ] || stage_failed explore
fi

# Every shape of the benchmark and its chart, at a tiny size, so that none
# can rot; it asserts no time.  The benchmark's scripts do not depend on the
# major: on 15 only, like the format and cppcheck.
say "bench smoke"
if [ "$PG_MAJOR" = 15 ]; then
	rc=0
	run_logged "$WORK/bench-smoke.log" bash "$TREE/bench/run.sh" --smoke || rc=$?
	if [ "$rc" -eq 0 ]; then
		PASSED=$((PASSED + 1))
	else
		FAILED=$((FAILED + 1))
		stage_failed "bench-smoke"
	fi
else
	echo "the bench smoke runs on PostgreSQL 15 only"
fi

# The Debian package (test/package.sh): built from the checkout with
# dpkg-buildpackage, installed with apt-get, the pg_regress suite run
# against the installed files, then the package removed and the system's
# zklock files put back.  It installs into the system, so it runs as root
# (or through sudo) rather than as the run user, and last, so that no other
# stage meets the package.  Its checks print pg_regress's result lines.
# It runs in the background, so that a signal to us stops it (and it, its
# servers) at once; tail shows its log meanwhile.
if [ "${ZKLOCK_PACKAGE:-}" = skip ]; then
	echo "ZKLOCK_PACKAGE=skip: the Debian package stage is left out"
	finish
	exit $?
fi
# The package is built for Debian's PostgreSQL (debian/pgversions): with
# another major under test it would test something else than this run.
if [ "$PG_MAJOR" != 15 ]; then
	echo "the Debian package stage runs on PostgreSQL 15 only"
	finish
	exit $?
fi
say "debian package"
rc=0
bash "$TOP/test/package.sh" >"$WORK/package.log" 2>&1 &
PACKAGE_PID=$!
tail -n +1 -f --pid="$PACKAGE_PID" "$WORK/package.log" &
TAIL_PID=$!
wait "$PACKAGE_PID" || rc=$?
wait "$TAIL_PID" || true
PACKAGE_PID=
TAIL_PID=
add_counts "$(count_pg_regress "$WORK/package.log" "$rc")" debian-package
[ "$rc" -eq 0 ] || stage_failed debian-package

finish
