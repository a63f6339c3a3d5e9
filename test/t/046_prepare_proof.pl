# PREPARE TRANSACTION proves the session-scope locks as a commit does.
# A prepared transaction is durable: COMMIT PREPARED proves nothing again,
# so the proof at PREPARE is the last one (README, "Prepared transactions").
#  (1) P holds L in session scope and prepares a transaction that wrote a
#      row: PREPARE succeeds, COMMIT PREPARED commits the row, and P still
#      holds L.
#  (2) An operator deletes P's node of L (as any ZooKeeper client could), so
#      the lock is lost and zk_locks shows it 'lost'.  P then writes a row
#      and runs PREPARE TRANSACTION: it fails with ZK002 ("was lost"),
#      nothing is prepared (pg_prepared_xacts is empty, COMMIT PREPARED of
#      the name fails) and the row is not committed.  The loss is reported
#      once: P's next prepared transaction, without locks, succeeds.
#  (3) Transaction-scope locks are still refused at PREPARE (0A000).
# zklock.on_lock_lost = error, so the loss reaches P only through its
# PREPARE, never through a cancel.
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::RealBin/../lib";
use ZklockTest;
use Test::More;
use PostgreSQL::Test::Utils;

my $zk = zk_start(1);
my $a = zklock_node('a', $zk, conf => ["max_prepared_transactions = 4", "zklock.on_lock_lost = 'error'"]);
$a->safe_psql('postgres', 'CREATE TABLE work (tag text)');

sub prepared { $_[0]->safe_psql('postgres', 'SELECT count(*) FROM pg_prepared_xacts') }

my $p = bg_session($a);
$p->query_safe('\set VERBOSITY verbose');
my $p_pid = $p->query_safe('SELECT pg_backend_pid()');

# ---------------------------------------------------------------------
# (1) A held session lock: PREPARE and COMMIT PREPARED go through.
# ---------------------------------------------------------------------
is($p->query_safe("SELECT zk_lock_acquire('L', '10s') > 0"), 't', '(1) P holds L in session scope');
is(bg_sqlstate($p, "BEGIN; INSERT INTO work VALUES ('prepared-held'); PREPARE TRANSACTION 'p-held'"),
	'ok', '(1) PREPARE TRANSACTION succeeds while L is held');
is(prepared($a), '1', '(1) the transaction is prepared');
is(bg_sqlstate($p, "COMMIT PREPARED 'p-held'"), 'ok', '(1) COMMIT PREPARED succeeds');
is(committed($a, 'prepared-held'), '1', '(1) its row is committed');
is(lock_state($a, $p_pid, 'L'), 'held', '(1) P still holds L');

# ---------------------------------------------------------------------
# (2) The lock is lost: PREPARE fails with ZK002 and nothing is prepared.
# ---------------------------------------------------------------------
my $znode = held_znode($a, $p_pid, 'L');
isnt($znode, '', "(2) P's node of L is $znode");
ok(zk_delete($zk, $znode), "(2) an operator deletes P's node");
wait_until(sub { lock_state($a, $p_pid, 'L') eq 'lost' }, 10, 'L turns lost');
is(lock_state($a, $p_pid, 'L'), 'lost', '(2) zk_locks shows L lost');

my ($state, $err) = bg_sqlstate($p, "BEGIN; INSERT INTO work VALUES ('prepared-lost'); PREPARE TRANSACTION 'p-lost'");
is($state, 'ZK002', '(2) PREPARE TRANSACTION fails with ZK002') or diag($err);
like($err, qr/ZooKeeper lock "L" was lost/, '(2) ... saying L was lost');
is(prepared($a), '0', '(2) nothing is prepared');
is(sql_sqlstate($a, "COMMIT PREPARED 'p-lost'"), '42704', '(2) COMMIT PREPARED finds no such transaction');
$p->query('ROLLBACK');
$p->{stderr} = '';
is(committed($a, 'prepared-lost'), '0', '(2) the row is not committed');
is(lock_state($a, $p_pid, 'L'), 'none', '(2) the loss was reported and L forgotten');

# Reported once: the next prepared transaction (no lock held) goes through.
is(bg_sqlstate($p, "BEGIN; INSERT INTO work VALUES ('prepared-after'); PREPARE TRANSACTION 'p-after'"),
	'ok', '(2) P\'s next PREPARE succeeds');
is(bg_sqlstate($p, "COMMIT PREPARED 'p-after'"), 'ok', '(2) ... and commits');
is(committed($a, 'prepared-after'), '1', '(2) ... with its row');

# ---------------------------------------------------------------------
# (3) Transaction-scope locks are refused at PREPARE, as before.
# ---------------------------------------------------------------------
($state, $err) = bg_sqlstate($p,
	"BEGIN; SELECT zk_lock_acquire_xact('X', '10s') > 0; INSERT INTO work VALUES ('prepared-xact'); PREPARE TRANSACTION 'p-xact'");
is($state, '0A000', '(3) PREPARE with a transaction-scope lock fails with 0A000') or diag($err);
is(prepared($a), '0', '(3) nothing is prepared');
$p->query('ROLLBACK');
$p->{stderr} = '';

$p->quit;
wait_until(sub { !zk_ls($zk, '/zklock/L') && !zk_ls($zk, '/zklock/X') }, 10, 'the lock directories empty');
is(join(',', zk_ls($zk, '/zklock/L'), zk_ls($zk, '/zklock/X')), '', 'no node is left');

done_testing();
