# The soak (make soak; a two-minute run in test/run_all.sh): two PostgreSQL
# clusters (a, b) on a three-server ZooKeeper ensemble, zklock's every kind
# of lock and scope under load for SOAK_SECONDS (default 1800), with faults
# on a schedule, and nothing may be lost: no overlap, no growth.
#
# Load, all the time:
#   - the mutual-exclusion checker (ZklockChecker) on lock 'counter':
#     SOAK_CHECKER_SESSIONS (3) sessions per cluster, exclusive, transaction
#     scope, through every fault;
#   - SOAK_SESSIONS (4) long-lived sessions per cluster, each one backend for
#     the whole run, calling soak_run(): a loop of random steps, each one
#     transaction, over exclusive and shared locks in both scopes, lock sets,
#     a semaphore of 2 permits in both scopes, tries and short timeouts
#     (lock_timeout 30 ms), and two locks taken in random
#     order across the clusters (deadlocks, which zklock's detection
#     breaks).  Every hold that commits is a row (lock, mode, start); the
#     commit's timestamp ends it;
#   - every SOAK_CANCEL_SECONDS (2) the test cancels (pg_cancel_backend) a
#     backend that zk_locks shows waiting.
# Faults, one every SOAK_FAULT_SECONDS (default SOAK_SECONDS / 30, at least
# 20), in turn: (1) the ZooKeeper leader killed (SIGKILL) and started again;
# (2) a cluster's zklock worker terminated (SIGTERM, pg_terminate_backend;
# a and b in turn); (3) b's connection to ZooKeeper cut (b reaches the
# ensemble through relays, test/tools/zkrelay.pl, silenced) for twice the
# session timeout, so that its session expires, then restored; (4) the
# whole ensemble restarted.
# Samples, one every SOAK_SAMPLE_SECONDS (default SOAK_SECONDS / 60, at
# least 2), between faults: the private resident memory (RssAnon of
# /proc/PID/status) of each cluster's worker and of every long-lived
# backend, zk_status().slots_used of each cluster, and the ZooKeeper nodes
# (mntr's zk_znode_count: zklock's root and ZooKeeper's own few; and
# zk_ephemerals_count: the contenders and semaphore leases).
#
# Verdict: the first third of the samples is warm-up; growth of a series is
# the mean of its last third less the mean of its second third, and it must
# not exceed a tolerance: 3 standard errors of that difference (the
# samples' own noise) plus 1024 kB for resident memory, 0.5 for counts.
# After the run: no two committed holds of a lock overlap ([start, commit]
# of every hold, both clusters: an exclusive hold overlaps no other, a
# shared hold no exclusive one, the semaphore never has more than 2), the
# checker's invariants hold (check_invariants), every slot is back
# (slots_used 0), no ephemeral node (contender, lease) is left in
# ZooKeeper, and no server crashed.  The figures are printed as diag lines ("soak: ...").
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::RealBin/../lib";
use ZklockTest;
use ZklockTest::Cleanup qw(@holders);
use ZklockTest::Command qw($tools_dir);
use ZklockChecker;
use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time sleep);

my $SECONDS = $ENV{SOAK_SECONDS} // 1800;
my $SAMPLE_S = $ENV{SOAK_SAMPLE_SECONDS} // ($SECONDS / 60 < 2 ? 2 : $SECONDS / 60);
my $FAULT_S = $ENV{SOAK_FAULT_SECONDS} // ($SECONDS / 30 < 20 ? 20 : $SECONDS / 30);
my $CANCEL_S = $ENV{SOAK_CANCEL_SECONDS} // 2;
my $SESSIONS = $ENV{SOAK_SESSIONS} // 4;
my $CHECKER_SESSIONS = $ENV{SOAK_CHECKER_SESSIONS} // 3;
my $TIMEOUT_S = 4;                   # zklock.session_timeout
my $SEM_PERMITS = 2;
my $RSS_FLOOR_KB = 1024;
my $COUNT_FLOOR = 0.5;

# ---------------------------------------------------------------------
# Servers: a three-server ensemble; a straight to it, b through relays
# ---------------------------------------------------------------------

