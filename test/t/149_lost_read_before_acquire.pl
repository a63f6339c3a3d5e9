# An acquire is told of its lock's loss before it takes anything, whatever
# mode was lost.  Found by the explorer (found/43-lost-downgraded-hold-
# fenced-write.sql): a session held lock docs exclusively, took it shared
# and released the exclusive hold (its node stays, kept for the read), and
# an operator deleted the shared node.  zk_lock_acquire('docs') then
# stacked on the kept exclusive node, and only the statement's end told of
# the lost read: ZK002, and yet the session held the lock, for the session,
# with a token it had never been shown (a fenced write with
# zk_lock_token('docs') then committed).  Now:
#  (1) that acquire fails with ZK002 and leaves nothing: no hold in
#      zk_locks, zk_lock_token NULL, no node in ZooKeeper (the kept
#      exclusive node goes with the read it was kept for), a fenced write
#      presenting zk_lock_token() refused, zk_fence_table without a token
#      refused (ZK004), and another cluster takes the lock at once;
#  (2) a lone shared hold lost, then an exclusive acquire: ZK002, and no
#      exclusive node was made;
#  (3) after the loss was told, the next acquire is granted as usual;
# and, on a cluster with zklock.on_lock_lost = error (nothing interrupts a
# statement there), a loss of another hold is told first too:
#  (4) a hold of m1 lost, then zk_lock_acquire('m0'): ZK002 for m1, and m0
#      not taken;
#  (5) an upgrade waiting (u held shared by two sessions, one of them asks
#      for it exclusive) whose own read is deleted meanwhile: when the
#      other reader leaves, the grant is given back with the ZK002 and
#      nothing is held;
#  (6) a lock set waiting for its second member while the read its first
#      member rests on (a downgrade) is deleted: ZK002, and neither member
#      is held.
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::RealBin/../lib";
use ZklockTest;
use Test::More;
use Time::HiRes qw(sleep);

my $zk = zk_start(1);
my $a = zklock_node('a', $zk);
my $b = zklock_node('b', $zk, conf => "zklock.on_lock_lost = 'error'");
fenced_docs($a);
$a->safe_psql('postgres', q{
INSERT INTO docs VALUES (1, 'init', 1);
GRANT EXECUTE ON FUNCTION zk_lock_acquire_shared(text, interval), zk_lock_token(text) TO app;
});
my $dir = '/zklock/docs';

# The node by which backend $pid holds docs in $mode.
sub node_of
{
	my ($pid, $mode) = @_;
	return $a->safe_psql('postgres',
		"SELECT coalesce((SELECT znode FROM zk_locks WHERE pid = $pid AND name = 'docs' AND mode = '$mode'), '')");
}

# The error of a statement of session $s, cleared.
sub error_of
{
	my ($s, $sql) = @_;
	$s->query($sql);
	my $err = $s->{stderr};
	$s->{stderr} = '';
	return $err;
}

# The count $sql gives on $node once it is 0, or after 15 s.
sub settled
{
	my ($node, $sql) = @_;
	my $n;
	for (1 .. 150)
	{
		$n = $node->safe_psql('postgres', $sql);
		last if $n eq '0';
		sleep 0.1;
	}
	return $n;
}

# What backend $pid holds of docs, as zk_locks says, once the holds given
# back are gone (a hold given back shows as releasing until its node is
# deleted): waits up to 15 s for none.
sub holds_of
{
	my ($pid) = @_;
	my $sql = "SELECT count(*) FROM zk_locks WHERE pid = $pid AND name = 'docs'";
	return settled($a, $sql);
}

# (1) The downgraded hold.
my $s = docs_writer($a);
my $pid = $s->query_safe('SELECT pg_backend_pid()');
is($s->query_safe("SELECT zk_lock_acquire('docs', '5s') > 0"), 't', '(1) the session holds docs exclusively');
is($s->query_safe("SELECT zk_lock_acquire_shared('docs', '5s') > 0 AND zk_lock_release('docs')"), 't',
	'(1) it takes docs shared and releases the exclusive hold');
