# Fault: a holding cluster is shut down with `pg_ctl stop -m fast`.
#
# A holds L in session scope and L2 in an open transaction that inserted a
# row, and waits for LB, which B holds; B waits for L and L2 (20 s timeouts).  The fast shutdown terminates A's
# backends and the worker closes its ZooKeeper session after their releases:
# both lock directories empty within 10 s of the stop request (well under a second when idle) although the
# session timeout is 30 s, and B gets both locks; A's waiting node of LB
# goes as well.  When A starts again the
# open transaction's row is not there, and no session of the previous run
# is left to close (the clean shutdown removed zklock.session).
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
my $a = zklock_node('a', $zk, session_timeout => '30s');
my $b = zklock_node('b', $zk, session_timeout => '30s');
$a->safe_psql('postgres', 'CREATE TABLE work (tag text)');
is(zk_status_of($a)->{negotiated_timeout}, '30000', 'A negotiated a 30 s session timeout');

sub diag_state { diag_locks($_[0], $zk, [qw(L L2)], $b) }

my $s1 = bg_session($a);
is($s1->query_safe("SELECT zk_lock_acquire('L', '10s') > 0"), 't', 'A holds L in session scope');
my $s2 = bg_session($a);
is($s2->query_safe("BEGIN; SELECT zk_lock_acquire_xact('L2', '10s') > 0; INSERT INTO work VALUES ('open')"),
	't', 'A holds L2 in an open transaction with a row inserted');
my $old_session = $a->safe_psql('postgres', 'SELECT session_id FROM zk_status()');
my %a_node = map {
	$_ => $a->safe_psql('postgres', "SELECT znode FROM zk_locks WHERE name = '$_' AND state = 'held'")
} qw(L L2);
for my $name (qw(L L2))
{
	is(zk_stat($zk, $a_node{$name})->{ephemeralOwner}, $old_session, "A's node of $name belongs to A's session");
}

# A also waits for LB, which B holds: the waiting node goes too.
my $sbb = bg_session($b);
is($sbb->query_safe("SELECT zk_lock_acquire('LB', '10s') > 0"), 't', 'B holds LB');
my $b_lb_node = $b->safe_psql('postgres', "SELECT znode FROM zk_locks WHERE name = 'LB' AND state = 'held'");
my $s3 = bg_session($a);
my $s3_pid = $s3->query_safe('SELECT pg_backend_pid()');
$s3->query_until(qr/waiting\n/, "\\echo waiting\nSELECT zk_lock_acquire('LB', '60s');\n");
wait_until(sub {
	$a->safe_psql('postgres', "SELECT count(*) FROM zk_locks WHERE pid = $s3_pid AND state = 'waiting'") eq '1'
	  && zk_ls($zk, '/zklock/LB') == 2
}, 15, 'A queued for LB behind B');

my %waiter = map { $_ => queue_waiter($b, $zk, $_, '20s') } qw(L L2);

my $log_offset = -s $a->logfile;
my $t_stop = time;
$a->stop('fast');
my $stop_took = time - $t_stop;
note sprintf('pg_ctl stop -m fast took %.2f s', $stop_took);

my %gone_after;
wait_until(sub {
	my $now = time;
	for my $name (qw(L L2))
	{
		next if defined $gone_after{$name};
		$gone_after{$name} = $now - $t_stop
		  unless grep { $_ eq zk_base($a_node{$name}) } zk_ls($zk, "/zklock/$name");
	}
	keys %gone_after == 2;
}, 40, "A's nodes leave ZooKeeper");
for my $name (qw(L L2))
{
	cmp_ok($gone_after{$name} // 99, '<', $FREE_WITHIN_S,
		sprintf("A's node of $name is gone from ZooKeeper %.2f s after the stop request (session timeout 30 s)",
			$gone_after{$name} // 99))
	  or diag_state('after the stop');
}

wait_until(sub { zk_ls($zk, '/zklock/LB') == 1 }, 10, "A's waiting node of LB leaves ZooKeeper");
is(join(',', zk_ls($zk, '/zklock/LB')), zk_base($b_lb_node), "A's waiting node of LB is gone; B's holder node stays");

for my $name (qw(L L2))
{
	my ($at, $out, $err) = waiter_grant($waiter{$name});
	ok(defined $at, "B gets $name") or diag("B's waiter for $name: $out $err");
	cmp_ok(($at // 1e10) - $t_stop, '<', $FREE_WITHIN_S,
		sprintf("... %.2f s after the stop request", ($at // 1e10) - $t_stop));
	is(join(',', zk_ls($zk, "/zklock/$name")), zk_base(held_znode($b, $waiter{$name}{pid}, $name)),
		"only B's node is left for $name")
	  or diag_state($name);
}

my $log = slurp_file($a->logfile, $log_offset);
like($log, qr/shutting down; closing the ZooKeeper session/, 'A\'s worker closed its session at shutdown');
ok(!-e $a->data_dir . '/zklock.session', 'the clean shutdown removed zklock.session');

eval { $_->quit; 1 } for ($s1, $s2, $s3);
$sbb->query_safe("SELECT zk_lock_release('LB')");
$sbb->quit;

# A starts again: nothing of the previous run is left to close or commit.
$log_offset = -s $a->logfile;
$a->start;
wait_until(sub { $a->safe_psql('postgres', 'SELECT state FROM zk_status()') eq 'connected' }, 15,
	'A is connected again');
unlike(slurp_file($a->logfile, $log_offset), qr/previous server incarnation/,
	'after a clean shutdown no previous session is left to close');
is($a->safe_psql('postgres', "SELECT count(*) FROM work WHERE tag = 'open'"), '0',
	'the open transaction did not commit');
is($a->safe_psql('postgres', 'SELECT count(*) FROM zk_locks'), '0', 'A has no lock entry after the restart');
is($a->safe_psql('postgres', "SELECT zk_lock_try('L')"), 'f', 'A cannot take L while B holds it');

for my $name (qw(L L2))
{
	$waiter{$name}{s}->query_safe("SELECT zk_lock_release('$name')");
	$waiter{$name}{s}->quit;
}
is($a->safe_psql('postgres', "SELECT zk_lock_acquire('L', '5s') > 0 AND zk_lock_acquire('L2', '5s') > 0 AND zk_lock_release('L') AND zk_lock_release('L2')"),
	't', 'A takes both locks again after B released them');
for my $name (qw(L L2 LB))
{
	wait_until(sub { !zk_ls($zk, "/zklock/$name") }, 10, "the directory of $name empties");
	is(join(',', zk_ls($zk, "/zklock/$name")), '', "no orphan node left for $name");
}
is($a->safe_psql('postgres', 'SELECT count(*) FROM zk_locks') . $b->safe_psql('postgres', 'SELECT count(*) FROM zk_locks'),
	'00', 'no lock entry left in A or B');
diag(sprintf('fast stop took %.0f ms; A\'s nodes left ZooKeeper %.0f ms (L) and %.0f ms (L2) after the stop request',
	$stop_took * 1000, map { ($gone_after{$_} // 99) * 1000 } qw(L L2)));

done_testing();
