#!/usr/bin/env bash
# Starts and stops throw-away ZooKeeper servers (Debian's `zookeeper` package)
# on free loopback ports, for zklock's tests.
#
#   test/zkserver.sh start DIR [N]        N=1: standalone; N>1: ensemble
#   test/zkserver.sh stop DIR             stop every server under DIR
#   test/zkserver.sh stop-one DIR I       stop server I, keep its data
#   test/zkserver.sh start-one DIR I [--no-quorum-wait]
#                                         restart server I with its old data
#   test/zkserver.sh cut DIR | heal DIR   silence or restore the relays of
#                                         ZK_RELAYED (below)
#
# Files under DIR: zk<I>/{zoo.cfg,log4j.properties,data/}, zk<I>.pid,
# zk<I>.port (client port), zk<I>.log (log4j), zk<I>.out (JVM stdout/stderr),
# connect (the connect string).  `start` prints the connect string and
# nothing else on success.
#
# Environment: JAVA (default: java on PATH), ZK_JAVA_DIR (default
# /usr/share/java), ZK_START_TIMEOUT (s, default 60), ZK_STOP_TIMEOUT (s,
# default 5, before SIGKILL), ZK_PRODUCTION (1: ZooKeeper's default
# tickTime and an fsync per write, as production runs it; the benchmark's
# setting), ZK_SYSTEM_PROPERTIES (Java system properties
# for the servers, e.g. "znode.container.checkIntervalMs=1000", separated by
# spaces), ZK_JVM_FLAGS (the servers' heap and GC flags; unset:
# "-Xmx256m -Xms32m -XX:+UseSerialGC", small and quick to start for the
# tests; the benchmark sets only -XX:+HeapDumpOnOutOfMemoryError, leaving
# heap and GC to the JVM's defaults, as Debian's zkServer.sh does),
# ZK_TICK_TIME and ZK_SYNC_LIMIT (tickTime in ms and syncLimit in
# ticks, instead of the defaults below), ZK_RELAYED (I: server I and its
# peers reach each other through TCP relays, test/tools/zkrelay.pl, which
# `cut` silences and `heal` restores; the clients' ports are not relayed).
set -euo pipefail

JAVA=${JAVA:-java}
ZK_JAVA_DIR=${ZK_JAVA_DIR:-/usr/share/java}
ZK_START_TIMEOUT=${ZK_START_TIMEOUT:-60}
ZK_STOP_TIMEOUT=${ZK_STOP_TIMEOUT:-5}
if [ "${ZK_PRODUCTION:-0}" = 1 ]; then
	TICK_TIME=2000
	FORCE_SYNC=yes
else
	TICK_TIME=500
	FORCE_SYNC=no
fi
TICK_TIME=${ZK_TICK_TIME:-$TICK_TIME}
SYNC_LIMIT=${ZK_SYNC_LIMIT:-10}
RELAYED=${ZK_RELAYED:-0}

die() { echo "zkserver.sh: $*" >&2; exit 1; }

usage() {
	sed -n '5,11p' "$0" | sed 's/^# \{0,1\}//' >&2
	exit 1
}

# Debian's zookeeper.jar names most of its dependencies in its manifest, but
# not a logging backend: add slf4j's log4j binding so zk<I>.log gets written.
classpath() {
	local cp="" j
	[ -r "$ZK_JAVA_DIR/zookeeper.jar" ] ||
		die "$ZK_JAVA_DIR/zookeeper.jar not found (is the zookeeper package installed?)"
	for j in zookeeper zookeeper-jute slf4j-api slf4j-log4j12 log4j-1.2 \
		netty-buffer netty-codec netty-common netty-handler netty-resolver \
		netty-transport netty-transport-native-epoll \
		netty-transport-native-unix-common metrics-core snappy-java \
		commons-cli commons-io jackson-annotations jackson-core jackson-databind; do
		[ -r "$ZK_JAVA_DIR/$j.jar" ] && cp="$cp${cp:+:}$ZK_JAVA_DIR/$j.jar"
	done
	echo "$cp"
}