is(zk_nchildren($zk, $dir), 2, '(1) both nodes are in ZooKeeper: the exclusive one is kept for the read');
my $read = node_of($pid, 'shared');
ok($read ne '' && zk_delete($zk, $read), '(1) an operator deletes the shared node');
ok(wait_until(sub { $a->safe_psql('postgres',
	"SELECT count(*) FROM zk_locks WHERE pid = $pid AND name = 'docs' AND mode = 'shared' AND state = 'lost'") eq '1' },
	15, 'the read turns lost'), '(1) zk_locks shows the read lost');

like(error_of($s, "SELECT zk_lock_acquire('docs', '2s')"), qr/ZK002: ZooKeeper lock "docs" was lost/, '(1) the acquire fails with ZK002');
is($s->query_safe("SELECT zk_lock_token('docs') IS NULL"), 't', '(1) zk_lock_token is NULL: nothing is held');
is(holds_of($pid), '0', '(1) zk_locks shows no hold of docs for the session');
zk_wait_empty($zk, $dir, '(1) the kept exclusive node went with the lost read');
like(error_of($s, "BEGIN; UPDATE docs SET body = 'stale', token = zk_lock_token('docs') WHERE id = 1"),
	qr/22004: null fencing token/, '(1) a fenced write presenting zk_lock_token() is refused');
$s->query_safe('ROLLBACK');
like(error_of($s, "SELECT zk_fence_table('docs', 'docs')"), qr/ZK004/, '(1) zk_fence_table without a token is refused (ZK004)');
is(doc_row($a, 1), 'init:1', '(1) the row is as it was');
is($b->safe_psql('postgres', "SELECT zk_lock_try('docs')"), 't', '(1) another cluster takes docs at once');
zk_wait_empty($zk, $dir, '(1) after the other cluster\'s session ended');

# (2) A lone read lost, then an exclusive acquire.
is($s->query_safe("SELECT zk_lock_acquire_shared('docs', '5s') > 0"), 't', '(2) the session holds docs shared');
$read = node_of($pid, 'shared');
ok($read ne '' && zk_delete($zk, $read), '(2) an operator deletes the shared node');
ok(wait_until(sub { lock_state($a, $pid, 'docs') eq 'lost' }, 15, 'the read turns lost'),
	'(2) zk_locks shows the read lost');
like(error_of($s, "SELECT zk_lock_acquire('docs', '2s')"), qr/ZK002: ZooKeeper lock "docs" was lost/, '(2) the exclusive acquire fails with ZK002');
is(holds_of($pid), '0', '(2) no hold is left, exclusive or shared');
is(zk_nchildren($zk, $dir), 0, '(2) no exclusive node was made');

# (3) Told once: the next acquire is granted.
is($s->query_safe("SELECT zk_lock_acquire('docs', '5s') > 0"), 't', '(3) the next acquire is granted');
is(error_of($s, "UPDATE docs SET body = 'held', token = zk_lock_token('docs') WHERE id = 1"), '',
	'(3) the holder\'s fenced write commits');
like(doc_row($a, 1), qr/^held:\d+$/, '(3) with its token');
$s->quit;
zk_wait_empty($zk, $dir, 'after the session ended');

# ---- on b, where a loss interrupts nothing ----

# The node by which backend $pid of b holds $name in $mode.
sub b_node
{
	my ($pid, $name, $mode) = @_;
	return $b->safe_psql('postgres',
		"SELECT coalesce((SELECT znode FROM zk_locks WHERE pid = $pid AND name = '$name' AND mode = '$mode' AND state = 'held'), '')");
}

sub b_state
{
	my ($pid, $name, $mode) = @_;
	return $b->safe_psql('postgres',
		"SELECT coalesce((SELECT state FROM zk_locks WHERE pid = $pid AND name = '$name' AND mode = '$mode'), 'none')");
}

# Every request and hold of backend $pid of b, once those given back are
# gone (up to 15 s).
sub b_holds
{
	my ($pid) = @_;
	my $sql = "SELECT count(*) FROM zk_locks WHERE pid = $pid";
	return settled($b, $sql);
}

