# No orphans (design rule 3): whatever way a request ends -- a timeout, a
# cancel, statement_timeout, an error in the transaction or in a PL/pgSQL
# block (subtransaction abort) during the wait, the termination of a holder or
# of a waiter, a rollback to a savepoint -- ZooKeeper's lock directory keeps
# no node of that request, and the next contender in the other cluster gets
# the lock at once.  Every check of the directory uses ZooKeeper's own view
# (zkutil), not the extension's.
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::RealBin/../lib";
use ZklockTest;
use Test::More;
use Time::HiRes qw(time);

my $zk = zk_start(1);
my $a = zklock_node('a', $zk);
my $b = zklock_node('b', $zk);

# A contender must wait no longer than this after its predecessor is gone.
my $AT_ONCE_S = 3;

sub base { return (split m{/}, $_[0])[-1] }

sub lock_dir
{
	my ($name) = @_;
	return $a->safe_psql('postgres', "SELECT zk_lock_path('$name')");
}

# The full path of the node a cluster holds for $name ('' if none).
sub cluster_znode
{
	my ($node, $name) = @_;
	return $node->safe_psql('postgres',
		"SELECT znode FROM zk_locks WHERE name = '$name' AND state = 'held'");
}

# Every row a cluster shows for $name, for assertions and diagnostics.
sub local_rows
{
	my ($node, $name) = @_;
	return $node->safe_psql('postgres',
		"SELECT pid, scope, state, znode FROM zk_locks WHERE name = '$name' ORDER BY pid");
}

sub counters
{
	my ($node) = @_;
	my ($t, $c) = split /\|/,
	  $node->safe_psql('postgres', 'SELECT timeouts, cancels FROM zk_status()');
	return { timeouts => $t, cancels => $c };
}