my $zk = zk_start(3);
my @relay_ports = map { PostgreSQL::Test::Cluster::get_free_port() } 1 .. 3;
my $relay_dir = PostgreSQL::Test::Utils::tempdir('relay');
# Stopped at exit as the foreign holders are (a ZklockTest::Holder is no
# more than the process).
my $relay = bless {
	run => IPC::Run::start(
		[ 'perl', "$tools_dir/zkrelay.pl", map { "$relay_ports[$_]:$zk->{ports}[$_]" } 0 .. 2 ],
		'<', \undef, '>>', "$relay_dir/out", '2>>', "$relay_dir/out")
}, 'ZklockTest::Holder';
push @holders, $relay;

my $conf = checker_conf()
  . "deadlock_timeout = '200ms'\n"
  . "log_min_messages = warning\n"
  . "log_statement = none\n"
  . "log_line_prefix = '%m [%p] '\n";
my $na = zklock_node('a', $zk, session_timeout => "${TIMEOUT_S}s", conf => $conf);
my $nb = zklock_node('b', $zk, session_timeout => "${TIMEOUT_S}s", conf => $conf,
	hosts => join(',', map { "127.0.0.1:$_" } @relay_ports));
my @nodes = ($na, $nb);
for my $n (@nodes)
{
	wait_until(sub { zk_status_of($n)->{state} eq 'connected' }, 60, $n->name . ' is connected');
}

# Lines the faults cause on purpose, and what a cancel, a timeout or a
# deadlock makes the server log: none is a crash.
for my $n (@nodes)
{
	expect_in_log($n, qr/terminating background worker "zklock worker" due to administrator command/);
}

# ---------------------------------------------------------------------
# The workload: tables and soak_run() in each cluster
# ---------------------------------------------------------------------

