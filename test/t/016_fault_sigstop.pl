# Fault: A's zklock worker is frozen (SIGSTOP) for 8 s, twice its session
# timeout (4 s), while A holds locks, then thawed (SIGCONT).
#
# A frozen worker reports nothing, and silence must not read as health:
#  - H1 holds L1 in an open transaction with a row inserted and COMMITs while
#    the worker is frozen (after the last heartbeat's proof has aged): the
#    COMMIT waits one session timeout and fails with ZK002 ("could not
#    confirm"); the row is not committed.
#  - H2 holds L2 in an open transaction with a row inserted and COMMITs only
#    after the thaw, once the worker has seen its session expired: ZK002
#    ("was lost"); the row is not committed; zk_locks showed L2 'lost'.
#  - H3 holds L3 in session scope and runs a long statement: with
#    zklock.on_lock_lost = cancel (the default) the statement is cancelled
#    after the thaw, and its next zklock call reports the loss (ZK002).
#  - H4 holds L4 in an open transaction with a row inserted and sends its
#    COMMIT 1.5 s before the thaw: the COMMIT is still waiting for proof
#    when the worker wakes up, and fails with ZK002; the row is not
#    committed.
#  - Meanwhile B's waiters (20 s timeouts) get all three locks while A is
#    still frozen: ZooKeeper expired A's session, so that is right.
# Afterwards the losses are reported once, A can take the locks again, and
# no node is left once everybody released.
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::RealBin/../lib";
use ZklockTest;
use Test::More;
use PostgreSQL::Test::Utils;
use Time::HiRes qw(time sleep);

my $zk = zk_start(1);
my $a = zklock_node('a', $zk, session_timeout => '4s');
my $b = zklock_node('b', $zk, session_timeout => '4s');
$a->safe_psql('postgres', 'CREATE TABLE work (tag text)');
is($a->safe_psql('postgres', 'SELECT negotiated_timeout FROM zk_status()'), '4000', 'A negotiated a 4 s session timeout');
is($a->safe_psql('postgres', 'SHOW zklock.on_lock_lost'), 'cancel', 'zklock.on_lock_lost is cancel by default');

sub diag_state { diag_locks($_[0], $zk, [qw(L1 L2 L3)], $a, $b) }

sub holder
{
	my ($sql) = @_;
	my $s = bg_session($a);
	$s->query_safe('\set VERBOSITY verbose');
	my $pid = $s->query_safe('SELECT pg_backend_pid()');
	is($s->query_safe($sql), 't', "holder $pid: $sql");
	return ($s, $pid);
}

my ($h1, $h1_pid) = holder("BEGIN; SELECT zk_lock_acquire_xact('L1', '10s') > 0; INSERT INTO work VALUES ('h1')");
my ($h2, $h2_pid) = holder("BEGIN; SELECT zk_lock_acquire_xact('L2', '10s') > 0; INSERT INTO work VALUES ('h2')");
my ($h3, $h3_pid) = holder("SELECT zk_lock_acquire('L3', '10s') > 0");
my ($h4, $h4_pid) = holder("BEGIN; SELECT zk_lock_acquire_xact('L4', '10s') > 0; INSERT INTO work VALUES ('h4')");
my $old_session = $a->safe_psql('postgres', 'SELECT session_id FROM zk_status()');

my %waiter = map { $_ => queue_waiter($b, $zk, $_, '20s') } qw(L1 L2 L3);

# H3 runs a long statement through the freeze.
$h3->query_until(qr/sleeping\n/, "\\echo sleeping\nSELECT pg_sleep(30);\n");

my $wpid = worker_pid($a);
like($wpid, qr/^\d+$/, "A's worker found (pid $wpid)");

# Freeze the worker; thaw it whatever happens.
my $frozen;
END { kill('CONT', $frozen) if $frozen; }
my $t_stop = time;
ok(kill('STOP', $wpid), 'SIGSTOP to A\'s worker');
$frozen = $wpid;
wait_until(sub { proc_state($wpid) eq 'T' }, 5, 'the worker is stopped');

# H1 commits once the last heartbeat's proof (a third of the timeout) has
# aged: the COMMIT waits one session timeout, then fails.
sleep(1.5);
my $t_commit = time;
$h1->query('COMMIT');
my $h1_err = $h1->{stderr};
$h1->{stderr} = '';
my $h1_waited = time - $t_commit;
like($h1_err, qr/ZK002: could not confirm the ZooKeeper session before commit/,
	'H1: COMMIT while the worker is frozen fails with ZK002 (could not confirm)');
