# Fault: the zklock worker of a holding cluster dies.
#
# (1) pg_terminate_backend(worker): SIGTERM to the worker alone.  Shared
#     memory stays, the worker exits keeping its ZooKeeper session open
#     (locks are in use), and the restarted worker (about a second later)
#     reattaches to the same session: zk_status().session_id is unchanged,
#     L is still 'held' by the same node, B cannot take it, a transaction
#     that held a lock over the restart commits, a waiter queued before the
#     restart is granted when B releases, a request made while no worker
#     runs is served by the next one, and after A's release B gets L.
# (2) SIGKILL of the worker: the postmaster crash-restarts A (every backend
#     killed, shared memory reinitialised).  The new worker reattaches to the
#     previous session, found in the file zklock.session, only to close it:
#     A's node disappears from ZooKeeper at once, long before the session
#     timeout, which is set to 30 s so that the difference is unambiguous.
#     A waiter in B (20 s timeout, shorter than the session timeout) is
#     granted within a few seconds of the kill, and the log says that the
#     previous session was closed.
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::RealBin/../lib";
use ZklockTest;
use Test::More;
use PostgreSQL::Test::Utils;
use Time::HiRes qw(time sleep);

# How soon after the kill the dead incarnation's lock must be free.  A
# crash restart of an idle test cluster takes well under a second and the
# new worker closes the old session in a few milliseconds, but a loaded
# two-core machine can stretch a restart to seconds; without the close it
# would take the whole 30 s session timeout.  A third of that tells the two
# apart with room to spare.
my $FREE_WITHIN_S = 10;

my $zk = zk_start(1);
# PostgreSQL::Test::Cluster turns restart_after_crash off; (2) needs the
# crash restart.
my $a = zklock_node('a', $zk, session_timeout => '30s', conf => 'restart_after_crash = on');
my $b = zklock_node('b', $zk, session_timeout => '30s');
$a->safe_psql('postgres', 'CREATE TABLE work (tag text)');
my $dir = $a->safe_psql('postgres', "SELECT zk_lock_path('L')");

# The worker's pid as pg_stat_activity shows it ('' if it does not).
sub worker_pid_sql
{
	my ($node) = @_;
	my ($ret, $out) = $node->psql('postgres',
		"SELECT pid FROM pg_stat_activity WHERE backend_type = 'zklock worker'");
	return $ret == 0 ? $out : '';
}

sub diag_state { diag_locks($_[0], $zk, [qw(L)], $a, $b) }

is(zk_status_of($a)->{negotiated_timeout}, '30000', 'A negotiated a 30 s session timeout');

# ---------------------------------------------------------------------
# (1) SIGTERM to the worker alone.
# ---------------------------------------------------------------------
my $sa = bg_session($a);
my $sa_pid = $sa->query_safe('SELECT pg_backend_pid()');
is($sa->query_safe("SELECT zk_lock_acquire('L', '10s') > 0"), 't', '(1) A holds L in session scope');
my $znode = $a->safe_psql('postgres', "SELECT znode FROM zk_locks WHERE name = 'L' AND state = 'held'");
my $sx = bg_session($a);
$sx->query_safe('\set VERBOSITY verbose');
is($sx->query_safe("BEGIN; SELECT zk_lock_acquire_xact('LX', '10s') > 0; INSERT INTO work VALUES ('over-worker-restart')"),
	't', '(1) another session of A holds LX in an open transaction with a row inserted');

# A third session of A waits for LW, which B holds, across the restart.
my $sbw = bg_session($b);
is($sbw->query_safe("SELECT zk_lock_acquire('LW', '10s') > 0"), 't', '(1) B holds LW');
my $aw = bg_session($a);
my $aw_pid = $aw->query_safe('SELECT pg_backend_pid()');
$aw->query_until(qr/waiting\n/, "\\echo waiting\nSELECT 'granted', zk_lock_acquire('LW', '30s') > 0;\n");
wait_until(sub {
	# the node's name too: ZooKeeper may list it before the worker has
	# read the create's answer
	$a->safe_psql('postgres',
		"SELECT count(*) FROM zk_locks WHERE pid = $aw_pid AND state = 'waiting' AND znode IS NOT NULL") eq '1'
	  && zk_ls($zk, '/zklock/LW') == 2
}, 15, 'A waits for LW behind B');
my $aw_node = $a->safe_psql('postgres', "SELECT znode FROM zk_locks WHERE pid = $aw_pid AND name = 'LW'");

