# A transaction told of a lost lock never commits, whatever caught the
# error; a lost lock leaves nothing behind that could keep a later hold of
# the same name; and a NOTIFY is a durable effect that needs the proof.
# (issue 25, points 1, 2 and 4)
#  (1) BEGIN; zk_lock_acquire_xact('L'); INSERT; the node is deleted, as
#      any ZooKeeper client could; SAVEPOINT s; zk_lock_try_xact('L') fails
#      with ZK002; ROLLBACK TO s; COMMIT fails with ZK002 and the row is not
#      committed.  The next transaction commits: the loss was reported once.
#  (2) The same through a PL/pgSQL block that catches ZK002 and takes the
#      lock again: COMMIT still fails.
#  (3) A session hold taken after a lost transaction hold of the same name:
#      zk_lock_release says true and the node is gone (another session
#      takes the lock at once).  Before, the lost hold's entry drove the new
#      hold's transaction count below zero, and the node stayed until the
#      session ended; the same with an exclusive node kept for a shared
#      hold, which was never given up.
#  (4) With the worker frozen past the proof's margin, a transaction that
#      only sends a notification (NOTIFY, and pg_notify()) fails with ZK002
#      and the listener receives nothing; with the worker running, the same
#      NOTIFY goes through and is received.
# zklock.on_lock_lost = error: the loss reaches the session only through
# its statements, never through a cancel.
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
my $p_pid = $p->query_safe('SELECT pg_backend_pid()');

# Delete P's node of $name behind its back and wait until zk_locks says lost.
sub lose
{
	my ($name, $what) = @_;
	lose_lock($zk, $a, $p_pid, $name, $what);
	return;
}

# ---------------------------------------------------------------------
# (1) A loss caught by a savepoint.
# ---------------------------------------------------------------------
is(bg_result($p, "BEGIN; SELECT zk_lock_acquire_xact('L', '10s') > 0"), 't', '(1) P holds L in transaction scope');
$p->query_safe("INSERT INTO work VALUES ('savepoint-lost')");
lose('L', '(1)');
$p->query_safe('SAVEPOINT s');
my ($state, $err) = bg_sqlstate($p, "SELECT zk_lock_try_xact('L')");
is($state, 'ZK002', '(1) zk_lock_try_xact inside the savepoint reports the loss') or diag($err);
is(bg_sqlstate($p, 'ROLLBACK TO s'), 'ok', '(1) ROLLBACK TO s');
($state, $err) = bg_sqlstate($p, 'COMMIT');
is($state, 'ZK002', '(1) COMMIT fails with ZK002') or diag($err);
like($err, qr/ZooKeeper lock "L" was lost in this transaction/, '(1) ... naming L');
is(committed($a, 'savepoint-lost'), '0', '(1) the row is not committed');
is(bg_sqlstate($p, "BEGIN; INSERT INTO work VALUES ('after-savepoint'); COMMIT"), 'ok',
	'(1) the next transaction commits: the loss was reported once');
is(committed($a, 'after-savepoint'), '1', '(1) ... with its row');

# ---------------------------------------------------------------------
# (2) A loss caught by a PL/pgSQL exception block that retries.
# ---------------------------------------------------------------------
is(bg_result($p, "BEGIN; SELECT zk_lock_acquire_xact('E', '10s') > 0"), 't', '(2) P holds E in transaction scope');
$p->query_safe("INSERT INTO work VALUES ('block-lost')");
lose('E', '(2)');
($state, $err) = bg_sqlstate(
	$p, q{DO $$
BEGIN
	BEGIN
		PERFORM zk_lock_try_xact('E');
	EXCEPTION WHEN SQLSTATE 'ZK002' THEN
		RAISE NOTICE 'caught the loss of E';
	END;
	PERFORM zk_lock_acquire_xact('E', '10s');
END $$});
is($state, 'ok', '(2) the block catches ZK002 and takes E again');
like($err, qr/caught the loss of E/, '(2) ... after the loss was raised inside it');
($state, $err) = bg_sqlstate($p, 'COMMIT');
is($state, 'ZK002', '(2) COMMIT fails with ZK002') or diag($err);
is(committed($a, 'block-lost'), '0', '(2) the row is not committed');
ok(wait_until(sub { lock_state($a, $p_pid, 'E') eq 'none' }, 30, 'E is released'), '(2) the new hold of E went with the transaction');

