# A hold released on an abort path must still be proven at commit (review
# of issue 40): a cursor's transaction hold belongs to its portal, and a
# FETCH that fails inside a savepoint gives it back before the outer
# transaction commits, while the work done under it (a row written between
# two FETCHes) lives on.  When the hold is known lost there, the commit is
# refused (085); when the loss is not known yet (the worker cut off, the
# session perhaps expired and the lock another client's), the commit must
# not go through unproven either, as it would not have with the hold kept:
#  (1) the cursor takes B; the worker is frozen past the proof's margin; a
#      row is written; the FETCH fails inside a savepoint, ROLLBACK TO;
#      COMMIT fails with ZK002 and the row is not committed.
#  (2) The same with the worker running: COMMIT succeeds (the proof comes).
# zklock.on_lock_lost = error: losses reach the sessions through their
# statements only.
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::RealBin/../lib";
use ZklockTest;
use Test::More;
use PostgreSQL::Test::Utils;

my $zk = zk_start(1);
my $a = zklock_node('a', $zk, session_timeout => '4s', conf => ["zklock.on_lock_lost = 'error'"]);
$a->safe_psql('postgres', 'CREATE TABLE work (tag text)');

my $p = bg_session($a);
$p->query_safe('\set VERBOSITY verbose');

my $cursor =
  "DECLARE c CURSOR FOR SELECT CASE WHEN i = 1 THEN zk_lock_acquire_xact('B', '10s') > 0 END AS held, 1 / (2 - i) AS q FROM generate_series(1, 3) i";

sub cursor_then_abort
{
	my ($tag, $freeze, $what) = @_;
	my $worker = 0;
	$p->query_safe('BEGIN');
	$p->query_safe($cursor);
	is(bg_result($p, 'FETCH 1 FROM c'), 't|1', "$what: the cursor takes B on its first FETCH");
	if ($freeze)
	{
		$worker = worker_pid($a);
		ok(kill('STOP', $worker), "$what: SIGSTOP to the worker ($worker)");
		# Past a third of the 4 s session timeout, the last answer proves nothing.
		sleep(2);
	}
	$p->query_safe("INSERT INTO work VALUES ('$tag')");
	$p->query_safe('SAVEPOINT s');
	my ($state, $err) = bg_sqlstate($p, 'FETCH 1 FROM c');
	is($state, '22012', "$what: the next FETCH fails inside the savepoint") or diag($err);
	is(bg_sqlstate($p, 'ROLLBACK TO s'), 'ok', "$what: ROLLBACK TO s");
	($state, $err) = bg_sqlstate($p, 'COMMIT');
	kill('CONT', $worker) if $worker;
	return ($state, $err);
}

my ($state, $err) = cursor_then_abort('unproven', 1, '(1)');
is($state, 'ZK002', '(1) COMMIT fails with ZK002: the work under the released hold is unproven') or diag($err);
is(committed($a, 'unproven'), '0', '(1) the row is not committed');

# The frozen worker let the session expire: wait for a new one.
ok(wait_until(sub { zk_status_of($a)->{state} eq 'connected' }, 30, 'a new session'),
	'the worker has a session again');

($state, $err) = cursor_then_abort('proven', 0, '(2)');
is($state, 'ok', '(2) with the worker running, the COMMIT is proven and succeeds') or diag($err);
is(committed($a, 'proven'), '1', '(2) the row is committed');

$p->quit;
done_testing();
