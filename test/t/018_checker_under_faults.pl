# Every fault in sequence while one mutual-exclusion checker runs: three
# PostgreSQL clusters (a, b, c) on a 3-server ensemble, eight checker
# sessions each (ZklockChecker), zklock.session_timeout 4 s.  Without
# stopping the checker, the test injects in turn:
#   (1) the whole ensemble stopped for twice the session timeout, then
#       started again;
#   (2) SIGTERM of a's zklock worker (pg_terminate_backend): the worker is
#       restarted and reattaches;
#   (3) SIGKILL of a backend of b that holds 'counter': b crash-restarts and
#       its new worker closes the previous incarnation's session;
#   (4) pg_ctl stop -m fast of the cluster that holds 'counter', then start;
#   (5) SIGSTOP of a holding cluster's worker for twice the session timeout,
#       then SIGCONT: ZooKeeper expires its session meanwhile.
# After each fault the test waits until holds commit again (at least 100 in
# all and at least 10 in every cluster) before the next one.  At the end the
# checker's invariants hold over the whole run: no two committed holds
# overlap, no update is lost, tokens rise in grant order, every COMMIT a
# session saw succeed is a row and no failed one is, no session hung, and
# no node is left in ZooKeeper nor any request in a cluster.  Figures per
# fault (holds, times, errors by SQLSTATE) are printed.
#
# The checker's sessions live through faults of PostgreSQL itself: a
# session whose psql lost its connection (crash restart, fast stop) keeps
# trying to start a new one until its cluster accepts connections again,
# and zkc_read() opens a dblink connection again when the one it kept to a
# peer died with the peer's restart (while the peer is down the read fails
# and the transaction rolls back).  The test checks that no session gave up
# and that the restarted clusters' sessions committed again.
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::RealBin/../lib";
use ZklockTest;
use ZklockChecker;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time sleep);

my $TIMEOUT_S = 4;       # zklock.session_timeout
my $OUTAGE_S = 2 * $TIMEOUT_S;
my $RESUME_HOLDS = 100;  # holds to commit after a fault before the next one
my $RESUME_PER_CLUSTER = 10;

my $zk = zk_start(3);
my @nodes = map {
	zklock_node($_, $zk,
		session_timeout => "${TIMEOUT_S}s",
		# PostgreSQL::Test::Cluster turns restart_after_crash off; fault (3)
		# needs the crash restart.
		conf => checker_conf() . "restart_after_crash = on\n")
} qw(a b c);
my ($a, $b, $c) = @nodes;
is(join(',', map { $_->safe_psql('postgres', 'SELECT negotiated_timeout FROM zk_status()') } @nodes),
	'4000,4000,4000', 'every cluster negotiated a 4 s session timeout');

# ---------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------

sub accepts
{
	my ($node) = @_;
	return $node->psql('postgres', 'SELECT 1') == 0;
}

sub connected
{
	my ($node) = @_;
	# psql, not safe_psql: a cluster may go into recovery between two calls.
	my ($ret, $state) = $node->psql('postgres', 'SELECT state FROM zk_status()');
	return $ret == 0 && $state eq 'connected';
}

# The pid of a backend of $node that holds 'counter' now, '' if none.
sub counter_holder
{
	my ($node) = @_;
	my ($ret, $pid) = $node->psql('postgres',
		"SELECT pid FROM zk_locks WHERE name = 'counter' AND state = 'held' LIMIT 1");
	return $ret == 0 ? $pid : '';
}

# Committed holds per cluster.
sub counts
{
	return { map { $_->name => $_->safe_psql('postgres', 'SELECT count(*) FROM zkc_hold') } @nodes };
}

sub total
{
	my ($h) = @_;
	my $n = 0;
	$n += $_ for values %$h;
	return $n;
}

sub fmt_counts
{
	my ($h) = @_;
	return 'none' unless %$h;
	return join(', ', map { "$_: $h->{$_}" } sort keys %$h);
}

# ---------------------------------------------------------------------
# The checker
# ---------------------------------------------------------------------

my %session_before = map { $_->name => zk_status_of($_)->{session_id} } @nodes;
my $run = start_checker(
	nodes        => \@nodes,
	zk           => $zk,
	sessions     => 8,
	iterations   => 1_000_000,    # bounded by stop_checker, or by duration
	duration     => 600,    # a safety stop: the test stops the checker
	max_restarts => 10);