# ---------------------------------------------------------------------
# (3) No leak: a session hold after a lost transaction hold of its name.
# ---------------------------------------------------------------------
is(bg_result($p, "BEGIN; SELECT zk_lock_acquire_xact('M', '10s') > 0"), 't', '(3) P holds M in transaction scope');
lose('M', '(3)');
$p->query_safe('SAVEPOINT s');
is(bg_sqlstate($p, "SELECT zk_lock_acquire('M', '10s')"), 'ZK002', '(3) a session acquire of M reports the loss');
$p->query_safe('ROLLBACK TO s');
is(bg_result($p, "SELECT zk_lock_acquire('M', '10s') > 0"), 't', '(3) P takes M again, in session scope');
is(bg_sqlstate($p, 'COMMIT'), 'ZK002', '(3) the transaction does not commit');
is(lock_state($a, $p_pid, 'M'), 'held', '(3) the session hold of M outlives the transaction, as an advisory lock would');
is(bg_result($p, "SELECT zk_lock_release('M')"), 't', '(3) zk_lock_release(M) says true');
ok(wait_until(sub { !zk_ls($zk, '/zklock/M') }, 15, 'M\'s directory empties'), '(3) P\'s node of M is gone');
ok(wait_until(sub { lock_state($a, $p_pid, 'M') eq 'none' }, 30, 'M is released'), '(3) zk_locks shows no hold of M');
is(sql_result($a, "SELECT zk_lock_try('M')"), 't', '(3) another session takes M at once');

# The same with a shared hold taken after the exclusive one: the exclusive
# node is kept while the shared hold lasts, and goes with it.  Before, the
# lost hold's entry left the exclusive count at -1 and the kept node was
# never given up.
is(bg_result($p, "BEGIN; SELECT zk_lock_acquire_xact('K', '10s') > 0"), 't', '(3) P holds K in transaction scope');
lose('K', '(3)');
$p->query_safe('SAVEPOINT s');
is(bg_sqlstate($p, "SELECT zk_lock_try_xact('K')"), 'ZK002', '(3) a try of K reports the loss');
$p->query_safe('ROLLBACK TO s');
is(bg_result($p, "SELECT zk_lock_acquire('K', '10s') > 0 AND zk_lock_acquire_shared('K', '10s') > 0"), 't',
	'(3) P takes K again, exclusive then shared, in session scope');
is(bg_sqlstate($p, 'COMMIT'), 'ZK002', '(3) the transaction does not commit');
is(bg_result($p, "SELECT zk_lock_release('K')"), 't', '(3) zk_lock_release(K) says true');
is(bg_result($p, "SELECT zk_lock_release_shared('K')"), 't', '(3) zk_lock_release_shared(K) says true');
ok(wait_until(sub { !zk_ls($zk, '/zklock/K') }, 15, 'K\'s directory empties'), '(3) both of P\'s nodes of K are gone')
  or diag(join ' ', zk_ls($zk, '/zklock/K'));
is(sql_result($a, "SELECT zk_lock_try('K')"), 't', '(3) another session takes K at once');

# ---------------------------------------------------------------------
# (4) A notification needs the proof.
# ---------------------------------------------------------------------
my $l = bg_session($a);
$l->query_safe('LISTEN ch');
is(bg_result($p, "SELECT zk_lock_acquire('N', '10s') > 0"), 't', '(4) P holds N in session scope');
is(bg_sqlstate($p, "NOTIFY ch, 'running'"), 'ok', '(4) with the worker running, NOTIFY goes through');
my ($out) = $l->query("SELECT 'sync'");
like($l->{stdout} . ($out // ''), qr/"ch" with payload "running"/, '(4) ... and the listener receives it');
$l->{stdout} = '';

my $worker = worker_pid($a);
my $frozen = 0;
END { kill('CONT', $frozen) if $frozen; }
ok(kill('STOP', $worker), "(4) SIGSTOP to A's worker ($worker)");
$frozen = $worker;
# Past a third of the 4 s session timeout, the last answer proves nothing.
sleep(2);
($state, $err) = bg_sqlstate($p, "NOTIFY ch, 'frozen'");
is($state, 'ZK002', '(4) NOTIFY alone fails with ZK002 while the proof is missing') or diag($err);
($state, $err) = bg_sqlstate($p, "SELECT pg_notify('ch', 'frozen-fn')");
is($state, 'ZK002', '(4) so does pg_notify()') or diag($err);
($state, $err) = bg_sqlstate($p, "SELECT count(*) FROM work");
is($state, 'ok', '(4) a read-only statement of the holder still commits at once');
kill('CONT', $worker);
$frozen = 0;
($out) = $l->query("SELECT 'sync'");
unlike($l->{stdout} . ($out // ''), qr/frozen/, '(4) the listener received neither notification');

$l->quit;
$p->quit;
done_testing();