for my $n (@nodes)
{
	my $cl = $n->name;
	$n->safe_psql('postgres', qq{
CREATE TABLE soak_hold (lock text NOT NULL, mode text NOT NULL, pid int NOT NULL,
	t_start timestamptz NOT NULL);
CREATE TABLE soak_step (step text NOT NULL, outcome text NOT NULL);
-- One step: a transaction that takes something, records each hold it got
-- (committed only if the transaction commits), sleeps a little and commits.
-- Session-scope holds are given back after the commit.  Errors are caught
-- (the step's outcome is its SQLSTATE); an error of COMMIT ends the CALL,
-- and the session's psql calls soak_run() again.
CREATE PROCEDURE soak_run(deadline timestamptz)
LANGUAGE plpgsql AS \$p\$
DECLARE
	k int;
	step text;
	outcome text;
	n1 text;
	n2 text;
	got boolean;
	session_scope boolean;
BEGIN
	-- What a previous CALL left (it ended at a COMMIT that failed).
	BEGIN
		PERFORM zk_lock_release_all();
	EXCEPTION WHEN OTHERS OR query_canceled THEN
		NULL;
	END;
	COMMIT;
	WHILE clock_timestamp() < deadline LOOP
		k := floor(random() * 11)::int;
		n1 := 'soak_x' || (1 + floor(random() * 3)::int);
		n2 := 'soak_x' || (1 + (substr(n1, 7)::int + floor(random() * 2)::int) % 3);
		outcome := 'ok';
		session_scope := k IN (1, 3, 7);
		step := (ARRAY['exclusive xact', 'exclusive session', 'shared xact', 'shared session',
			'exclusive xact rw', 'set xact', 'semaphore xact', 'semaphore session', 'try',
			'lock_timeout', 'deadlock'])[k + 1];
		BEGIN
			CASE k
			WHEN 0 THEN
				PERFORM zk_lock_acquire_xact(n1, '5s');
				INSERT INTO soak_hold VALUES (n1, 'x', pg_backend_pid(), clock_timestamp());
			WHEN 1 THEN
				PERFORM zk_lock_acquire(n1, '5s');
				INSERT INTO soak_hold VALUES (n1, 'x', pg_backend_pid(), clock_timestamp());
			WHEN 2 THEN
				PERFORM zk_lock_acquire_xact_shared('soak_rw', '5s');
				INSERT INTO soak_hold VALUES ('soak_rw', 's', pg_backend_pid(), clock_timestamp());
			WHEN 3 THEN
				PERFORM zk_lock_acquire_shared('soak_rw', '5s');
				INSERT INTO soak_hold VALUES ('soak_rw', 's', pg_backend_pid(), clock_timestamp());
			WHEN 4 THEN
				PERFORM zk_lock_acquire_xact('soak_rw', '5s');
				INSERT INTO soak_hold VALUES ('soak_rw', 'x', pg_backend_pid(), clock_timestamp());
			WHEN 5 THEN
				PERFORM zk_lock_acquire_xact(ARRAY[n1, n2], '5s');
				INSERT INTO soak_hold VALUES (n1, 'x', pg_backend_pid(), clock_timestamp()),
					(n2, 'x', pg_backend_pid(), clock_timestamp());
			WHEN 6 THEN
				PERFORM zk_semaphore_acquire_xact('soak_sem', $SEM_PERMITS, '5s');
				INSERT INTO soak_hold VALUES ('soak_sem', 'sem', pg_backend_pid(), clock_timestamp());
			WHEN 7 THEN
				PERFORM zk_semaphore_acquire('soak_sem', $SEM_PERMITS, '5s');
				INSERT INTO soak_hold VALUES ('soak_sem', 'sem', pg_backend_pid(), clock_timestamp());
			WHEN 8 THEN
				got := zk_lock_try_xact(n1);
				IF got THEN
					INSERT INTO soak_hold VALUES (n1, 'x', pg_backend_pid(), clock_timestamp());
				ELSE
					outcome := 'busy';
				END IF;
			WHEN 9 THEN
				-- No timeout argument: lock_timeout applies.
				PERFORM set_config('lock_timeout', '30ms', true);
				PERFORM zk_lock_acquire_xact(n1);
				INSERT INTO soak_hold VALUES (n1, 'x', pg_backend_pid(), clock_timestamp());
				PERFORM set_config('lock_timeout', '0', true);
			ELSE
				-- Two locks in random order: with the other sessions doing the
				-- same, in both clusters, deadlocks.
				IF random() < 0.5 THEN
					n1 := 'soak_d1';
					n2 := 'soak_d2';
				ELSE
					n1 := 'soak_d2';
					n2 := 'soak_d1';
				END IF;
				PERFORM zk_lock_acquire_xact(n1, '10s');
				INSERT INTO soak_hold VALUES (n1, 'x', pg_backend_pid(), clock_timestamp());
				PERFORM pg_sleep(0.05 + random() * 0.1);
				PERFORM zk_lock_acquire_xact(n2, '10s');
				INSERT INTO soak_hold VALUES (n2, 'x', pg_backend_pid(), clock_timestamp());
			END CASE;
			PERFORM pg_sleep(random() * 0.02);
		EXCEPTION WHEN OTHERS OR query_canceled THEN
			outcome := SQLSTATE;
		END;
		INSERT INTO soak_step VALUES (step, outcome);
		COMMIT;
		IF session_scope THEN
			BEGIN
				PERFORM zk_lock_release_all();
			EXCEPTION WHEN OTHERS OR query_canceled THEN
				NULL;
			END;
			COMMIT;
		END IF;
	END LOOP;
END
\$p\$;
});
}

my $started = time;
my $deadline = $started + $SECONDS;
my $deadline_sql = "to_timestamp($deadline)";

# The checker, on both clusters, for the whole run.
my $run = start_checker(
	nodes          => \@nodes,
	zk             => $zk,
	sessions       => $CHECKER_SESSIONS,
	iterations     => 1_000_000_000,
	duration       => $SECONDS,
	batch_timeout  => 90,
	max_restarts   => 1000,
	reconnect_wait => 90);

# The long-lived sessions: each runs soak_run() until the deadline, calling
# it again when a COMMIT failed (a lost lock), then prints soak-done.
my @workers;
for my $n (@nodes)
{
	for my $i (1 .. $SESSIONS)
	{
		my $s = bg_session($n, timeout => $SECONDS + 600);
		my $pid = $s->query_safe('SELECT pg_backend_pid()');
		# 1000 calls (18 kB, within a pipe's buffer): a CALL ends early
		# only when a COMMIT fails.
		$s->query_until(qr/started\n/,
			"\\set VERBOSITY verbose\n\\set d '$deadline_sql'\n\\echo started\n" . ("CALL soak_run(:d);\n" x 1000) . "\\echo soak-done\n");
		push @workers, { s => $s, pid => $pid, node => $n, tag => $n->name . $i };
	}
}
note 'soak: ' . scalar(@workers) . " long-lived sessions, pids " . join(',', map { $_->{pid} } @workers);

# ---------------------------------------------------------------------
# Sampling
# ---------------------------------------------------------------------

sub rss_anon_kb
{
	my ($pid) = @_;
	open(my $fh, '<', "/proc/$pid/status") or return undef;
	my ($kb) = map { /^RssAnon:\s+(\d+)/ ? $1 : () } <$fh>;
	close $fh;
	return $kb;
}

my %series;    # name => [ [t, value], ... ]
my $samples = 0;

sub sample
{
	my $t = time - $started;
	for my $n (@nodes)
	{
		my ($ret, $out) = $n->psql('postgres', 'SELECT slots_used, state FROM zk_status()');
		next unless $ret == 0;
		my ($used, $state) = split /\|/, $out;
		push @{ $series{ 'slots_used ' . $n->name } }, [ $t, $used ];
		my $w = worker_pid_os($n);
		my $kb = $w ne '' ? rss_anon_kb($w) : undef;
		push @{ $series{ 'RssAnon kB worker ' . $n->name } }, [ $t, $kb ] if defined $kb;
	}
	for my $w (@workers)
	{
		my $kb = rss_anon_kb($w->{pid});
		push @{ $series{"RssAnon kB backend $w->{tag}"} }, [ $t, $kb ] if defined $kb;
	}
	my $mntr = eval { zk_mntr($zk) };
	if ($mntr && defined $mntr->{zk_znode_count} && defined $mntr->{zk_ephemerals_count})
	{
		push @{ $series{'znodes'} }, [ $t, $mntr->{zk_znode_count} ];
		push @{ $series{'znodes ephemeral'} }, [ $t, $mntr->{zk_ephemerals_count} ];
	}
	$samples++;
	return;
}

# ---------------------------------------------------------------------
# Faults
# ---------------------------------------------------------------------

my %faults;    # kind => count
my @fault_log;

sub connected_all
{
	return !grep {
		my ($ret, $st) = $_->psql('postgres', 'SELECT state FROM zk_status()');
		$ret != 0 || $st ne 'connected'
	} @nodes;
}

sub leader
{
	for my $i (1 .. $zk->{n})
	{
		my $srvr = zk_fourlw($zk, 'srvr', $i) // next;
		return $i if $srvr =~ /^Mode: leader/m;
	}
	return undef;
}

my $worker_turn = 0;
my @fault_kinds = (
	[ 'leader kill' => sub {
		my $l;
		wait_until(sub { $l = leader(); defined $l }, 60, 'the ensemble has a leader') or return 'no leader';
		my $pid = slurp_file("$zk->{dir}/zk$l.pid") =~ s/\s+//gr;
		kill 'KILL', $pid;
		wait_until(sub { !kill(0, $pid) }, 30, "leader (server $l, pid $pid) gone");
		zk_stop_one($zk, $l);    # its pid file
		sleep 2;
		zk_start_one($zk, $l);
		return "server $l";
	} ],
	[ 'worker kill' => sub {
		my $n = $nodes[ $worker_turn++ % 2 ];
		my $w = worker_pid($n);
		my ($ret) = $n->psql('postgres', "SELECT pg_terminate_backend($w)");
		wait_until(sub { !kill(0, $w) }, 30, 'the worker exits');
		return $n->name . "'s worker $w";
	} ],
	[ 'connection cut' => sub {
		$relay->{run}->signal('USR1');
		sleep 2 * $TIMEOUT_S;
		$relay->{run}->signal('USR2');
		return sprintf('b cut from the ensemble for %d s', 2 * $TIMEOUT_S);
	} ],
	[ 'ZooKeeper restart' => sub {
		zk_stop($zk);
		sleep 1;
		zk_start_all($zk);
		return 'every server';
	} ],
);

sub inject_fault
{
	my ($i) = @_;
	my ($kind, $do) = @{ $fault_kinds[ $i % @fault_kinds ] };
	my $t0 = time;
	my $what = $do->();
	my $ok = wait_until(sub { connected_all() }, 120, "both clusters connected after $kind");
	my $t1 = time;
	$faults{$kind}++;
	push @fault_log, sprintf('%.0f s: %s (%s), connected again after %.1f s',
		$t0 - $started, $kind, $what, $t1 - $t0);
	note "soak: $fault_log[-1]";
	return $ok;
}

# ---------------------------------------------------------------------
# The run
# ---------------------------------------------------------------------

my ($next_sample, $next_fault, $next_cancel) = (time, time + $FAULT_S, time + $CANCEL_S);
my ($nfault, $cancels) = (0, 0);
my $all_healed = 1;
while (time < $deadline)
{
	if (time >= $next_fault && $deadline - time > $FAULT_S / 2)
	{
		$all_healed = 0 unless inject_fault($nfault++);
		$next_fault = time + $FAULT_S;
		# A sample right after a fault would see its aftermath only.
		$next_sample = time + $SAMPLE_S if $next_sample < time + $SAMPLE_S;
	}
	if (time >= $next_sample)
	{
		sample();
		$next_sample += $SAMPLE_S;
		$next_sample = time + $SAMPLE_S if $next_sample < time;
	}
	if (time >= $next_cancel)
	{
		my $n = $nodes[ int(rand(2)) ];
		my ($ret, $out) = $n->psql('postgres',
			"SELECT pg_cancel_backend(pid) FROM zk_locks WHERE state = 'waiting'"
			  . ' AND pid IN (' . join(',', map { $_->{pid} } grep { $_->{node} == $n } @workers)
			  . ') ORDER BY random() LIMIT 1');
		$cancels++ if $ret == 0 && $out eq 't';
		$next_cancel = time + $CANCEL_S;
	}
	sleep 0.2;
}
ok($all_healed, 'both clusters were connected again after every fault');

# ---------------------------------------------------------------------
# After the run
# ---------------------------------------------------------------------

my %call_errors;
for my $w (@workers)
{
	my $done = eval { $w->{s}->query_until(qr/soak-done\n/, ''); 1 };
	ok($done, "session $w->{tag} (pid $w->{pid}) ran to the end") or diag($@);
	$call_errors{$1}++ while $w->{s}{stderr} =~ /ERROR:\s+([0-9A-Z]{5}|[^\n]{0,40})/g;
	eval { $w->{s}->quit; 1 };
}
my $res = finish_checker($run);

# Growth: the mean of the last third less the mean of the second third.
sub mean_sd
{
	my @v = @_;
	my $m = 0;
	$m += $_ for @v;
	$m /= @v;
	my $ss = 0;
	$ss += ($_ - $m)**2 for @v;
	return ($m, @v > 1 ? sqrt($ss / (@v - 1)) : 0);
}

my @growth_lines;
for my $name (sort keys %series)
{
	my @v = map { $_->[1] } @{ $series{$name} };
	my $n3 = int(@v / 3);
	if ($n3 < 2)
	{
		fail("$name: too few samples (" . scalar(@v) . ')');
		next;
	}
	my ($m2, $s2) = mean_sd(@v[ $n3 .. 2 * $n3 - 1 ]);
	my ($m3, $s3) = mean_sd(@v[ @v - $n3 .. $#v ]);
	my $growth = $m3 - $m2;
	my $floor = $name =~ /^RssAnon/ ? $RSS_FLOOR_KB : $COUNT_FLOOR;
	my $tol = $floor + 3 * sqrt($s2**2 / $n3 + $s3**2 / $n3);
	my $line = sprintf('%s: %d samples, first %s, second third mean %.1f, last third mean %.1f,'
		  . ' growth %+.1f (tolerance %.1f), max %s',
		$name, scalar(@v), $v[0], $m2, $m3, $growth, $tol, (sort { $b <=> $a } @v)[0]);
	push @growth_lines, $line;
	note("soak: $name samples: " . join(' ', map { sprintf('%.0f:%s', @$_) } @{ $series{$name} }));
	ok($growth <= $tol, "no growth after warm-up: $line");
}

# Overlaps of the workload's holds, both clusters: [t_start, commit].
my @holds;
for my $n (@nodes)
{
	my $out = $n->safe_psql('postgres', q{
SELECT lock, mode, (extract(epoch FROM t_start) * 1000000)::bigint,
       (extract(epoch FROM pg_xact_commit_timestamp(xmin)) * 1000000)::bigint
  FROM soak_hold});
	for (split /\n/, $out)
	{
		my ($lock, $mode, $ts, $tc) = split /\|/;
		push @holds, { lock => $lock, mode => $mode, ts => $ts, tc => $tc, cluster => $n->name };
	}
}
# The checker's holds of 'counter' too.
push @holds, map { { lock => 'counter', mode => 'x', ts => $_->{ts}, tc => $_->{tc}, cluster => $_->{cluster} } }
  grep { defined $_->{tc} && $_->{tc} ne '' } @{ $res->{holds} };

my (%by_lock, @overlaps);
push @{ $by_lock{ $_->{lock} } }, $_ for @holds;
for my $lock (sort keys %by_lock)
{
	my @active;
	for my $h (sort { $a->{ts} <=> $b->{ts} } @{ $by_lock{$lock} })
	{
		@active = grep { $_->{tc} > $h->{ts} } @active;
		my @conflict =
		    $h->{mode} eq 'sem' ? (@active >= $SEM_PERMITS ? @active : ())
		  : $h->{mode} eq 's'   ? grep { $_->{mode} eq 'x' } @active
		  :                       @active;
		push @overlaps, sprintf('%s: %s hold of %s at %.6f overlaps %d', $lock, $h->{mode}, $h->{cluster},
			$h->{ts} / 1e6, scalar @conflict) if @conflict;
		push @active, $h;
	}
}
my %holds_by = map { $_ => scalar @{ $by_lock{$_} } } keys %by_lock;
is(scalar(@overlaps), 0, 'no two committed holds overlap (' . scalar(@holds) . ' holds, '
	  . join(', ', map { "$_ $holds_by{$_}" } sort keys %holds_by) . ')')
  or diag(join("\n", @overlaps[ 0 .. ($#overlaps < 19 ? $#overlaps : 19) ]));

check_invariants($res, orphan_wait => 60);

# Every slot back, no contender left in ZooKeeper.
for my $n (@nodes)
{
	ok(wait_until(sub { zk_status_of($n)->{slots_used} == 0 }, 60, $n->name . ': every slot back'),
		$n->name . ': every shared slot is back after the run (slots_used 0)');
}
# Contenders and leases are ephemeral nodes: none is left once every hold
# ended (lock and semaphore directories are container nodes, which
# ZooKeeper removes in its own time).
my $ephemerals;
ok(wait_until(sub { $ephemerals = zk_mntr($zk)->{zk_ephemerals_count}; $ephemerals == 0 }, 60,
		'no ephemeral node left'), 'no contender or lease node left in ZooKeeper after the run')
  or diag("ephemeral nodes: $ephemerals");

# ---------------------------------------------------------------------
# Figures
# ---------------------------------------------------------------------
my %steps;
for my $n (@nodes)
{
	for (split /\n/, $n->safe_psql('postgres', 'SELECT step, outcome, count(*) FROM soak_step GROUP BY 1, 2'))
	{
		my ($s, $o, $c) = split /\|/;
		$steps{$s}{$o} += $c;
	}
}
my $nsteps = 0;
for my $s (values %steps) { $nsteps += $_ for values %$s }
diag(sprintf('soak: %.0f s (SOAK_SECONDS %s), %d samples every %.1f s, %d faults every %.0f s (%s), %d cancels sent',
	time - $started, $SECONDS, $samples, $SAMPLE_S, $nfault, $FAULT_S,
	join(', ', map { "$_ $faults{$_}" } sort keys %faults), $cancels));
diag("soak: fault $_") for @fault_log;
diag("soak: $_") for @growth_lines;
diag(sprintf('soak: overlaps %d over %d committed holds (%s)', scalar(@overlaps), scalar(@holds),
	join(', ', map { "$_ $holds_by{$_}" } sort keys %holds_by)));
diag("soak: workload steps $nsteps: "
	  . join('; ', map { my $s = $_; "$s: " . join(' ', map { "$_ $steps{$s}{$_}" } sort keys %{ $steps{$s} }) } sort keys %steps));
diag(sprintf('soak: checker %d holds committed of %d attempts; errors: %s', $res->{committed}, $res->{attempts},
	join(', ', map { "$_ $res->{errors_by_step}{$_}" } sort keys %{ $res->{errors_by_step} }) || 'none'));
diag('soak: CALLs ended by an error (a failed COMMIT): '
	  . (join(', ', map { "$_ $call_errors{$_}" } sort keys %call_errors) || 'none'));
my %lost = map { $_->name => zk_status_of($_)->{lost} } @nodes;
diag('soak: locks lost (zk_status): ' . join(', ', map { "$_ $lost{$_}" } sort keys %lost));
done_testing();