my $before = zk_status_of($a);
is($before->{state}, 'connected', '(1) A is connected');
my $w1 = worker_pid_os($a);
like($w1, qr/^\d+$/, "(1) A's worker runs (pid $w1)");
is(worker_pid_sql($a), $w1, "(1) pg_stat_activity shows A's worker with backend_type 'zklock worker'");
ok(-f $a->data_dir . '/zklock.session', '(1) the session is recorded in zklock.session');
is(zk_stat($zk, $znode)->{ephemeralOwner}, $before->{session_id}, "(1) L's node belongs to A's session");

my $log_offset = -s $a->logfile;
my $t_term = time;
my ($ret, $term_out, $term_err) = $a->psql('postgres', "SELECT pg_terminate_backend($w1)");
is($term_out, 't', '(1) pg_terminate_backend(worker pid) signals the worker')
  or diag("pg_terminate_backend($w1): $term_out $term_err");
# Without pg_terminate_backend, the same signal sent directly, so that the
# worker's behaviour on SIGTERM is still checked.
if ($term_out ne 't' && kill(0, $w1))
{
	note("sending SIGTERM to the worker directly");
	kill('TERM', $w1);
}
my $t_old_gone;
wait_until(sub { $t_old_gone = time; !kill(0, $w1) }, 15, 'the old worker exits');
# While no worker runs: the session lives on in ZooKeeper, and a new
# request waits for the next worker.
my $an = bg_session($a);
$an->query_until(qr/asking\n/, "\\echo asking\nSELECT 'granted', zk_lock_acquire('LN', '20s') > 0;\n");
my $gap_worker = worker_pid_os($a);
my $gap_kids = join(',', zk_ls($zk, $dir));
my $gap_note = $gap_worker eq '' ? 'no worker running' : "a new worker, pid $gap_worker, had already started";
is($gap_kids, zk_base($znode), "(1) while the worker is away, A's node of L stays in ZooKeeper ($gap_note)");
wait_until(sub { my $p = worker_pid($a); $p ne '' && $p ne $w1 }, 15, 'a new worker runs');
my $w2 = worker_pid($a);
isnt($w2, $w1, "(1) the worker was restarted (pid $w2)");
ok(!kill(0, $w1), '(1) the old worker is gone');
wait_until(sub { zk_status_of($a)->{state} eq 'connected' }, 15, 'the new worker is connected');
my $t_back = time;
my $after = zk_status_of($a);
is($after->{session_id}, $before->{session_id}, '(1) the new worker reattached to the same ZooKeeper session');
my $log = slurp_file($a->logfile, $log_offset);
like($log, qr/exiting with locks in use; the next worker reattaches to ZooKeeper session \Q$before->{session_id}\E/,
	'(1) the old worker logged that it kept the session');
like($log, qr/reattaching to ZooKeeper session \Q$before->{session_id}\E/,
	'(1) the new worker logged the reattach');
unlike($log, qr/previous server incarnation/, '(1) no crash restart took place');

is($a->safe_psql('postgres', "SELECT state || ' ' || znode FROM zk_locks WHERE pid = $sa_pid AND name = 'L'"),
	"held $znode", '(1) L is still held by the same node in zk_locks');
is(join(',', zk_ls($zk, $dir)), zk_base($znode), "(1) ZooKeeper still has A's node, alone")
  or diag_state('(1)');
is(zk_stat($zk, $znode)->{ephemeralOwner}, $before->{session_id}, "(1) ... owned by A's session");
is($b->safe_psql('postgres', "SELECT zk_lock_try('L')"), 'f', '(1) B cannot take L');
is($sa->query_safe("SELECT zk_lock_check('L')"), 't', '(1) zk_lock_check(L) is true in A');