cmp_ok($h1_waited, '>=', 3.5, sprintf('H1: ... after waiting about one session timeout (%.1f s)', $h1_waited));
is(committed($a, 'h1'), '0', 'H1: the row is not committed');

# B's waiters are granted while A's worker is still frozen (the test sends
# SIGCONT only after all three grants): ZooKeeper expired A's session.
my %granted_at;
for my $name (qw(L1 L2 L3))
{
	my ($at, $out, $err) = waiter_grant($waiter{$name});
	$granted_at{$name} = $at;
	ok(defined $granted_at{$name}, "B is granted $name while A's worker is frozen")
	  or diag("B's waiter for $name: $out $err");
}
for my $name (qw(L1 L2 L3))
{
	is(join(',', zk_ls($zk, "/zklock/$name")), zk_base(held_znode($b, $waiter{$name}{pid}, $name)),
		"only B's node is left for $name")
	  or diag_state($name);
}

# H4 sends its COMMIT 1.5 s before the thaw: it is still waiting for proof
# when the worker wakes up and finds its session expired.
sleep(6.5 - (time - $t_stop)) if time - $t_stop < 6.5;
my $t_h4 = time;
$h4->query_until(qr/committing\n/, "\\echo committing\nCOMMIT;\n");
note(sprintf('H4: COMMIT sent %.1f s into the freeze', $t_h4 - $t_stop));

