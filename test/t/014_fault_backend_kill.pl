# Fault: a backend of A that holds a lock is killed with SIGKILL.
#
# The postmaster crash-restarts A: every backend is killed, shared memory
# is reinitialised.  The new worker finds the previous incarnation's session
# in zklock.session and closes it, so the locks of every backend of the dead
# incarnation are free at once: ZooKeeper's lock directories empty within
# 10 s of the kill (well under a second when idle), although the session timeout is 30 s.  B's waiters (20 s
# timeouts, shorter than the session timeout) get the locks, and what the
# killed incarnation had not committed stays uncommitted.
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::RealBin/../lib";
use ZklockTest;
use Test::More;
use PostgreSQL::Test::Utils;
use Time::HiRes qw(time sleep);

# How soon the dead incarnation's locks must be free: in well under a
# second on an idle machine, seconds on a loaded one, and only after the 30 s
# session timeout if zklock did not close the old session.  A third of the
# timeout tells the two apart with room to spare.
my $FREE_WITHIN_S = 10;

my $zk = zk_start(1);
# PostgreSQL::Test::Cluster turns restart_after_crash off; a crash restart
# is the point here.
my $a = zklock_node('a', $zk, session_timeout => '30s', conf => 'restart_after_crash = on');
my $b = zklock_node('b', $zk, session_timeout => '30s');
$a->safe_psql('postgres', 'CREATE TABLE work (tag text)');
is(zk_status_of($a)->{negotiated_timeout}, '30000', 'A negotiated a 30 s session timeout');

sub diag_state { diag_locks($_[0], $zk, [qw(L L2)], $a, $b) }

# The victim holds L in session scope; another backend of A holds L2 in an
# open transaction that inserted a row.
my $victim = bg_session($a);
my $victim_pid = $victim->query_safe('SELECT pg_backend_pid()');
is($victim->query_safe("SELECT zk_lock_acquire('L', '10s') > 0"), 't', 'the victim backend holds L');
my $other = bg_session($a);
is($other->query_safe("BEGIN; SELECT zk_lock_acquire_xact('L2', '10s') > 0; INSERT INTO work VALUES ('uncommitted')"),
	't', 'another backend of A holds L2 in an open transaction with a row inserted');
my $old_session = $a->safe_psql('postgres', 'SELECT session_id FROM zk_status()');
my $l_node = $a->safe_psql('postgres', "SELECT znode FROM zk_locks WHERE name = 'L' AND state = 'held'");
my $l2_node = $a->safe_psql('postgres', "SELECT znode FROM zk_locks WHERE name = 'L2' AND state = 'held'");
is(zk_stat($zk, $l_node)->{ephemeralOwner}, $old_session, "L's node belongs to A's session");
is(zk_stat($zk, $l2_node)->{ephemeralOwner}, $old_session, "L2's node belongs to A's session");

# B waits for both.
my %waiter = map { $_ => queue_waiter($b, $zk, $_, '20s') } qw(L L2);

expect_crash_restart($a, qr/(?:server process|client backend) \(PID $victim_pid\) was terminated by signal 9: Killed/, 1);
my $log_offset = -s $a->logfile;
my $t_kill = time;
ok(kill('KILL', $victim_pid), "SIGKILL to the holding backend (pid $victim_pid)");

# ZooKeeper's view: A's nodes go at once, not after 30 s.
my %gone_after;
wait_until(sub {
	my $now = time;
	for my $pair ([ 'L', $l_node ], [ 'L2', $l2_node ])
	{
		my ($name, $node) = @$pair;
		next if defined $gone_after{$name};
		$gone_after{$name} = $now - $t_kill unless grep { $_ eq zk_base($node) } zk_ls($zk, "/zklock/$name");
	}
	keys %gone_after == 2;
}, 40, "A's nodes leave ZooKeeper");
for my $name (qw(L L2))
{
	cmp_ok($gone_after{$name} // 99, '<', $FREE_WITHIN_S,
		sprintf("A's node of $name is gone from ZooKeeper %.2f s after the kill (session timeout 30 s)",
			$gone_after{$name} // 99))
	  or diag_state('after the kill');
}

# B's waiters are granted, long before the session timeout.
for my $name (qw(L L2))
{
	my ($at, $out, $err) = waiter_grant($waiter{$name});
	ok(defined $at, "B's waiter is granted $name") or diag("B's waiter for $name: $out $err");
	cmp_ok(($at // 1e10) - $t_kill, '<', $FREE_WITHIN_S,
		sprintf("... %.2f s after the kill", ($at // 1e10) - $t_kill));
	is(join(',', zk_ls($zk, "/zklock/$name")), zk_base(held_znode($b, $waiter{$name}{pid}, $name)),
		"only B's node is left for $name")
	  or diag_state($name);
}

# A went through a crash restart and closed its previous session.
wait_until(sub { $a->psql('postgres', 'SELECT 1') == 0 }, 30, 'A accepts connections again');
wait_until(sub { $a->safe_psql('postgres', 'SELECT state FROM zk_status()') eq 'connected' }, 15,
	"A's new worker is connected");
my $log = slurp_file($a->logfile, $log_offset);
like($log, qr/(?:server process|client backend) \(PID $victim_pid\) was terminated by signal 9/, 'the postmaster saw the backend die');
like($log, qr/all server processes terminated; reinitializing/, 'A did a crash restart');
like($log, qr/closed ZooKeeper session \Q$old_session\E of the previous server incarnation/,
	'the new worker closed the previous incarnation\'s session');
isnt($a->safe_psql('postgres', 'SELECT session_id FROM zk_status()'), $old_session, 'A runs a new ZooKeeper session');
is($a->safe_psql('postgres', 'SELECT count(*) FROM zk_locks'), '0', 'A has no lock entry after the crash restart');
is($a->safe_psql('postgres', "SELECT count(*) FROM work WHERE tag = 'uncommitted'"), '0',
	'the open transaction of the dead incarnation did not commit');
is($a->safe_psql('postgres', "SELECT zk_lock_try('L')"), 'f', 'A cannot take L while B holds it');

eval { $_->quit; 1 } for ($victim, $other);
for my $name (qw(L L2))
{
	$waiter{$name}{s}->query_safe("SELECT zk_lock_release('$name')");
	$waiter{$name}{s}->quit;
}
is($a->safe_psql('postgres', "SELECT zk_lock_acquire('L', '5s') > 0 AND zk_lock_release('L')"), 't',
	'A takes L again after B released it');
for my $name (qw(L L2))
{
	wait_until(sub { !zk_ls($zk, "/zklock/$name") }, 10, "the directory of $name empties");
	is(join(',', zk_ls($zk, "/zklock/$name")), '', "no orphan node left for $name");
}
is($a->safe_psql('postgres', 'SELECT count(*) FROM zk_locks') . $b->safe_psql('postgres', 'SELECT count(*) FROM zk_locks'),
	'00', 'no lock entry left in A or B');
diag(sprintf('backend SIGKILL: A\'s nodes left ZooKeeper %.0f ms (L) and %.0f ms (L2) after the kill',
	map { ($gone_after{$_} // 99) * 1000 } qw(L L2)));

done_testing();