# What each side sees, when a directory check fails.
sub diag_lock
{
	my ($name) = @_;
	my $dir = lock_dir($name);
	diag("ZooKeeper children of $dir:");
	for my $child (zk_ls($zk, $dir))
	{
		diag("  $child  " . (zk_get($zk, "$dir/$child") // '(gone)'));
	}
	diag("zk_locks in A:\n" . local_rows($a, $name));
	diag("zk_locks in B:\n" . local_rows($b, $name));
}

# Wait until ZooKeeper's directory for $name holds exactly the nodes
# @$want (full paths; [] for nothing), then assert it.
sub dir_holds_exactly
{
	my ($name, $want, $what) = @_;
	my $dir = lock_dir($name);
	my $expect = join(',', sort map { base($_) } @$want);
	wait_until(sub { join(',', sort(zk_ls($zk, $dir))) eq $expect },
		10, "$what (ZooKeeper view)");
	my $ok = is(join(',', sort(zk_ls($zk, $dir))), $expect, $what);
	diag_lock($name) unless $ok;
	return $ok;
}

# A backend of $node waits for $name: its zk_locks row says 'waiting' with a
# created node, and ZooKeeper shows that node next to the holder's.
# Returns the waiter's node.
sub wait_for_waiter
{
	my ($node, $name, $pid, $holder_znode) = @_;
	my $znode = '';
	wait_until(
		sub {
			$znode = $node->safe_psql('postgres',
				"SELECT coalesce(znode, '') FROM zk_locks WHERE pid = $pid AND name = '$name' AND state = 'waiting'"
			);
			$znode ne ''
			  && join(',', sort(zk_ls($zk, lock_dir($name)))) eq
			  join(',', sort(base($holder_znode), base($znode)));
		},
		20,
		"backend $pid queued behind the holder of $name");
	return $znode;
}

# Start a blocking statement in a background session.
sub start_blocked
{
	my ($s, $sql) = @_;
	$s->query_until(qr/waiting/, "\\echo waiting\n$sql\n");
}

# The next contender, in a new backend of $node: it gets $name within the
# 5 s it allows itself, in fact at once; while it holds, ZooKeeper shows
# its node alone; after its release the directory empties.
sub next_contender_gets_it
{
	my ($node, $name, $what) = @_;
	my $s = bg_session($node);
	my $t0 = time;
	my ($out) = $s->query("SELECT zk_lock_acquire('$name', '5s') > 0");
	my $elapsed = time - $t0;
	my $err = $s->{stderr};
	$s->{stderr} = '';
	my $granted = is($out, 't', "$what: next contender is granted the lock")
	  or diag("error: $err");
	cmp_ok($elapsed, '<', $AT_ONCE_S,
		sprintf("$what: ... at once (%.3f s)", $elapsed));
	if ($granted)
	{
		my $mine = cluster_znode($node, $name);
		dir_holds_exactly($name, [$mine], "$what: while the contender holds, only its node exists");
		$s->query_safe("SELECT zk_lock_release('$name')");
	}
	$s->quit;
	dir_holds_exactly($name, [], "$what: directory empty after the contender's release");
	return;
}

# Hold $name in a new background session of $node; returns (session, node).
sub hold
{
	my ($node, $name, $sql) = @_;
	my $s = bg_session($node);
	$sql //= "SELECT zk_lock_acquire('$name') > 0";
	is($s->query_safe($sql), 't', "holder takes $name");
	my $znode = cluster_znode($node, $name);
	like($znode, qr{^\Q${\ lock_dir($name)}\E/_c_[0-9a-f-]{36}-lock-\d+$},
		"the holder's node of $name is known");
	return ($s, $znode);
}

sub backend_pid
{
	my ($s) = @_;
	return $s->query_safe('SELECT pg_backend_pid()');
}

# psql exits after its backend was terminated; wait for that and reap it.
sub wait_psql_exit
{
	my ($s, $what) = @_;
	my $gone = 0;
	wait_until(
		sub {
			eval { $s->{run}->pump_nb; 1 };
			$gone = !$s->{run}->pumpable;
		},
		20,
		"$what: psql exits");
	eval { $s->{run}->finish; 1 };
	return $gone;
}

########################################################################
# (a) timeouts: an explicit timeout while A holds the lock, and very short
# ones that expire while the create is still in flight.
{
	my $name = 'no-orphan.timeout';
	my ($sa, $za) = hold($a, $name);
	dir_holds_exactly($name, [$za], 'timeout: only the holder is queued at first');

	my $before = counters($b);
	my ($ret, $out, $err) = $b->psql('postgres',
		"\\set VERBOSITY verbose\nSELECT zk_lock_acquire('$name', '300ms')");
	isnt($ret, 0, 'timeout: the timed acquire in B fails');
	like($err, qr/ERROR:\s+55P03: could not obtain ZooKeeper lock "\Q$name\E"/,
		'timeout: with SQLSTATE 55P03');
	my $after = counters($b);
	is($after->{timeouts}, $before->{timeouts} + 1, 'timeout: B counts one timeout');
	is($after->{cancels}, $before->{cancels}, 'timeout: ... and no cancel');
	dir_holds_exactly($name, [$za], 'timeout: the timed-out request left no node');
	wait_until(sub { local_rows($b, $name) eq '' }, 10, 'timeout: B forgets the request');
	is(local_rows($b, $name), '', 'timeout: B shows no row for the lock');

	# 1 ms: the deadline passes before the worker has an answer, so the
	# cancel meets a create (and listing) in flight.
	my $n_short = 5;
	$before = counters($b);
	my $sb = bg_session($b);
	my $failed = 0;
	for (1 .. $n_short)
	{
		my (undef, $bad) = $sb->query("\\set VERBOSITY verbose\nSELECT zk_lock_acquire('$name', '1ms')");
		$failed++ if $bad && $sb->{stderr} =~ /ERROR:\s+55P03: /;
		$sb->{stderr} = '';
	}
	$sb->quit;
	is($failed, $n_short, "timeout: $n_short acquires with 1 ms time out");
	is(counters($b)->{timeouts}, $before->{timeouts} + $n_short,
		"timeout: B counts $n_short more timeouts");
	dir_holds_exactly($name, [$za], 'timeout: 1 ms timeouts left no node either');

	$sa->query_safe("SELECT zk_lock_release('$name')");
	$sa->quit;
	next_contender_gets_it($b, $name, 'timeout');
}

########################################################################
# (b) pg_cancel_backend of a backend blocked in zk_lock_acquire.
{
	my $name = 'no-orphan.cancel';
	my ($sa, $za) = hold($a, $name);
	my $sb = bg_session($b);
	my $pid = backend_pid($sb);
	my $before = counters($b);

	start_blocked($sb, "SELECT zk_lock_acquire('$name');");
	my $zb = wait_for_waiter($b, $name, $pid, $za);
	dir_holds_exactly($name, [ $za, $zb ], 'cancel: the waiter is queued behind the holder');

	is($b->safe_psql('postgres', "SELECT pg_cancel_backend($pid)"), 't', 'cancel: signal sent');
	my ($out) = $sb->query("SELECT 'after cancel'");
	like($sb->{stderr}, qr/canceling statement due to user request/,
		'cancel: the wait ends with the cancel error');
	$sb->{stderr} = '';
	is($out, 'after cancel', 'cancel: the session goes on');
	is(counters($b)->{cancels}, $before->{cancels} + 1, 'cancel: B counts one cancel');
	dir_holds_exactly($name, [$za], 'cancel: the cancelled request left no node');
	is($b->safe_psql('postgres', "SELECT count(*) FROM zk_locks WHERE name = '$name' AND state <> 'releasing'"),
		'0', 'cancel: B shows no queued request');
	$sb->quit;

	$sa->query_safe("SELECT zk_lock_release('$name')");
	$sa->quit;
	next_contender_gets_it($b, $name, 'cancel');
}

########################################################################
# (c) statement_timeout expiring during a blocked zk_lock_acquire.
{
	my $name = 'no-orphan.statement_timeout';
	my ($sa, $za) = hold($a, $name);
	my $sb = bg_session($b);
	my $pid = backend_pid($sb);
	$sb->query_safe("SET statement_timeout = '3s'");
	my $before = counters($b);

	start_blocked($sb, "SELECT zk_lock_acquire('$name');");
	my $zb = wait_for_waiter($b, $name, $pid, $za);
	dir_holds_exactly($name, [ $za, $zb ], 'statement_timeout: the waiter is queued');

	my ($out) = $sb->query("SELECT 'after statement_timeout'");
	like($sb->{stderr}, qr/canceling statement due to statement timeout/,
		'statement_timeout: the wait ends with the statement timeout error');
	$sb->{stderr} = '';
	is($out, 'after statement_timeout', 'statement_timeout: the session goes on');
	my $after = counters($b);
	# An interrupt, not the function's own timeout: counted as a cancel.
	is($after->{cancels}, $before->{cancels} + 1, 'statement_timeout: B counts one cancel');
	is($after->{timeouts}, $before->{timeouts}, 'statement_timeout: ... not a zklock timeout');
	dir_holds_exactly($name, [$za], 'statement_timeout: the interrupted request left no node');
	$sb->quit;

	$sa->query_safe("SELECT zk_lock_release('$name')");
	$sa->quit;
	next_contender_gets_it($b, $name, 'statement_timeout');
}

########################################################################
# (d) errors in the transaction.
{
	# d1: a holder of a transaction-scope lock hits an error; the abort gives
	# the lock back (before the client even says ROLLBACK).
	my $name = 'no-orphan.xact-error';
	my ($sa, $za) = hold($a, $name, "BEGIN; SELECT zk_lock_acquire_xact('$name') > 0");
	is(($a->safe_psql('postgres', "SELECT scope FROM zk_locks WHERE name = '$name' AND state = 'held'")),
		'transaction', 'xact error: the hold is transaction-scope');
	dir_holds_exactly($name, [$za], 'xact error: the holder has its node');

	my (undef, $bad) = $sa->query('SELECT 1 / 0');
	ok($bad && $sa->{stderr} =~ /division by zero/, 'xact error: 1/0 fails in the holder');
	$sa->{stderr} = '';
	dir_holds_exactly($name, [], 'xact error: the aborted transaction left no node');
	next_contender_gets_it($b, $name, 'xact error');
	$sa->query("ROLLBACK");
	is($sa->{stderr}, '', 'xact error: ROLLBACK is clean');
	$sa->quit;

	# d2: an error (statement_timeout) raised while waiting, caught by a
	# PL/pgSQL EXCEPTION clause: the subtransaction aborts during the wait
	# while the outer transaction goes on.
	$name = 'no-orphan.subxact-wait';
	my $za2;
	($sa, $za2) = hold($a, $name);
	my $sb = bg_session($b);
	my $pid = backend_pid($sb);
	$sb->query_safe(
		qq{CREATE FUNCTION pg_temp.wait_for(n text) RETURNS text LANGUAGE plpgsql AS \$\$
BEGIN
	PERFORM zk_lock_acquire(n);
	RETURN 'granted';
EXCEPTION WHEN query_canceled THEN
	RETURN 'caught: ' || SQLERRM;
END \$\$});
	$sb->query_safe("BEGIN; CREATE TEMP TABLE outer_work(x int); INSERT INTO outer_work VALUES (1)");
	$sb->query_safe("SET LOCAL statement_timeout = '3s'");
	my $before = counters($b);

	start_blocked($sb, "SELECT pg_temp.wait_for('$name');");
	my $zb = wait_for_waiter($b, $name, $pid, $za2);
	dir_holds_exactly($name, [ $za2, $zb ], 'subxact wait: the waiter is queued');

	my ($out) = $sb->query("SELECT 'next'");
	is($sb->{stderr}, '', 'subxact wait: no error reaches the client');
	$sb->{stderr} = '';
	is($out, "caught: canceling statement due to statement timeout\nnext",
		'subxact wait: the EXCEPTION clause caught the statement timeout');
	is(counters($b)->{cancels}, $before->{cancels} + 1, 'subxact wait: B counts one cancel');
	dir_holds_exactly($name, [$za2], 'subxact wait: the aborted subtransaction left no node');
	is($sb->query_safe("SELECT txid_current_if_assigned() IS NOT NULL, count(*) FROM outer_work"),
		't|1', 'subxact wait: the outer transaction is still open with its work');
	$sb->query_safe("SET LOCAL statement_timeout = 0");

	# d3: a transaction hold taken inside a PL/pgSQL block that then fails:
	# the block's subtransaction abort gives the lock back at once.
	my $name3 = 'no-orphan.subxact-hold';
	my ($o3) = $sb->query(
		qq{DO \$\$
BEGIN
	PERFORM zk_lock_acquire_xact('$name3');
	RAISE NOTICE 'held %', (SELECT state FROM zk_locks WHERE name = '$name3' AND pid = pg_backend_pid());
	PERFORM 1 / 0;
EXCEPTION WHEN division_by_zero THEN
	RAISE NOTICE 'caught %', SQLERRM;
END \$\$});
	like($sb->{stderr}, qr/held held.*caught division by zero/s,
		'subxact hold: the block held the lock, then failed and caught the error');
	$sb->{stderr} = '';
	dir_holds_exactly($name3, [], 'subxact hold: the aborted block left no node');
	next_contender_gets_it($a, $name3, 'subxact hold');

	$sb->query("COMMIT");
	is($sb->{stderr}, '', 'subxact: the outer transaction commits');
	is($sb->query_safe("SELECT count(*) FROM outer_work"), '1', "subxact: the outer transaction's work survived");
	$sb->quit;

	$sa->query_safe("SELECT zk_lock_release('$name')");
	$sa->quit;
	next_contender_gets_it($b, $name, 'subxact wait');
}

########################################################################
# (e) pg_terminate_backend of a holder, and of a waiter.
{
	# e1: the holder has the lock twice (session and transaction scope) in an
	# open transaction; its exit gives everything back.
	my $name = 'no-orphan.terminate-holder';
	my ($sa, $za) = hold($a, $name,
		"BEGIN; SELECT zk_lock_acquire('$name') > 0 AND zk_lock_acquire_xact('$name') > 0");
	my $pid = backend_pid($sa);
	dir_holds_exactly($name, [$za], 'terminate holder: the holder has one node');

	is($a->safe_psql('postgres', "SELECT pg_terminate_backend($pid, 10000)"), 't',
		'terminate holder: the backend is terminated');
	# psql notices only when it next talks to the server.
	$sa->{stdin} .= "SELECT 1;\n";
	ok(wait_psql_exit($sa, 'terminate holder'), 'terminate holder: its psql is gone');
	like($sa->{stderr}, qr/terminating connection due to administrator command/,
		'terminate holder: psql saw the termination');
	dir_holds_exactly($name, [], 'terminate holder: the terminated holder left no node');
	is(local_rows($a, $name), '', 'terminate holder: A shows no row for the lock');
	next_contender_gets_it($b, $name, 'terminate holder');

	# e2: a waiter is terminated while queued.
	$name = 'no-orphan.terminate-waiter';
	($sa, $za) = hold($a, $name);
	my $sb = bg_session($b);
	$pid = backend_pid($sb);
	my $before = counters($b);
	start_blocked($sb, "SELECT zk_lock_acquire('$name');");
	my $zb = wait_for_waiter($b, $name, $pid, $za);
	dir_holds_exactly($name, [ $za, $zb ], 'terminate waiter: the waiter is queued');

	is($b->safe_psql('postgres', "SELECT pg_terminate_backend($pid, 10000)"), 't',
		'terminate waiter: the backend is terminated');
	ok(wait_psql_exit($sb, 'terminate waiter'), 'terminate waiter: its psql is gone');
	like($sb->{stderr}, qr/terminating connection due to administrator command/,
		'terminate waiter: the wait ended with the termination');
	is(counters($b)->{cancels}, $before->{cancels} + 1, 'terminate waiter: B counts one cancel');
	dir_holds_exactly($name, [$za], 'terminate waiter: the terminated waiter left no node');
	wait_until(sub { local_rows($b, $name) eq '' }, 10, 'terminate waiter: B forgets the request');
	is(local_rows($b, $name), '', 'terminate waiter: B shows no row for the lock');

	$sa->query_safe("SELECT zk_lock_release('$name')");
	$sa->quit;
	next_contender_gets_it($b, $name, 'terminate waiter');
}

########################################################################
# (f) rollback to a savepoint taken before zk_lock_acquire_xact: the lock
# is released at once while the outer transaction goes on, and a lock taken
# before the savepoint stays.
{
	my $name = 'no-orphan.savepoint';
	my $outer = 'no-orphan.savepoint-outer';
	my $sa = bg_session($a);
	$sa->query_safe("BEGIN; CREATE TEMP TABLE sp_work(x int); INSERT INTO sp_work VALUES (1)");
	is($sa->query_safe("SELECT zk_lock_acquire_xact('$outer') > 0"), 't', 'savepoint: outer lock taken');
	my $zouter = cluster_znode($a, $outer);
	$sa->query_safe("SAVEPOINT before_lock");
	is($sa->query_safe("SELECT zk_lock_acquire_xact('$name') > 0"), 't', 'savepoint: inner lock taken');
	my $za = cluster_znode($a, $name);
	isnt($za, '', "savepoint: the inner lock's node is known");
	dir_holds_exactly($name, [$za], 'savepoint: the inner lock has its node');

	$sa->query_safe("ROLLBACK TO SAVEPOINT before_lock");
	dir_holds_exactly($name, [], 'savepoint: the rollback to the savepoint left no node');
	next_contender_gets_it($b, $name, 'savepoint');

	is($sa->query_safe("SELECT count(*) FROM sp_work"), '1',
		'savepoint: the outer transaction goes on with its work');
	dir_holds_exactly($outer, [$zouter], 'savepoint: the lock taken before the savepoint is still held');
	is($b->safe_psql('postgres', "SELECT zk_lock_try('$outer')"), 'f',
		'savepoint: ... and keeps B out');
	$sa->query_safe("COMMIT");
	dir_holds_exactly($outer, [], 'savepoint: commit releases the outer lock');
	next_contender_gets_it($b, $outer, 'savepoint outer');
	$sa->quit;
}

########################################################################
# Nothing is left behind anywhere, in either cluster.
is($a->safe_psql('postgres', 'SELECT count(*) FROM zk_locks'), '0', 'A has no slot in use');
is($b->safe_psql('postgres', 'SELECT count(*) FROM zk_locks'), '0', 'B has no slot in use');
my @left = grep { zk_ls($zk, "/zklock/$_") } zk_ls($zk, '/zklock');
is("@left", '', 'no lock directory under /zklock holds a node');

done_testing();