# The freeze lasts 8 s in all.
sleep(8 - (time - $t_stop)) if time - $t_stop < 8;
my $log_offset = -s $a->logfile;
ok(kill('CONT', $wpid), 'SIGCONT to A\'s worker');
my $t_cont = time;
$frozen = undef;
my $frozen_for = $t_cont - $t_stop;
note(sprintf("B was granted $_ %.1f s into the %.1f s freeze", ($granted_at{$_} // 1e10) - $t_stop, $frozen_for))
  for qw(L1 L2 L3);

# The thawed worker learns that its session expired.
wait_until(sub { lock_state($a, $h2_pid, 'L2') eq 'lost' }, 15, 'L2 turns lost in A');
is(lock_state($a, $h2_pid, 'L2'), 'lost', 'H2: zk_locks shows L2 lost after the thaw');
my $log = slurp_file($a->logfile, $log_offset);
like($log, qr/ZooKeeper session \Q$old_session\E ended: expired|giving up ZooKeeper session \Q$old_session\E: nothing has proven it alive/,
	'the worker logs its session expired, or given up at once');
like($log, qr/backend $h2_pid lost ZooKeeper lock "L2": /, 'the log names H2 and L2');
like($log, qr/backend $h3_pid lost ZooKeeper lock "L3": /, 'the log names H3 and L3');
isnt(lock_state($a, $h1_pid, 'L1'), 'held', 'H1: A does not show L1 held after the thaw');

# H3: its running statement was cancelled (zklock.on_lock_lost = cancel),
# and the commit of its next statement (autocommit) reports the loss.
my $h3_out = $h3->query("SELECT 'after-cancel'");
my $h3_err = $h3->{stderr};
$h3->{stderr} = '';
my $t_cancelled = time;
# The cancel is what ends pg_sleep(30): one that ran its course would leave
# no 57014.  How soon after the thaw is a figure, not an assertion.
like($h3_err, qr/57014: canceling statement due to user request/, 'H3: the running statement was cancelled');
note(sprintf('H3: cancelled %.1f s after the thaw', $t_cancelled - $t_cont));
like($h3_err, qr/57014: canceling statement.*ZK002: ZooKeeper lock "L3" was lost/s,
	'H3: its next statement fails with ZK002 (lost) at commit');
unlike($h3_out, qr/after-cancel/, 'H3: ... and returns nothing');
is(lock_state($a, $h3_pid, 'L3'), 'none', 'H3: the loss was reported and L3 forgotten');
# Reported once: a release now finds nothing to release.
$h3->query("SELECT zk_lock_release('L3')");
like($h3->{stderr}, qr/WARNING:  55P03: you don't own a ZooKeeper lock named "L3"/,
	'H3: the loss is not reported twice (the release finds no hold)');
unlike($h3->{stderr}, qr/ZK002/, 'H3: ... and no second ZK002');
$h3->{stderr} = '';

# H4: the COMMIT that was waiting across the thaw fails with ZK002.
my ($h4_out, $h4_err) = bg_collect($h4);
my $h4_took = time - $t_h4;
like($h4_err, qr/ZK002: (ZooKeeper lock "L4" was lost|could not confirm the ZooKeeper session before commit)/,
	'H4: the COMMIT waiting across the thaw fails with ZK002');
note("H4's COMMIT failed after ${\ sprintf('%.1f', $h4_took)} s with: " . (($h4_err =~ /(ZK002: [^\n]*)/)[0] // $h4_err));
is(committed($a, 'h4'), '0', 'H4: the row is not committed');

# H2: the COMMIT after the thaw fails with ZK002 (lost).
$h2->query('COMMIT');
like($h2->{stderr}, qr/ZK002: ZooKeeper lock "L2" was lost/, 'H2: COMMIT after the thaw fails with ZK002 (lost)');
$h2->{stderr} = '';
is(committed($a, 'h2'), '0', 'H2: the row is not committed');
is(lock_state($a, $h2_pid, 'L2'), 'none', 'H2: the loss was reported and L2 forgotten');

# Reported once: the next transactions commit.
for my $pair ([ $h1, 'h1-after' ], [ $h2, 'h2-after' ], [ $h3, 'h3-after' ], [ $h4, 'h4-after' ])
{
	my ($s, $tag) = @$pair;
	$s->query("BEGIN; INSERT INTO work VALUES ('$tag'); COMMIT");
	is($s->{stderr}, '', "$tag: the next transaction commits");
	$s->{stderr} = '';
	is(committed($a, $tag), '1', "$tag: its row is there");
}
wait_until(sub { $a->safe_psql('postgres', 'SELECT state FROM zk_status()') eq 'connected' }, 15,
	'A is connected again');
isnt($a->safe_psql('postgres', 'SELECT session_id FROM zk_status()'), $old_session, 'A runs a new ZooKeeper session');
# An expiry is not a crash restart: there is no previous incarnation whose
# session the new one should try to close.
unlike(slurp_file($a->logfile, $log_offset), qr/previous server incarnation/,
	'after the expiry the worker opens a new session without treating the expired one as a previous incarnation\'s');

# B releases; A can take every lock again.
for my $name (qw(L1 L2 L3))
{
	$waiter{$name}{s}->query_safe("SELECT zk_lock_release('$name')");
	$waiter{$name}{s}->quit;
}
is($h1->query_safe("SELECT zk_lock_acquire('L1', '5s') > 0 AND zk_lock_release('L1')"), 't', 'H1 takes L1 again');
is($h2->query_safe("SELECT zk_lock_acquire('L2', '5s') > 0 AND zk_lock_release('L2')"), 't', 'H2 takes L2 again');
is($h3->query_safe("SELECT zk_lock_acquire('L3', '5s') > 0 AND zk_lock_release('L3')"), 't', 'H3 takes L3 again');
is($h4->query_safe("SELECT zk_lock_acquire('L4', '5s') > 0 AND zk_lock_release('L4')"), 't', 'H4 takes L4 again');
$_->quit for ($h1, $h2, $h3, $h4);

for my $name (qw(L1 L2 L3 L4))
{
	wait_until(sub { !zk_ls($zk, "/zklock/$name") }, 10, "the directory of $name empties");
	is(join(',', zk_ls($zk, "/zklock/$name")), '', "no orphan node left for $name");
}
is($a->safe_psql('postgres', 'SELECT count(*) FROM zk_locks') . $b->safe_psql('postgres', 'SELECT count(*) FROM zk_locks'),
	'00', 'no lock entry left in A or B');
diag(sprintf('worker frozen %.1f s; H1\'s COMMIT failed after %.1f s; B granted L1/L2/L3 %.1f/%.1f/%.1f s into the freeze; '
	  . 'H3 cancelled %.1f s after the thaw',
	$frozen_for, $h1_waited, map({ ($granted_at{$_} // 1e10) - $t_stop } qw(L1 L2 L3)), $t_cancelled - $t_cont));

done_testing();
