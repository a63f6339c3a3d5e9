# A holder's second connection that fenced with the holder's token and sits
# idle in its transaction (doc/fencing.md, "Fence first": "two connections of
# one program, with the same token") is not ended when the holder loses the
# lock: it holds no lock of its own for the worker to watch.  doc/fencing.md
# says so and tells to set idle_in_transaction_session_timeout; this test
# holds that advice to its word.
#  H holds lock docs and writes rows 1 and 2 with its token.  C, a second
#  connection of the same role without a lock, with
#  idle_in_transaction_session_timeout = 3s, opens a transaction, presents
#  H's token with zk_fence_table and updates row 1 with it (proven through
#  ZooKeeper while H holds the lock)
#  and stays idle.  H's node is deleted, as an expiry would, and a new
#  holder N takes the lock.  N's zk_fence_table and its fenced update of
#  row 2 must answer within statement_timeout 20 s (57014 otherwise).
# Without the timeout N waits for as long as C's client stays away (the
# review that found it saw both statements end in 57014).
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::RealBin/../lib";
use ZklockTest;
use Test::More;
use PostgreSQL::Test::Utils;

my $zk = zk_start(1);
my $a = zklock_node('a', $zk);
fenced_docs($a);


my $h = docs_writer($a);
my $h_pid = $h->query_safe('SELECT pg_backend_pid()');
my $th = $h->query_safe("SELECT zk_lock_acquire('docs')");
is(bg_sqlstate($h, "INSERT INTO docs VALUES (1, 'h', $th), (2, 'h', $th)"), 'ok', 'H writes rows 1 and 2 with its token');

my $c = docs_writer($a);
$c->query_safe("SET idle_in_transaction_session_timeout = '3s'");
$c->query_safe('BEGIN');
is(bg_sqlstate($c, "SELECT zk_fence_table('docs', 'docs', $th)"), 'ok',
	"C, H's second connection, presents H's token in its transaction (issue 43: a row's token alone is no claim)");
is(bg_sqlstate($c, "UPDATE docs SET body = 'c', token = $th WHERE id = 1"), 'ok',
	"... and updates row 1 with it");

ok(zk_delete($zk, held_znode($a, $h_pid, 'docs')), "H's node is deleted (as an expiry would) while C is idle in its transaction");
ok(wait_until(sub { lock_state($a, $h_pid, 'docs') eq 'lost' }, 15, 'H to turn lost'), "zk_locks shows H's hold lost");

my $n = docs_writer($a);
$n->query_safe("SET statement_timeout = '20s'");
my $tn = $n->query_safe("SELECT zk_lock_acquire('docs')");
cmp_ok($tn, '>', $th, 'a new holder N has a newer token');
my ($state, $err) = bg_sqlstate($n, "SELECT zk_fence_table('docs', 'docs')");
is($state, 'ok', "N's zk_fence_table answers once C's idle transaction is ended") or diag($err);
($state, $err) = bg_sqlstate($n, "UPDATE docs SET body = 'n' WHERE id = 2");
is($state, 'ok', "N's fenced update of row 2 answers") or diag($err);

$n->query_safe("SELECT zk_lock_release('docs')");
$_->quit for ($n, $h);
eval { $c->quit };
done_testing();
