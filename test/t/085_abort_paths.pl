# Holds released on abort paths, COMMIT PREPARED's answer, reentrant holds
# in constant memory, and losses that carry to what rests on them (issue
# 40, points 5 to 9):
#  (5) A cursor's transaction hold belongs to its portal: a FETCH that fails
#      inside a savepoint releases it as an abort.  When the lock was lost,
#      the outer COMMIT fails with ZK002 (SQL FETCH, and PL/pgSQL OPEN and
#      FETCH in a block whose EXCEPTION clause catches the error).
#  (6) COMMIT PREPARED in a session whose lock was lost commits, with a
#      WARNING, and does not fail after the fact.
#  (7) 200,000 reentrant acquires of one lock in one transaction: the
#      backend's memory stays flat; one release per acquire.
#  (8) A shared hold granted at once because the backend held the lock
#      exclusively falls with that exclusive hold: after the exclusive
#      node is deleted and a queued writer is granted, the backend does not
#      commit under the shared hold, and zk_lock_check says false.
#  (9) A session-scope set whose member is lost while it waits for another
#      member fails with ZK002 and leaves nothing held.
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
my $a = zklock_node('a', $zk, conf => ["zklock.on_lock_lost = 'error'", 'max_prepared_transactions = 5']);
$a->safe_psql('postgres', 'CREATE TABLE work (tag text)');

my $p = bg_session($a);
$p->query_safe('\set VERBOSITY verbose');
my $p_pid = $p->query_safe('SELECT pg_backend_pid()');

# ---------------------------------------------------------------------
# (5) A cursor's lost hold released on an abort path.
# ---------------------------------------------------------------------
$p->query_safe('BEGIN');
$p->query_safe(
	"DECLARE c CURSOR FOR SELECT CASE WHEN i = 1 THEN zk_lock_acquire_xact('B', '10s') > 0 END AS held, 1 / (2 - i) AS q FROM generate_series(1, 3) i");
is(bg_result($p, 'FETCH 1 FROM c'), 't|1', '(5) the cursor takes B on its first FETCH');
$p->query_safe("INSERT INTO work VALUES ('cursor')");
lose_lock($zk, $a, $p_pid, 'B', '(5)');
$p->query_safe('SAVEPOINT s');
my ($state, $err) = bg_sqlstate($p, 'FETCH 1 FROM c');
is($state, '22012', '(5) the next FETCH fails inside the savepoint') or diag($err);
is(bg_sqlstate($p, 'ROLLBACK TO s'), 'ok', '(5) ROLLBACK TO s');
($state, $err) = bg_sqlstate($p, 'COMMIT');
is($state, 'ZK002', '(5) COMMIT fails with ZK002: the cursor\'s lost hold was released on an abort path') or diag($err);
is(committed($a, 'cursor'), '0', '(5) the row is not committed');
is(lock_state($a, $p_pid, 'B'), 'none', '(5) nothing of B is left');

# PL/pgSQL: a FETCH of the cursor in a block whose EXCEPTION clause catches
# its error.
$p->query_safe('BEGIN');
$p->query_safe(
	"DECLARE d CURSOR FOR SELECT CASE WHEN i = 1 THEN zk_lock_acquire_xact('P', '10s') > 0 END AS held, 1 / (2 - i) AS q FROM generate_series(1, 3) i");
is(bg_result($p, 'FETCH 1 FROM d'), 't|1', '(5) PL/pgSQL case: the cursor takes P');
$p->query_safe("INSERT INTO work VALUES ('plpgsql')");
lose_lock($zk, $a, $p_pid, 'P', '(5) PL/pgSQL');
($state, $err) = bg_sqlstate(
	$p, q{DO $$
DECLARE
	c refcursor := 'd';
	r record;
BEGIN
	BEGIN
		FETCH c INTO r;
	EXCEPTION WHEN division_by_zero THEN
		RAISE NOTICE 'caught the failed FETCH';
	END;
END $$});
is($state, 'ok', '(5) the exception block catches the failed FETCH') or diag($err);
($state, $err) = bg_sqlstate($p, 'COMMIT');
is($state, 'ZK002', '(5) COMMIT after the PL/pgSQL block fails with ZK002') or diag($err);
is(committed($a, 'plpgsql'), '0', '(5) ... its row not committed');