# Print COUNT distinct TCP ports that are free on 127.0.0.1, reserved for
# the servers in DIR.  They are drawn at random below the kernel's ephemeral
# range (32768+), so a later outgoing connection cannot grab a port a server
# is restarted on.  Each port taken is reserved by a file in ZK_PORT_DIR
# (default zklock-ports in the temporary directory, shared by every run on
# the machine) naming DIR, under a lock: another start, in this test, a test
# run in parallel or another run, never takes it while DIR exists, even
# between the choice and the server's bind, or while a server of DIR is
# stopped to be restarted on it.
ZK_PORT_DIR=${ZK_PORT_DIR:-${TMPDIR:-/tmp}/zklock-ports}
free_ports() {
	if [ ! -d "$ZK_PORT_DIR" ]; then
		mkdir -p "$ZK_PORT_DIR" 2>/dev/null || true
		chmod 1777 "$ZK_PORT_DIR" 2>/dev/null || true
	fi
	perl -MSocket -MFcntl=:flock -e '
		my ($n, $dir, $owner) = @ARGV; my (%seen, @out);
		umask 0;
		open(my $lock, ">>", "$dir/.lock") or die "cannot open $dir/.lock: $!\n";
		flock($lock, LOCK_EX) or die "cannot lock $dir/.lock: $!\n";
		for (my $try = 0; @out < $n && $try < 2000; $try++) {
			my $p = 20000 + int(rand(12000));
			next if $seen{$p}++;
			my $rsv = "$dir/$p.rsv";
			if (open(my $r, "<", $rsv)) {
				my $held = <$r> // "";
				chomp $held;
				next if $held ne "" && -d $held;
			}
			socket(my $s, PF_INET, SOCK_STREAM, getprotobyname("tcp")) or die "socket: $!\n";
			my $free = bind($s, sockaddr_in($p, inet_aton("127.0.0.1")));
			close $s;
			next unless $free;
			open(my $w, ">", $rsv) or die "cannot write $rsv: $!\n";
			print $w "$owner\n";
			close $w;
			push @out, $p;
		}
		die "no free ports\n" if @out < $n;
		print "@out\n";' "$1" "$ZK_PORT_DIR" "$DIR"
}

# Send a four-letter word to 127.0.0.1:PORT and print the reply (bounded).
fourlw() {
	perl -MIO::Socket::INET -e '
		alarm 5;
		my $s = IO::Socket::INET->new(PeerAddr => "127.0.0.1", PeerPort => $ARGV[0],
			Proto => "tcp", Timeout => 3) or exit 1;
		print $s $ARGV[1];
		local $/; my $r = <$s>; print $r // "";' "$1" "$2" 2>/dev/null
}

# True if PID is a live (not zombie) ZooKeeper process using config CFG, so a
# recycled pid never gets signalled.
# A process that exists and is not a zombie.
is_alive() {
	local pid=$1 state
	[ -r "/proc/$pid/status" ] || return 1
	state=$(sed -n 's/^State:[[:space:]]*\([A-Z]\).*/\1/p' "/proc/$pid/status" 2>/dev/null) || return 1
	[ -n "$state" ] && [ "$state" != Z ]
}

is_our_server() {
	local pid=$1 cfg=$2
	is_alive "$pid" || return 1
	tr '\0' '\n' <"/proc/$pid/cmdline" 2>/dev/null | grep -qxF "$cfg"
}

show_logs() {
	local i=$1
	echo "---- tail of $DIR/zk$i.log ----" >&2
	tail -n 40 "$DIR/zk$i.log" >&2 2>/dev/null || true
	echo "---- tail of $DIR/zk$i.out ----" >&2
	tail -n 20 "$DIR/zk$i.out" >&2 2>/dev/null || true
}

server_count() {
	local n=0
	while [ -f "$DIR/zk$((n + 1))/zoo.cfg" ]; do n=$((n + 1)); done
	echo "$n"
}

# The quorum and election ports, "Q:E", at which server I reaches server J:
# their own, unless one of the two is ZK_RELAYED and the other is not; then
# those of J's relay, allocated after the servers' ports (relay of server J
# at 3N + 2(J-1)).
peer_ports() {
	local i=$1 j=$2 n=$3 k
	local -a ports=("${PORTS[@]}")
	if [ "$i" != "$j" ] && { [ "$i" = "$RELAYED" ] || [ "$j" = "$RELAYED" ]; }; then
		k=$((3 * n + 2 * (j - 1)))
		echo "${ports[$k]}:${ports[$((k + 1))]}"
	else
		echo "${ports[$(((j - 1) * 3 + 1))]}:${ports[$(((j - 1) * 3 + 2))]}"
	fi
}

# Start the relays of ZK_RELAYED: one per quorum and election port of each
# server, to its real port.
start_relays() {
	local n=$1 j k pairs=()
	local -a ports=("${PORTS[@]}")
	for ((j = 1; j <= n; j++)); do
		k=$((3 * n + 2 * (j - 1)))
		pairs+=("${ports[$k]}:${ports[$(((j - 1) * 3 + 1))]}" "${ports[$((k + 1))]}:${ports[$(((j - 1) * 3 + 2))]}")
	done
	perl "$(dirname "$0")/tools/zkrelay.pl" "${pairs[@]}" </dev/null >>"$DIR/relay.out" 2>&1 &
	echo $! >"$DIR/relay.pid"
}

