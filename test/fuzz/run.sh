#!/usr/bin/env bash
# Runs zklock's fuzz targets (built by this directory's Makefile), each for
# FUZZ_SECONDS seconds (default 60), one after the other, from the seed
# corpus in seeds/<target>/ and the inputs earlier runs found in
# work/<target>/corpus/ (FUZZ_WORK moves work/).  Prints per target the
# inputs executed and the crashes: libFuzzer stops a target at its first
# crash (a sanitizer's report or a broken property), whose input it keeps
# in work/<target>/artifacts/, and run.sh names it.  --tap prints one TAP
# line per target instead, for test/run_all.sh (which runs it through
# prove, one target a script: a target may be named by its path).  The exit status is non-zero
# when a target crashed or did not run.
set -uo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")"
tap=no
if [ "${1:-}" = --tap ]; then
	tap=yes
	shift
fi
seconds=${FUZZ_SECONDS:-60}
work=${FUZZ_WORK:-work}
status=0
# At exit too (the frontend build leaks what a backend's memory context frees).
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0}
n=0
total_execs=0
total_crashes=0

# Hostile data too big for the tree, for the targets that read node data:
# JSON nested 200000 deep, and 1 MB (ZooKeeper's most) of keys.
hostile=$work/hostile
if [ ! -d "$hostile" ]; then
	mkdir -p "$hostile.tmp"
	{
		printf '{"system_identifier":"1","x":'
		head -c 200000 /dev/zero | tr '\0' '['
		head -c 200000 /dev/zero | tr '\0' ']'
		printf '}'
	} >"$hostile.tmp/deep"
	{
		printf '{"system_identifier":"1"'
		for _ in $(seq 1 1000); do printf ',"a":0'; done
		printf '}'
	} >"$hostile.tmp/keys"
	{
		printf '0100000a3f2c0005-7\n{"lock_dir":"/zklock/a","lock_node":"_c_x-lock-0000000001","czxid":1'
		for _ in $(seq 1 1000); do printf ',"czxid":"0"'; done
		printf '}'
	} >"$hostile.tmp/wait"
	mv "$hostile.tmp" "$hostile"
fi

[ "$tap" = no ] || echo "1..$#"
for t in "$@"; do
	t=${t##*/}
	n=$((n + 1))
	# Node data is at most 1 MB (ZooKeeper's jute.maxbuffer); names are short.
	extra=()
	case $t in
	contender_json_fuzz | waits_fuzz)
		max_len=1048576
		extra=("$hostile")
		;;
	session_file_fuzz) max_len=256 ;;
	*) max_len=4096 ;;
	esac
	dir=$work/$t
	mkdir -p "$dir/corpus" "$dir/artifacts"
	rm -f "$dir/artifacts/"*
	# Leaks are not crashes here: the backend's memory contexts free what
	# the frontend build leaks (the JSON targets check growth themselves).
	"./$t" -max_total_time="$seconds" -max_len="$max_len" -timeout=20 -rss_limit_mb=2048 \
		-detect_leaks=0 -print_final_stats=1 -artifact_prefix="$dir/artifacts/" \
		"$dir/corpus" "seeds/$t" "${extra[@]}" >"$dir/log" 2>&1
	rc=$?
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$dir/log" | tail -n 1)
	crashes=$(find "$dir/artifacts" -type f | wc -l)
	if [ -z "$execs" ]; then
		# A crash ends the run before the final statistics.
		execs=$(grep -oE '^#[0-9]+' "$dir/log" | tail -n 1 | tr -d '#')
	fi
	execs=${execs:-0}
	if [ "$rc" -ne 0 ] && [ "$crashes" -eq 0 ]; then
		crashes=1
	fi
	total_execs=$((total_execs + execs))
	total_crashes=$((total_crashes + crashes))
	what="$t: $execs inputs executed in ${seconds}s, $crashes crashes"
	if [ "$crashes" -gt 0 ]; then
		status=1
		what="$what (log: $dir/log; input: $(find "$dir/artifacts" -type f | head -n 1))"
	fi
	if [ "$tap" = yes ]; then
		[ "$crashes" -eq 0 ] && echo "ok $n - $what" || echo "not ok $n - $what"
		if [ "$crashes" -gt 0 ]; then
			grep -E 'ERROR|SUMMARY|property broken|runtime error' "$dir/log" | head -n 5 | sed 's/^/# /'
		fi
	else
		echo "$what"
	fi
done
if [ "$tap" = yes ]; then
	echo "# all targets: $total_execs inputs executed, $total_crashes crashes"
else
	echo "all targets: $total_execs inputs executed, $total_crashes crashes"
fi
exit $status