# The loss's own cancel (zklock.on_lock_lost = cancel, on a second
# cluster) interrupts a FETCH inside a savepoint: 57014, and the portal's
# hold is released on the abort path.
my $b = zklock_node('b', $zk);
$b->safe_psql('postgres', 'CREATE TABLE work (tag text)');
my $c = bg_session($b);
my $c_pid = $c->query_safe('SELECT pg_backend_pid()');
$c->query_safe('BEGIN');
$c->query_safe("DECLARE k CURSOR FOR SELECT CASE WHEN i = 1 THEN zk_lock_acquire_xact('C', '10s') > 0 END AS held, "
	  . "pg_sleep(CASE WHEN i = 2 THEN 60 ELSE 0 END) FROM generate_series(1, 3) i");
is(bg_result($c, 'FETCH 1 FROM k'), 't|', '(5) 57014 case: the cursor takes C');
$c->query_safe("INSERT INTO work VALUES ('cancelled')");
$c->query_safe('SAVEPOINT s');
bg_start($c, 'FETCH 1 FROM k');
ok(wait_until(sub { $b->safe_psql('postgres', "SELECT wait_event FROM pg_stat_activity WHERE pid = $c_pid") eq 'PgSleep' },
		15, 'the FETCH runs'), '(5) 57014 case: the second FETCH runs');
my $cnode = held_znode($b, $c_pid, 'C');
ok($cnode ne '' && zk_delete($zk, $cnode), '(5) 57014 case: an operator deletes the node of C');
my ($cout, $cerr) = bg_collect($c);
like($cerr, qr/canceling statement due to user request/, '(5) 57014 case: the loss cancels the FETCH');
$c->query_safe('ROLLBACK TO s');
($state, $err) = bg_sqlstate($c, 'COMMIT');
is($state, 'ZK002', '(5) 57014 case: COMMIT fails with ZK002') or diag($err);
is($b->safe_psql('postgres', "SELECT count(*) FROM work WHERE tag = 'cancelled'"), '0', '(5) 57014 case: the row is not committed');
$c->quit;

# ---------------------------------------------------------------------
# (6) COMMIT PREPARED answers what it did.
# ---------------------------------------------------------------------
is(bg_result($p, "SELECT zk_lock_acquire('S', '10s') > 0"), 't', '(6) P holds S in session scope');
is(bg_sqlstate($p, "BEGIN; INSERT INTO work VALUES ('prepared'); PREPARE TRANSACTION 'p1'"), 'ok',
	'(6) P prepares a transaction under S');
lose_lock($zk, $a, $p_pid, 'S', '(6)');
($state, $err) = bg_sqlstate($p, "COMMIT PREPARED 'p1'");
is($state, 'ok', '(6) COMMIT PREPARED succeeds') or diag($err);
like($err, qr/WARNING:  ZK002: ZooKeeper lock "S" was lost/, '(6) ... with a WARNING about S');
is(committed($a, 'prepared'), '1', '(6) the prepared transaction is committed');
is($a->safe_psql('postgres', 'SELECT count(*) FROM pg_prepared_xacts'), '0', '(6) nothing is left prepared');
is(bg_sqlstate($p, "SELECT zk_lock_release('S')"), 'ZK002', '(6) the loss is reported where S is next used');

# ---------------------------------------------------------------------
# (7) Reentrant holds in constant memory.
# ---------------------------------------------------------------------
my $mem = q{SELECT sum(total_bytes) FROM pg_backend_memory_contexts WHERE name = 'TopMemoryContext'};
$p->query_safe('BEGIN');
is(bg_result($p, "SELECT zk_lock_acquire_xact('R', '10s') > 0"), 't', '(7) P holds R');
my $before = bg_result($p, $mem);
is(bg_result($p, "SELECT count(*) FROM generate_series(1, 200000) i WHERE zk_lock_acquire_xact('R') > 0"),
	'200000', '(7) 200,000 reentrant acquires of R');
my $after = bg_result($p, $mem);
cmp_ok($after - $before, '<', 1024 * 1024, "(7) TopMemoryContext grew by less than 1 MB ($before -> $after)");
is($a->safe_psql('postgres', "SELECT scope FROM zk_locks WHERE pid = $p_pid AND name = 'R'"),
	'transaction', '(7) zk_locks shows R held in transaction scope');
is(bg_sqlstate($p, 'COMMIT'), 'ok', '(7) COMMIT');
# A transaction's holds are handed to the worker at its end; zk_locks shows
# them "releasing" until ZooKeeper has deleted the node.
ok(wait_until(sub { lock_state($a, $p_pid, 'R') eq 'none' }, 30, 'R is released'),
	'(7) every hold of R went with the transaction');