# (4) Another lock's loss.
my $t = bg_session($b);
$t->query_safe('\set VERBOSITY verbose');
my $tpid = $t->query_safe('SELECT pg_backend_pid()');
is($t->query_safe("SELECT zk_lock_acquire('m1', '5s') > 0"), 't', '(4) the session holds m1');
my $m1 = b_node($tpid, 'm1', 'exclusive');
ok($m1 ne '' && zk_delete($zk, $m1), '(4) an operator deletes the node of m1');
ok(wait_until(sub { b_state($tpid, 'm1', 'exclusive') eq 'lost' }, 15, 'm1 turns lost'), '(4) zk_locks shows m1 lost');
like(error_of($t, "SELECT zk_lock_acquire('m0', '2s')"), qr/ZK002: ZooKeeper lock "m1" was lost/,
	'(4) zk_lock_acquire(m0) fails with ZK002 for m1');
is(b_holds($tpid), '0', '(4) the session holds nothing: m0 was not taken');
is(zk_nchildren($zk, '/zklock/m0'), 0, '(4) no node of m0');
is($t->query_safe("SELECT zk_lock_acquire('m0', '5s') > 0 AND zk_lock_release('m0')"), 't',
	'(4) told once: m0 is taken and released next');

# (5) An upgrade waiting while its own read is deleted.
my $r = bg_session($b);
is($t->query_safe("SELECT zk_lock_acquire_shared('u', '5s') > 0"), 't', '(5) the session holds u shared');
is($r->query_safe("SELECT zk_lock_acquire_shared('u', '5s') > 0"), 't', '(5) another session holds u shared');
$t->query_until(qr/upgrading/, "\\echo upgrading\nSELECT zk_lock_acquire('u', '60s');\n\\echo upgraded\n");
ok(wait_until(sub { b_state($tpid, 'u', 'exclusive') eq 'waiting' }, 15, 'the upgrade waits'),
	'(5) the exclusive request waits for the other reader');
my $read_u = b_node($tpid, 'u', 'shared');
ok($read_u ne '' && zk_delete($zk, $read_u), '(5) an operator deletes the waiting session\'s read');
ok(wait_until(sub { b_state($tpid, 'u', 'shared') eq 'lost' }, 15, 'the read turns lost'), '(5) zk_locks shows the read lost');
is($r->query_safe("SELECT zk_lock_release_shared('u')"), 't', '(5) the other reader leaves');
$t->query_until(qr/upgraded/, '');
like($t->{stderr}, qr/ZK002: ZooKeeper lock "u" was lost/, '(5) the upgrade fails with ZK002');
$t->{stderr} = '';
is(b_holds($tpid), '0', '(5) the session holds nothing: the grant was given back');
zk_wait_empty($zk, '/zklock/u', '(5) no node of u is left');

# (6) A set waiting while the read its first member rests on is deleted.
is($t->query_safe("SELECT zk_lock_acquire('v', '5s') > 0 AND zk_lock_acquire_shared('v', '5s') > 0 AND zk_lock_release('v')"),
	't', '(6) the session downgrades v');
is($r->query_safe("SELECT zk_lock_acquire('w', '5s') > 0"), 't', '(6) another session holds w');
$t->query_until(qr/set_begun/, "\\echo set_begun\nSELECT zk_lock_acquire(ARRAY['v', 'w'], '60s');\n\\echo set_over\n");
ok(wait_until(sub { b_state($tpid, 'w', 'exclusive') eq 'waiting' }, 15, 'the set waits for w'),
	'(6) the set waits for w');
my $read_v = b_node($tpid, 'v', 'shared');
ok($read_v ne '' && zk_delete($zk, $read_v), '(6) an operator deletes the read of v');
ok(wait_until(sub { b_state($tpid, 'v', 'shared') eq 'lost' }, 15, 'the read of v turns lost'),
	'(6) zk_locks shows the read of v lost');
is($r->query_safe("SELECT zk_lock_release('w')"), 't', '(6) the holder of w releases it');
$t->query_until(qr/set_over/, '');
like($t->{stderr}, qr/ZK002: ZooKeeper lock "v" was lost/, '(6) the set fails with ZK002');
$t->{stderr} = '';
is(b_holds($tpid), '0', '(6) neither member is held');
zk_wait_empty($zk, '/zklock/v', '(6) no node of v is left');
zk_wait_empty($zk, '/zklock/w', '(6) no node of w is left');
$t->quit;
$r->quit;

done_testing();
