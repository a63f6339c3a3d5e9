# Shell helpers shared by test/run_all.sh, test/demo.sh and bench/run.sh
# (sourced, not run): who runs PostgreSQL, a private work tree, throw-away
# clusters on loopback ports, stopping by pid everything started under a work
# directory, and the clean-up at exit that does it.
# Callers use `set -euo pipefail`; these functions expect it.
# shellcheck shell=bash
# shellcheck disable=SC2034 # PG_CONFIG, AS_ROOT, ... are for the callers

# The PostgreSQL to build and test against: PG_CONFIG from the environment
# (a pg_config in the bin directory of that installation), else Debian's 15.
PG_CONFIG=${PG_CONFIG:-/usr/lib/postgresql/15/bin/pg_config}
PGBIN=$(dirname "$PG_CONFIG")
export PATH="$PGBIN:$PATH"

# PostgreSQL refuses to run as root, and so do initdb, pg_regress's server
# and the TAP tests' Cluster.pm: as root, run all of them as the `postgres`
# account the postgresql package creates; otherwise as ourselves (with sudo
# only for `make install`).
if [ "$(id -u)" -eq 0 ]; then
	RUN_USER=postgres
	AS_USER=(runuser -u "$RUN_USER" --)
	AS_ROOT=()
else
	RUN_USER=$(id -un)
	AS_USER=()
	AS_ROOT=(sudo)
fi

# A fresh work directory (printed) the run user owns.
make_workdir() {
	local prefix=$1 dir
	dir=$(mktemp -d --tmpdir --suffix=".$prefix")
	chmod 755 "$dir"
	[ "$(id -u)" -ne 0 ] || chown "$RUN_USER:" "$dir"
	echo "$dir"
}

# Copy the source tree (without git data or build products) to DEST, owned by
# the run user, so builds and test outputs never land in the checkout and the
# unprivileged user can write them.
copy_tree() {
	local src=$1 dest=$2
	mkdir -p "$dest"
	tar -C "$src" --exclude=./.git --exclude='*.o' --exclude='*.so' --exclude='*.bc' \
		--exclude=./results --exclude=./output_iso --exclude=./tmp_check \
		--exclude=./log --exclude=./regression.diffs --exclude=./regression.out \
		--exclude=./test/tools/zkutil --exclude=./test/unit/lock_rule_test --exclude=./test/unit/waits_for_test --exclude=./test/unit/encode_test -cf - . | tar -C "$dest" -xf -
	[ "$(id -u)" -ne 0 ] || chown -R "$RUN_USER:" "$dest"
}

# A TCP port free on 127.0.0.1, drawn below the ephemeral range like
# zkserver.sh's, so outgoing connections never take it.
free_port() {
	perl -MSocket -e '
		for (1 .. 2000) {
			my $p = 20000 + int(rand(12000));
			socket(my $s, PF_INET, SOCK_STREAM, getprotobyname("tcp")) or die "socket: $!\n";
			if (bind($s, sockaddr_in($p, inet_aton("127.0.0.1")))) { print "$p\n"; exit 0 }
		}
		die "no free port\n";'
}

# pg_init DIR ZK_CONNECT NAME [CONF_LINE...]: initdb a cluster in DIR/data
# with zklock preloaded and pointed at ZK_CONNECT; loopback TCP on a free
# port (saved in DIR/port), Unix socket in DIR (the PGHOST to use).
pg_init() {
	local dir=$1 zk=$2 name=$3 port
	shift 3
	"${AS_USER[@]}" mkdir -p "$dir"
	"${AS_USER[@]}" "$PGBIN/initdb" -D "$dir/data" -U postgres -A trust \
		-E UTF8 --locale=C --no-sync >"$dir/initdb.log" 2>&1 ||
		{ cat "$dir/initdb.log" >&2; return 1; }
	port=$(free_port)
	echo "$port" >"$dir/port"
	{
		echo "# Added by zklock test/lib/common.sh"
		echo "cluster_name = '$name'"
		echo "listen_addresses = '127.0.0.1'"
		echo "port = $port"
		echo "unix_socket_directories = '$dir'"
		echo "shared_preload_libraries = 'zklock'"
		echo "zklock.hosts = '$zk'"
		echo "fsync = off"
		echo "log_line_prefix = '%m [%p] %q%a '"
		local line
		for line in "$@"; do echo "$line"; done
	} >>"$dir/data/postgresql.conf"
	[ "$(id -u)" -ne 0 ] || chown -R "$RUN_USER:" "$dir"
}

pg_start() {
	local dir=$1
	"${AS_USER[@]}" "$PGBIN/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 start >/dev/null ||
		{ echo "could not start the cluster in $dir; tail of its log:" >&2;
		  tail -n 30 "$dir/server.log" >&2 || true; return 1; }
}