# A transaction that held a lock across the worker restart commits.
$sx->query('COMMIT');
is($sx->{stderr}, '', '(1) the transaction that held LX over the worker restart commits');
$sx->{stderr} = '';
is($a->safe_psql('postgres', "SELECT count(*) FROM work WHERE tag = 'over-worker-restart'"), '1',
	'(1) its row is committed');
$sx->quit;

# The request made while no worker ran is served by the new worker.
my ($an_out) = $an->query("SELECT 'sync'");
like($an_out, qr/^granted\|t$/m, "(1) a request made between the workers ($gap_note) is granted")
  or diag("request during the gap: $an_out $an->{stderr}");
$an->query_safe("SELECT zk_lock_release('LN')");
$an->quit;

# The waiter queued before the restart is granted when B releases.
is(join(',', sort(zk_ls($zk, '/zklock/LW'))) =~ /\Q${\ zk_base($aw_node)}\E/ ? 1 : 0, 1,
	'(1) the waiter\'s node survived the restart');
is($a->safe_psql('postgres', "SELECT state FROM zk_locks WHERE pid = $aw_pid AND name = 'LW'"), 'waiting',
	'(1) the waiter is still waiting after the restart');
my $t_rel = time;
$sbw->query_safe("SELECT zk_lock_release('LW')");
my ($aw_out) = $aw->query("SELECT 'sync'");
my $aw_wait = time - $t_rel;
like($aw_out, qr/^granted\|t$/m, '(1) the waiter queued before the restart is granted after B\'s release')
  or diag("waiter: $aw_out $aw->{stderr}");
cmp_ok($aw_wait, '<', $FREE_WITHIN_S,
	sprintf('(1) ... at once (%.2f s), not by a session expiry', $aw_wait));
$aw->query_safe("SELECT zk_lock_release('LW')");
$aw->quit;
$sbw->quit;

# A releases, B gets L.
is($sa->query_safe("SELECT zk_lock_release('L')"), 't', '(1) A releases L');
is($b->safe_psql('postgres', "SELECT zk_lock_acquire('L', '5s') > 0 AND zk_lock_release('L')"), 't',
	'(1) then B gets L');
wait_until(sub { !zk_ls($zk, $dir) }, 10, 'L\'s directory empties');
is(join(',', zk_ls($zk, $dir)), '', '(1) no node left for L');
is(join(',', zk_ls($zk, '/zklock/LX')), '', '(1) no node left for LX');
wait_until(sub { !zk_ls($zk, '/zklock/LW') && !zk_ls($zk, '/zklock/LN') }, 10, 'LW and LN empty');
is(join(',', zk_ls($zk, '/zklock/LW'), zk_ls($zk, '/zklock/LN')), '', '(1) no node left for LW or LN');

# ---------------------------------------------------------------------
# (2) SIGKILL of the worker: crash restart.
# ---------------------------------------------------------------------
is($sa->query_safe("SELECT zk_lock_acquire('L', '10s') > 0"), 't', '(2) A holds L again');
$znode = $a->safe_psql('postgres', "SELECT znode FROM zk_locks WHERE name = 'L' AND state = 'held'");
my $old_session = zk_status_of($a)->{session_id};
is(zk_stat($zk, $znode)->{ephemeralOwner}, $old_session, "(2) L's node belongs to A's session $old_session");

my $sb = bg_session($b);
$sb->query_safe('\set VERBOSITY verbose');
my $sb_pid = $sb->query_safe('SELECT pg_backend_pid()');
$sb->query_until(qr/waiting\n/,
	"\\echo waiting\nSELECT 'granted', zk_lock_acquire('L', '20s') > 0, extract(epoch FROM clock_timestamp());\n");
wait_until(sub {
	$b->safe_psql('postgres', "SELECT count(*) FROM zk_locks WHERE pid = $sb_pid AND state = 'waiting'") eq '1'
	  && zk_ls($zk, $dir) == 2
}, 15, 'B queued behind A');