relay_signal() {
	local pid
	[ -f "$DIR/relay.pid" ] || die "no relays in $DIR"
	pid=$(cat "$DIR/relay.pid")
	kill "-$1" "$pid" || die "relays (pid $pid) not running"
}

stop_relays() {
	[ -f "$DIR/relay.pid" ] || return 0
	kill -TERM "$(cat "$DIR/relay.pid")" 2>/dev/null || true
	rm -f "$DIR/relay.pid"
}

write_config() {
	local i=$1 n=$2 d="$DIR/zk$1" j
	local -a ports=("${PORTS[@]}")
	mkdir -p "$d/data"
	{
		echo "# Generated by test/zkserver.sh: throw-away test server $i of $n."
		# tickTime 500 ms lets clients negotiate session timeouts down to 1 s;
		# as in production (ZK_PRODUCTION=1), ZooKeeper's default of 2 s.
		echo "tickTime=$TICK_TIME"
		echo "initLimit=20"
		echo "syncLimit=$SYNC_LIMIT"
		echo "dataDir=$d/data"
		echo "clientPort=${ports[$(((i - 1) * 3))]}"
		echo "clientPortAddress=127.0.0.1"
		echo "maxClientCnxns=0"
		echo "minSessionTimeout=1000"
		echo "maxSessionTimeout=60000"
		echo "4lw.commands.whitelist=*"
		echo "admin.enableServer=false"
		# Test data is disposable: skip fsync for speed, unless the servers
		# are to run as production does.
		echo "forceSync=$FORCE_SYNC"
		if [ "$n" -gt 1 ]; then
			for ((j = 1; j <= n; j++)); do
				echo "server.$j=127.0.0.1:$(peer_ports "$i" "$j" "$n")"
			done
		fi
	} >"$d/zoo.cfg"
	[ "$n" -gt 1 ] && echo "$i" >"$d/data/myid"
	cat >"$d/log4j.properties" <<-EOF
		# Generated by test/zkserver.sh: server $i logs to one file, appended
		# across restarts so fault tests keep the whole history.
		log4j.rootLogger=INFO, FILE
		log4j.appender.FILE=org.apache.log4j.FileAppender
		log4j.appender.FILE.File=$DIR/zk$i.log
		log4j.appender.FILE.Append=true
		log4j.appender.FILE.layout=org.apache.log4j.PatternLayout
		log4j.appender.FILE.layout.ConversionPattern=%d{ISO8601} [myid:%X{myid}] %-5p [%t:%C{1}@%L] %m%n
	EOF
	echo "${ports[$(((i - 1) * 3))]}" >"$DIR/zk$i.port"
}

launch() {
	local i=$1 d="$DIR/zk$1" cp
	cp=$(classpath)
	# cwd = DIR so a JVM crash file lands there; stdin/stdout/stderr are
	# detached so a caller capturing our output never waits on the JVM.
	(
		cd "$DIR"
		props=()
		for p in ${ZK_SYSTEM_PROPERTIES:-}; do
			props+=("-D$p")
		done
		# shellcheck disable=SC2086 # the flags are words
		exec "$JAVA" "${props[@]}" ${ZK_JVM_FLAGS--Xmx256m -Xms32m -XX:+UseSerialGC} \
			-Djava.net.preferIPv4Stack=true \
			-Dzookeeper.log.dir="$DIR" -Dzookeeper.jmx.log4j.disable=true \
			-Dlog4j.configuration="file:$d/log4j.properties" \
			-cp "$cp" org.apache.zookeeper.server.quorum.QuorumPeerMain "$d/zoo.cfg"
	) </dev/null >>"$DIR/zk$i.out" 2>&1 &
	echo $! >"$DIR/zk$i.pid"
}