# What the sessions' psql reported so far, by level and SQLSTATE, read from
# their stderr files (verbose messages: "ERROR:  55P03: ..."; a NOTICE is
# a dblink connection found dead by zkc_read(), which then connects again).
sub psql_errors
{
	my %n;
	for my $f (glob "$run->{dir}/*.psql.log")
	{
		for my $line (split /\n/, slurp_file($f))
		{
			if ($line =~ /\b(ERROR|FATAL|PANIC|WARNING|NOTICE):\s+([0-9A-Z]{5}):/)
			{
				$n{"$1 $2"}++;
			}
			elsif ($line =~ /connection to server was lost/)
			{
				$n{'connection lost'}++;
			}
			elsif ($line =~ /^psql: error: /)
			{
				$n{'could not connect'}++;
			}
		}
	}
	return \%n;
}

sub delta
{
	my ($before, $after) = @_;
	my %d;
	for my $k (keys %$after)
	{
		my $n = $after->{$k} - ($before->{$k} // 0);
		$d{$k} = $n if $n > 0;
	}
	return \%d;
}

wait_until(sub { checker_progress($run) >= 200 }, 60, 'the checker is under way')
  or BAIL_OUT('the checker does not commit');

my @faults;

# Inject a fault while the checker runs.  $inject does it and undoes it,
# and returns (time injected, time healed, detail text).  Then wait until
# holds commit again in every cluster.
sub fault
{
	my ($name, $inject) = @_;
	my $before = counts();
	my $err0 = psql_errors();
	note "fault $name: injecting after " . total($before) . ' holds';
	my ($t_inject, $t_heal, $detail) = $inject->();
	my $at_heal = counts();
	my $now;
	# One more than asked: at most one of them (the hold under way when the
	# count was taken) can have been granted before the fault ended.
	my $resumed = wait_until(sub {
		$now = counts();
		total($now) > total($at_heal) + $RESUME_HOLDS
		  && !grep { $now->{$_} < $at_heal->{$_} + $RESUME_PER_CLUSTER } keys %$now;
	}, 60, "holds commit in every cluster after fault $name");
	my $t_resumed = time;
	my $f = {
		name      => $name,
		before    => total($before),
		at_heal   => total($at_heal),
		after     => total($now),
		per_after => { map { $_ => $now->{$_} - $at_heal->{$_} } keys %$now },
		t_inject  => $t_inject,
		t_heal    => $t_heal,
		t_resumed => $t_resumed,
		errors    => delta($err0, psql_errors()),
		detail    => $detail,
	};
	push @faults, $f;
	ok($resumed, sprintf('fault %s: holds commit again in every cluster (%d more, %.1f s after the fault ended)',
		$name, $f->{after} - $f->{at_heal}, $t_resumed - $t_heal));
	return $f;
}

# (1) The whole ensemble down for twice the session timeout.
fault('(1) ensemble down', sub {
	my $t0 = time;
	zk_stop($zk);
	wait_until(sub { !grep { zk_status_of($_)->{state} eq 'connected' } @nodes }, 10,
		'every cluster notices that the ensemble is gone');
	sleep($OUTAGE_S - (time - $t0)) if time - $t0 < $OUTAGE_S;
	my $t_start = time;
	zk_start_all($zk);
	wait_until(sub { !grep { !connected($_) } @nodes }, 30, 'every cluster connected after the outage');
	my $t1 = time;
	my @kept = grep { zk_status_of($_)->{session_id} eq $session_before{ $_->name } } @nodes;
	return ($t0, $t1, sprintf('ensemble down %.1f s, serving again %.1f s after the restart began;'
		  . ' clusters that kept their ZooKeeper session: %s',
		$t_start - $t0, $t1 - $t_start, join(',', map { $_->name } @kept) || 'none'));
});

# (2) SIGTERM of a's worker.
fault('(2) worker SIGTERM', sub {
	my $w1 = worker_pid($a);
	like($w1, qr/^\d+$/, "(2) a's worker runs (pid $w1)");
	my $s1 = zk_status_of($a)->{session_id};
	my $held = $a->safe_psql('postgres', "SELECT count(*) FROM zk_locks WHERE name = 'counter'");
	my $t0 = time;
	is($a->safe_psql('postgres', "SELECT pg_terminate_backend($w1)"), 't',
		'(2) pg_terminate_backend signals a\'s worker');
	wait_until(sub { !kill(0, $w1) }, 15, 'the old worker exits');
	my $w2;
	wait_until(sub { $w2 = worker_pid($a); $w2 ne '' && $w2 ne $w1 }, 15, 'a new worker runs');
	wait_until(sub { connected($a) }, 15, 'a\'s new worker is connected');
	my $t1 = time;
	my $s2 = zk_status_of($a)->{session_id};
	return ($t0, $t1, sprintf('worker %s replaced by %s, connected %.1f s after the signal; %d requests of a'
		  . ' for counter at the signal; ZooKeeper session %s',
		$w1, $w2, $t1 - $t0, $held, $s2 eq $s1 ? "kept ($s1)" : "new ($s1 -> $s2)"));
});

# (3) SIGKILL of a backend of b that holds 'counter': crash restart of b.
fault('(3) holding backend SIGKILL', sub {
	my $pid;
	wait_until(sub { $pid = counter_holder($b); $pid ne '' }, 30, 'a backend of b holds counter');
	my $s1 = zk_status_of($b)->{session_id};
	my $off = -s $b->logfile;
	expect_crash_restart($b, qr/(?:server process|client backend) \(PID $pid\) was terminated by signal 9: Killed/, 1);
	my $t0 = time;
	ok(kill('KILL', $pid), "(3) SIGKILL to b's backend $pid, which held counter");
	# Until its postmaster has reaped the backend, b still accepts: wait for
	# the crash restart to begin, then for b to accept again.
	wait_until(sub { slurp_file($b->logfile, $off) =~ /all server processes terminated; reinitializing/ }, 30,
		'b begins its crash restart');
	wait_until(sub { accepts($b) }, 30, 'b accepts connections after its crash restart');
	my $t_up = time;
	wait_until(sub { connected($b) }, 15, 'b\'s new worker is connected');
	my $t1 = time;
	my $log = slurp_file($b->logfile, $off);
	like($log, qr/(?:server process|client backend) \(PID $pid\) was terminated by signal 9/, '(3) b\'s postmaster saw the backend die');
	like($log, qr/all server processes terminated; reinitializing/, '(3) b did a crash restart');
	like($log, qr/closed ZooKeeper session \Q$s1\E of the previous server incarnation/,
		'(3) b\'s new worker closed the previous incarnation\'s session');
	return ($t0, $t1, sprintf('b accepted connections %.1f s after the kill, its worker was connected after %.1f s',
		$t_up - $t0, $t1 - $t0));
});

# (4) pg_ctl stop -m fast of the cluster holding 'counter', then start.
my $stopped;
fault('(4) fast stop', sub {
	wait_until(sub { ($stopped) = grep { counter_holder($_) ne '' } @nodes; defined $stopped }, 30,
		'a cluster holds counter');
	my $name = $stopped->name;
	my $off = -s $stopped->logfile;
	my $t0 = time;
	$stopped->stop('fast');
	my $t_down = time;
	like(slurp_file($stopped->logfile, $off), qr/shutting down; closing the ZooKeeper session/,
		"(4) $name\'s worker closed its session at shutdown");
	$stopped->start;
	wait_until(sub { connected($stopped) }, 30, "$name connected after its restart");
	my $t1 = time;
	return ($t0, $t1, sprintf('%s held counter; pg_ctl stop -m fast took %.1f s, %s was connected again'
		  . ' %.1f s after the stop request', $name, $t_down - $t0, $name, $t1 - $t0));
});

# (5) SIGSTOP of a holding cluster's worker past the session timeout.
my $frozen;
END { kill('CONT', $frozen) if $frozen; }
my $paused;
fault('(5) worker SIGSTOP', sub {
	wait_until(sub { ($paused) = grep { counter_holder($_) ne '' } @nodes; defined $paused }, 30,
		'a cluster holds counter');
	my $name = $paused->name;
	my $wpid = worker_pid($paused);
	like($wpid, qr/^\d+$/, "(5) $name\'s worker found (pid $wpid)");
	my $s1 = zk_status_of($paused)->{session_id};
	my $t0 = time;
	ok(kill('STOP', $wpid), "(5) SIGSTOP to $name\'s worker");
	$frozen = $wpid;
	wait_until(sub { proc_state($wpid) eq 'T' }, 5, 'the worker is stopped');
	sleep($OUTAGE_S - (time - $t0)) if time - $t0 < $OUTAGE_S;
	my $t_cont = time;
	ok(kill('CONT', $wpid), "(5) SIGCONT to $name\'s worker");
	$frozen = undef;
	wait_until(sub { connected($paused) && zk_status_of($paused)->{session_id} ne $s1 }, 30,
		"$name connected with a new ZooKeeper session after the thaw");
	my $t1 = time;
	return ($t0, $t_cont, sprintf('%s held counter; its worker was frozen %.1f s; connected with a new session'
		  . ' %.1f s after the thaw', $name, $t_cont - $t0, $t1 - $t_cont));
});

stop_checker($run);
my $res = finish_checker($run);

# Holds granted after each fault ended and committed before the next began
# (one machine clock on both sides).
for my $i (0 .. $#faults)
{
	my $f = $faults[$i];
	my $from = $f->{t_heal} * 1e6;
	my $to = ($i < $#faults ? $faults[ $i + 1 ]{t_inject} : time) * 1e6;
	my @after = grep { $_->{ts} >= $from && $_->{tc} ne '' && $_->{tc} <= $to } @{ $res->{holds} };
	my %by;
	$by{ $_->{cluster} }++ for @after;
	$f->{committed_after} = scalar @after;
	$f->{committed_by} = \%by;
	my @idle = grep { !$by{$_} } map { $_->name } @nodes;
	cmp_ok(scalar(@after), '>=', $RESUME_HOLDS,
		"fault $f->{name}: at least $RESUME_HOLDS holds granted after it ended were committed");
	ok(!@idle, "fault $f->{name}: every cluster committed holds after it ended")
	  or diag('clusters without holds: ' . join(', ', @idle));
}
# No session gave up: every one that lost its connection came back.
my @gave_up = grep { slurp_file($_) =~ /giving up/ } glob "$run->{dir}/*.notes";
ok(!@gave_up, 'no checker session gave up after losing its connection')
  or diag('sessions that gave up: ' . join(', ', map { m{([^/]+)\.notes$} } @gave_up));
# The sessions of the restarted clusters came back (through new psql).
my ($f3, $f4) = @faults[ 2, 3 ];
cmp_ok($f3->{committed_by}{b} // 0, '>', 0, 'b\'s sessions committed again after its crash restart');
cmp_ok($f4->{committed_by}{ $stopped->name } // 0, '>', 0,
	$stopped->name . '\'s sessions committed again after its fast stop and start');

check_invariants($res);

# ---------------------------------------------------------------------
# Figures
# ---------------------------------------------------------------------
for my $f (@faults)
{
	diag(sprintf('fault %s: %s', $f->{name}, $f->{detail}));
	diag(sprintf('  holds: %d before, %d committed during the fault (to its end), %d more %.1f s after the end'
		  . ' (by cluster: %s); committed holds granted after the end and before the next fault: %d (%s)',
		$f->{before}, $f->{at_heal} - $f->{before}, $f->{after} - $f->{at_heal},
		$f->{t_resumed} - $f->{t_heal}, fmt_counts($f->{per_after}),
		$f->{committed_after}, fmt_counts($f->{committed_by})));
	diag('  errors reported to the sessions from the injection to the resumption: ' . fmt_counts($f->{errors}));
}
my %after = map { $_->name => zk_status_of($_) } @nodes;
diag('locks lost (zk_status): ' . join(', ', map { "$_: $after{$_}{lost}" } sort keys %after)
	  . '; psql restarts: ' . $res->{restarts} . '; COMMITs of unknown outcome: ' . $res->{unknown});
diag(sprintf('checker: %d holds committed of %d attempts in %.1f s (%.0f holds/s); errors: %s',
	$res->{committed}, $res->{attempts}, $res->{elapsed}, $res->{holds_per_second},
	fmt_counts($res->{errors_by_step})));
diag("checker: $res->{figures}");

done_testing();