# Savepoints: holds taken in a subtransaction that commits count with the
# parent's; one that rolls back gives back exactly its own.
$p->query_safe('BEGIN');
$p->query_safe("SELECT zk_lock_acquire_xact('R', '10s')");
$p->query_safe("SAVEPOINT a; SELECT zk_lock_acquire_xact('R'); SELECT zk_lock_acquire_xact('R'); RELEASE a");
$p->query_safe("SAVEPOINT b; SELECT zk_lock_acquire_xact('R'); SELECT zk_lock_acquire_xact('R2', '10s'); ROLLBACK TO b");
is(lock_state($a, $p_pid, 'R'), 'held', '(7) R is held after a released and a rolled-back savepoint');
like(lock_state($a, $p_pid, 'R2'), qr/^(none|releasing)$/, '(7) R2, taken only in the rolled-back savepoint, is not');
ok(wait_until(sub { lock_state($a, $p_pid, 'R2') eq 'none' }, 30, 'R2 is released'), '(7) ... and its node goes');
$p->query_safe('COMMIT');
ok(wait_until(sub { lock_state($a, $p_pid, 'R') eq 'none' }, 30, 'R is released'), '(7) none after COMMIT');

# ---------------------------------------------------------------------
# (8) A shared hold that rests on the backend's own exclusive hold.
# ---------------------------------------------------------------------
is(bg_result($p, "SELECT zk_lock_acquire('D', '10s') > 0"), 't', '(8) P holds D exclusively');
my $w = queue_waiter($a, $zk, 'D', '30s');
is(bg_result($p, "SELECT zk_lock_acquire_shared('D', '10s') > 0"), 't',
	'(8) P takes D shared too, at once, ahead of the queued writer');
my $xnode = $a->safe_psql('postgres',
	"SELECT znode FROM zk_locks WHERE pid = $p_pid AND name = 'D' AND mode = 'exclusive'");
ok($xnode ne '' && zk_delete($zk, $xnode), '(8) an operator deletes P\'s exclusive node of D');
my ($at, $out) = waiter_grant($w);
ok(defined $at, '(8) the queued writer is granted D') or diag($out);
ok(wait_until(sub { $a->safe_psql('postgres',
	"SELECT state FROM zk_locks WHERE pid = $p_pid AND name = 'D' AND mode = 'exclusive'") eq 'lost' }, 15, 'exclusive D lost'),
	'(8) zk_locks shows P\'s exclusive hold of D lost');
($state, $err) = bg_sqlstate($p, "BEGIN; INSERT INTO work VALUES ('downgraded'); COMMIT");
is($state, 'ZK002', '(8) a transaction of P under the shared hold does not commit') or diag($err);
is(committed($a, 'downgraded'), '0', '(8) ... its row is not committed');
is(bg_result($p, "SELECT zk_lock_check('D')"), 'f', '(8) then zk_lock_check(D) says false');
is($a->safe_psql('postgres', "SELECT count(*) FROM zk_locks WHERE pid = $p_pid AND name = 'D'"),
	'0', '(8) P holds nothing of D any more');
$w->{s}->quit;

# ---------------------------------------------------------------------
# (9) A set whose member is lost while it waits for another.
# ---------------------------------------------------------------------
my $h = bg_session($a);
is(bg_result($h, "SELECT zk_lock_acquire('s2', '10s') > 0"), 't', '(9) another session holds s2');
bg_start($p, "SELECT zk_lock_acquire(ARRAY['s1', 's2'], '60s')");
ok(wait_until(sub { lock_state($a, $p_pid, 's2') eq 'waiting' }, 15, 'P waits for s2'),
	'(9) P holds s1 and waits for s2');
my $s1 = held_znode($a, $p_pid, 's1');
ok($s1 ne '' && zk_delete($zk, $s1), '(9) an operator deletes P\'s node of s1');
ok(wait_until(sub { lock_state($a, $p_pid, 's1') eq 'lost' }, 15, 's1 lost'), '(9) s1 turns lost');
$h->query_safe("SELECT zk_lock_release('s2')");
($out, $err) = bg_collect($p);
is(sqlstate_of($err), 'ZK002', '(9) the set fails with ZK002') or diag($err);
ok(wait_until(sub { $a->safe_psql('postgres', "SELECT count(*) FROM zk_locks WHERE pid = $p_pid AND name IN ('s1', 's2')") eq '0' },
		15, 'nothing of the set'), '(9) P holds no member of the set');
is(sql_result($a, "SELECT zk_lock_try('s2')"), 't', '(9) s2 is free for another session');

$h->quit;
$p->quit;
done_testing();