my $wk = worker_pid($a);
expect_crash_restart($a, qr/background worker "zklock worker" \(PID $wk\) was terminated by signal 9: Killed/, 1);
$log_offset = -s $a->logfile;
my $t_kill = time;
ok(kill('KILL', $wk), "(2) SIGKILL to A's worker (pid $wk)");

# ZooKeeper's view: A's node goes long before the 30 s session timeout.
my $t_gone;
wait_until(sub { my @k = zk_ls($zk, $dir); $t_gone = time; !grep { $_ eq zk_base($znode) } @k }, 30,
	"A's node leaves ZooKeeper");
my $gone_after = $t_gone - $t_kill;
cmp_ok($gone_after, '<', $FREE_WITHIN_S,
	sprintf("(2) A's node is gone %.2f s after the kill (bound %d s; session timeout 30 s)",
		$gone_after, $FREE_WITHIN_S));

# B's waiter is granted, well within its 20 s timeout.
my ($out, $err) = bg_collect($sb);
my ($granted_at) = $out =~ /^granted\|t\|([\d.]+)$/m;
ok(defined $granted_at, '(2) B\'s waiter is granted L') or diag("B's waiter: $out $err");
my $grant_after = ($granted_at // time) - $t_kill;
cmp_ok($grant_after, '<', $FREE_WITHIN_S,
	sprintf('(2) B is granted %.2f s after the kill', $grant_after));
is(join(',', zk_ls($zk, $dir)),
	zk_base(held_znode($b, $sb_pid, 'L')),
	'(2) only B\'s node is left in L\'s directory') or diag_state('(2)');

# A went through a crash restart and closed the previous session.
wait_until(sub { $a->psql('postgres', 'SELECT 1') == 0 }, 30, 'A accepts connections again');
wait_until(sub { zk_status_of($a)->{state} eq 'connected' }, 15, 'A\'s new worker is connected');
$log = slurp_file($a->logfile, $log_offset);
like($log, qr/all server processes terminated; reinitializing/,
	'(2) the postmaster did a crash restart');
like($log, qr/closed ZooKeeper session \Q$old_session\E of the previous server incarnation/,
	'(2) the log says the previous session was closed');
my $new_session = zk_status_of($a)->{session_id};
isnt($new_session, $old_session, "(2) A runs a new ZooKeeper session ($new_session)");
is($a->safe_psql('postgres', 'SELECT count(*) FROM zk_locks'), '0', '(2) A has no lock entry after the crash restart');
is($a->safe_psql('postgres', "SELECT zk_lock_try('L')"), 'f', '(2) A cannot take L while B holds it');

# The backend that held L is gone with the crash restart.
my ($sa_out, $sa_failed) = eval { $sa->query('SELECT 1') };
ok(!defined $sa_out || $sa->{stderr} ne '', '(2) the holder\'s connection did not survive the crash restart');
eval { $sa->quit; 1 };

$sb->query_safe("SELECT zk_lock_release('L')");
$sb->quit;
is($a->safe_psql('postgres', "SELECT zk_lock_acquire('L', '5s') > 0 AND zk_lock_release('L')"), 't',
	'(2) A takes L again after B\'s release');
wait_until(sub { !zk_ls($zk, $dir) }, 10, 'L\'s directory empties at the end');
is(join(',', zk_ls($zk, $dir)), '', 'no orphan node left in ZooKeeper');
is($a->safe_psql('postgres', 'SELECT count(*) FROM zk_locks') . $b->safe_psql('postgres', 'SELECT count(*) FROM zk_locks'),
	'00', 'no lock entry left in A or B');
diag(sprintf('worker SIGTERM: the old worker exited %.1f s after the signal, the new one was connected %.1f s after it',
	$t_old_gone - $t_term, $t_back - $t_term));
diag(sprintf('worker SIGKILL: A\'s node left ZooKeeper %.0f ms after the kill, B granted %.0f ms after it',
	$gone_after * 1000, $grant_after * 1000));

done_testing();