# Wait until every listed server answers ruok and, if wanted, reports a
# serving mode (standalone, leader or follower) in srvr.
wait_ready() {
	local want_mode=$1; shift
	local deadline=$((SECONDS + ZK_START_TIMEOUT)) i pending
	while :; do
		pending=()
		for i in "$@"; do
			local pid; pid=$(cat "$DIR/zk$i.pid")
			if ! is_our_server "$pid" "$DIR/zk$i/zoo.cfg"; then
				# Until the launching subshell has exec'd java, its command
				# line is still the shell's: alive means not started yet.
				if is_alive "$pid"; then
					pending+=("$i"); continue
				fi
				echo "zkserver.sh: ZooKeeper server $i exited during startup" >&2
				show_logs "$i"
				return 1
			fi
			local port; port=$(cat "$DIR/zk$i.port")
			if [ "$(fourlw "$port" ruok || true)" != imok ]; then
				pending+=("$i"); continue
			fi
			if [ "$want_mode" = yes ] &&
				! fourlw "$port" srvr | grep -qE '^Mode: (standalone|leader|follower)'; then
				pending+=("$i")
			fi
		done
		[ ${#pending[@]} -eq 0 ] && return 0
		if [ "$SECONDS" -ge "$deadline" ]; then
			echo "zkserver.sh: ZooKeeper server(s) ${pending[*]} not ready after ${ZK_START_TIMEOUT}s" >&2
			for i in "${pending[@]}"; do show_logs "$i"; done
			return 1
		fi
		sleep 0.2
	done
}

# TERM, then KILL after ZK_STOP_TIMEOUT seconds; returns once it is gone.
stop_server() {
	local i=$1 pidf="$DIR/zk$1.pid" pid n
	[ -f "$pidf" ] || return 0
	pid=$(cat "$pidf")
	if is_our_server "$pid" "$DIR/zk$i/zoo.cfg"; then
		kill -TERM "$pid" 2>/dev/null || true
		for ((n = 0; n < ZK_STOP_TIMEOUT * 10; n++)); do
			is_our_server "$pid" "$DIR/zk$i/zoo.cfg" || break
			sleep 0.1
		done
		if is_our_server "$pid" "$DIR/zk$i/zoo.cfg"; then
			kill -KILL "$pid" 2>/dev/null || true
			for ((n = 0; n < 100; n++)); do
				is_our_server "$pid" "$DIR/zk$i/zoo.cfg" || break
				sleep 0.1
			done
			is_our_server "$pid" "$DIR/zk$i/zoo.cfg" && die "server $i (pid $pid) survived SIGKILL"
		fi
	fi
	rm -f "$pidf"
}

stop_all() {
	local f i rc=0
	for f in "$DIR"/zk*.pid; do
		[ -e "$f" ] || continue
		i=${f##*/zk}; i=${i%.pid}
		stop_server "$i" || rc=1
	done
	stop_relays
	return $rc
}

cmd=${1:-}; [ $# -ge 2 ] || usage
case $cmd in
start) mkdir -p "$2" ;;
stop) [ -d "$2" ] || exit 0 ;;	# nothing was started there
stop-one | start-one | cut | heal) [ -d "$2" ] || die "no directory $2" ;;
*) usage ;;
esac
DIR=$(cd "$2" && pwd -P)

case $cmd in
start)
	N=${3:-1}
	[[ $N =~ ^[1-9]$ ]] || die "N must be 1..9, got '$N'"
	for f in "$DIR"/zk*.pid; do
		[ -e "$f" ] && die "servers already started in $DIR (found $f)"
	done
	command -v "$JAVA" >/dev/null || die "java not found (install default-jre-headless)"
	[[ $RELAYED =~ ^[0-9]$ ]] && [ "$RELAYED" -le "$N" ] || die "ZK_RELAYED must be 0..$N"
	nports=$((N * 3))
	[ "$RELAYED" != 0 ] && nports=$((N * 5))
	read -r -a PORTS <<<"$(free_ports $nports)"
	connect=""
	for ((i = 1; i <= N; i++)); do
		write_config "$i" "$N"
		connect="$connect${connect:+,}127.0.0.1:$(cat "$DIR/zk$i.port")"
	done
	echo "$connect" >"$DIR/connect"
	# Whatever happens before the servers are ready, stop what we started.
	trap 'stop_all || true' EXIT
	trap 'exit 130' INT TERM
	[ "$RELAYED" != 0 ] && start_relays "$N"
	for ((i = 1; i <= N; i++)); do launch "$i"; done
	wait_ready yes $(seq 1 "$N") || exit 1
	trap - EXIT INT TERM
	echo "$connect"
	;;
stop)
	stop_all
	;;
stop-one)
	[ $# -eq 3 ] || usage
	[ -f "$DIR/zk$3/zoo.cfg" ] || die "no server $3 in $DIR"
	stop_server "$3"
	;;
start-one)
	[ $# -ge 3 ] || usage
	i=$3
	[ -f "$DIR/zk$i/zoo.cfg" ] || die "no server $i in $DIR"
	if [ -f "$DIR/zk$i.pid" ] && is_our_server "$(cat "$DIR/zk$i.pid")" "$DIR/zk$i/zoo.cfg"; then
		die "server $i is already running"
	fi
	want_mode=yes
	[ "${4:-}" = --no-quorum-wait ] && want_mode=no
	trap 'stop_server "$i" || true' EXIT
	trap 'exit 130' INT TERM
	launch "$i"
	wait_ready "$want_mode" "$i" || exit 1
	trap - EXIT INT TERM
	;;
cut)
	relay_signal USR1
	;;
heal)
	relay_signal USR2
	;;
*)
	usage
	;;
esac