# Stop the postmaster whose data directory is DATA: fast, then immediate,
# then SIGKILL by the pid in postmaster.pid; returns once it is gone.
pg_stop_data() {
	local data=$1 pid n
	[ -f "$data/postmaster.pid" ] || return 0
	pid=$(head -n 1 "$data/postmaster.pid")
	kill -0 "$pid" 2>/dev/null || return 0
	"${AS_USER[@]}" "$PGBIN/pg_ctl" -D "$data" -m fast -w -t 20 stop >/dev/null 2>&1 ||
		"${AS_USER[@]}" "$PGBIN/pg_ctl" -D "$data" -m immediate -w -t 10 stop >/dev/null 2>&1 ||
		true
	for ((n = 0; n < 50; n++)); do
		kill -0 "$pid" 2>/dev/null || return 0
		sleep 0.1
	done
	kill -KILL "$pid" 2>/dev/null || true
}

pg_stop() { pg_stop_data "$1/data"; }

# Stop by pid every PostgreSQL and ZooKeeper server whose files are under
# ROOT, including those TAP tests left behind if they were killed.
stop_all_under() {
	local root=$1 f d
	[ -d "$root" ] || return 0
	while IFS= read -r f; do
		pg_stop_data "$(dirname "$f")"
	done < <(find "$root" -name postmaster.pid -type f 2>/dev/null)
	while IFS= read -r d; do
		bash "$ZKSERVER" stop "$d" || true
	done < <(find "$root" -name 'zk*.pid' -type f -printf '%h\n' 2>/dev/null | sort -u)
}

# Run a command as the run user in its own session, output shown and
# appended to LOG, and wait for it, at most ZKLOCK_STAGE_TIMEOUT seconds
# (default 1800: a hung lock wait must not hang CI).  Its own session means a
# signal to us can end it and all it started (kill_current), and a
# terminal's Ctrl-C reaches us first.  Returns 124 on timeout.
CURRENT_PID=
run_logged() {
	local log=$1 rc=0 limit=${ZKLOCK_STAGE_TIMEOUT:-1800} start=$SECONDS
	shift
	setsid "${AS_USER[@]}" "$@" </dev/null > >(tee -a "$log") 2>&1 &
	CURRENT_PID=$!
	# Poll rather than run a watchdog process that would need cleaning up.
	while kill -0 "$CURRENT_PID" 2>/dev/null; do
		if [ $((SECONDS - start)) -ge "$limit" ]; then
			echo "timed out after ${limit}s: $*" | tee -a "$log" >&2
			kill_current
			return 124
		fi
		sleep 1
	done
	wait "$CURRENT_PID" || rc=$?
	CURRENT_PID=
	return $rc
}

# TERM the process group run_logged started (its pid is the group id), then
# KILL whatever is left of it after 10 s.
kill_current() {
	local n
	[ -n "$CURRENT_PID" ] || return 0
	kill -TERM -- "-$CURRENT_PID" 2>/dev/null || return 0
	for ((n = 0; n < 100; n++)); do
		kill -0 -- "-$CURRENT_PID" 2>/dev/null || { CURRENT_PID=; return 0; }
		sleep 0.1
	done
	kill -KILL -- "-$CURRENT_PID" 2>/dev/null || true
	CURRENT_PID=
}

# Stop a background child of this shell if it still runs: TERM, then wait.
stop_child() {
	local pid=$1
	if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
		kill -TERM "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	fi
}

# cleanup_on_exit [VAR...]: however the script ends (INT, TERM and HUP exit
# with 130, 143 and 129), first end what run_logged still runs and the
# background children whose pids are in the variables VAR (read at exit),
# then stop by pid every server under WORK (when set) and remove it if the
# script succeeded and ZKLOCK_KEEP_WORK is not 1; a kept one is named on
# stderr.  The exit status stays the script's.
CLEANUP_PIDS=()
cleanup_on_exit() {
	CLEANUP_PIDS=("$@")
	trap exit_cleanup EXIT
	trap 'exit 130' INT
	trap 'exit 143' TERM
	trap 'exit 129' HUP
}

exit_cleanup() {
	local rc=$? var
	trap - EXIT INT TERM HUP
	kill_current
	for var in "${CLEANUP_PIDS[@]}"; do
		stop_child "${!var}"
	done
	if [ -n "${WORK:-}" ]; then
		stop_all_under "$WORK"
		if [ "$rc" -eq 0 ] && [ "${ZKLOCK_KEEP_WORK:-0}" != 1 ]; then
			rm -rf "$WORK"
		else
			echo "work directory kept: $WORK" >&2
		fi
	fi
	exit "$rc"
}
