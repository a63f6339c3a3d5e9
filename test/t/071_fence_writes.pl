# Fenced writes that carry no token of their own, and stale holders that
# keep a fence row (issue 27, points 2 and 3; README, "Fencing tokens").
# A role without rights on the fencing tables writes a fenced table:
# (1) an UPDATE (and MERGE's update, and ON CONFLICT's) that leaves the
# token column alone is refused (ZK004) for a session that holds no lock,
# and is fenced, with its token written in the row, for one that holds it;
# a holder that lost its lock to a newer one is refused.  (2) The DELETE
# trigger: refused without the lock, fenced with the holder's token with
# it (MERGE's delete too).  (3) A holder that fenced and went idle in its
# transaction loses its lock (its node is deleted, as an expiry would):
# its backend is terminated, with a log line, and the next holder's
# zk_fence and fenced UPDATE answer at once (statement_timeout 5 s would
# turn a wait into 57014).  (4) Point 4, fence first: one holder's two
# connections updating two rows in opposite orders deadlock (40P01)
# unless each takes the table's fence first (zk_fence_table).
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::RealBin/../lib";
use ZklockTest;
use Test::More;
use PostgreSQL::Test::Utils;

my $zk = zk_start(1);
my $a = zklock_node('a', $zk);
fenced_docs($a, delete_trigger => 1);



# (1) UPDATE without the token column.
my $s1 = docs_writer($a);
my $t1 = $s1->query_safe("SELECT zk_lock_acquire('docs')");
is(bg_sqlstate($s1, "INSERT INTO docs VALUES (1, 'first', $t1), (2, 'second', $t1)"), 'ok',
	'the holder inserts with its token');
is(bg_sqlstate($s1, "UPDATE docs SET body = 'first, again' WHERE id = 1"), 'ok',
	'the holder updates without naming the token');
is(doc_row($a, 1), "first, again:$t1", '... and the row carries its token');
$s1->query_safe("SELECT zk_lock_release('docs')");

is(bg_sqlstate($s1, "UPDATE docs SET body = 'no lock' WHERE id = 1"), 'ZK004',
	'released: an update that leaves the token alone is refused (ZK004)');
is(bg_sqlstate($s1,
		"MERGE INTO docs d USING (SELECT 1 AS id) s ON d.id = s.id WHEN MATCHED THEN UPDATE SET body = 'merged'"),
	'ZK004', "... and so is MERGE's update");
is(bg_sqlstate($s1,
		"INSERT INTO docs VALUES (1, 'upsert', $t1) ON CONFLICT (id) DO UPDATE SET body = EXCLUDED.body"),
	'ZK004', "... and ON CONFLICT's update that leaves the token alone");
is(doc_row($a, 1), "first, again:$t1", 'the row is as the holder left it');

my $s2 = docs_writer($a);
my $t2 = $s2->query_safe("SELECT zk_lock_acquire('docs')");
cmp_ok($t2, '>', $t1, 'a new holder has a newer token');
is(bg_sqlstate($s2,
		"MERGE INTO docs d USING (SELECT 1 AS id) s ON d.id = s.id WHEN MATCHED THEN UPDATE SET body = 'merged'"),
	'ok', "the new holder's MERGE update without the token is accepted");
is(doc_row($a, 1), "merged:$t2", '... fenced with its token, which the row now carries');
is($a->safe_psql('postgres', "SELECT token FROM zk_fence_table_tokens WHERE resource = 'docs'"), $t2,
	"the table's fence holds the new holder's token");

# A holder with an older token (the old holder writing with its token in
# the row) is refused as before.
is(bg_sqlstate($s1, "UPDATE docs SET body = 'stale', token = $t1 WHERE id = 2"), 'ZK003',
	'an older token written in the row is refused (ZK003)');

# (2) DELETE.
my $s3 = docs_writer($a);
is(bg_sqlstate($s3, 'DELETE FROM docs WHERE id = 2'), 'ZK004', 'a delete without the lock is refused (ZK004)');
is(bg_sqlstate($s3,
		"MERGE INTO docs d USING (SELECT 2 AS id) s ON d.id = s.id WHEN MATCHED THEN DELETE"),
	'ZK004', "... and so is MERGE's delete");
is(bg_sqlstate($s2, 'DELETE FROM docs WHERE id = 2'), 'ok', 'the holder deletes');
is($a->safe_psql('postgres', 'SELECT count(*) FROM docs WHERE id = 2'), '0', '... and the row is gone');
$s2->query_safe("SELECT zk_lock_release('docs')");
my $t3 = $s3->query_safe("SELECT zk_lock_acquire('docs')");
is(bg_sqlstate($s3, "INSERT INTO docs VALUES (3, 'third', $t3)"), 'ok', 'a third holder inserts');
$s3->query_safe("SELECT zk_lock_release('docs')");
$t2 = $s2->query_safe("SELECT zk_lock_acquire('docs')");
is(bg_sqlstate($s2, "DELETE FROM docs WHERE id = 3"), 'ok', 'a fourth holder deletes with its token');
is($a->safe_psql('postgres', "SELECT token FROM zk_fence_table_tokens WHERE resource = 'docs'"), $t2,
	"... which the table's fence now holds");
$s2->query_safe("SELECT zk_lock_release('docs')");

# (4) Fence first.  One holder writes through two connections, the second
# with the holder's token in the row (presented by its transaction, and
# ZooKeeper confirms it), rows 10 and
# 11 in opposite orders.  Without fencing first each connection locks its
# row before its trigger reaches the fence's row: PostgreSQL finds a
# deadlock.  With zk_fence_table first, the second connection waits at the
# fence holding no row, and both go through.
{
	my $h = docs_writer($a);
	my $th = $h->query_safe("SELECT zk_lock_acquire('docs')");
	is(bg_sqlstate($h, "INSERT INTO docs VALUES (10, 'r', $th), (11, 'r', $th)"), 'ok', 'the holder writes rows 10 and 11');
	my $other = docs_writer($a);
	my $waits = sub {
		wait_until(sub { $a->safe_psql('postgres',
			"SELECT wait_event_type FROM pg_stat_activity WHERE pid = $other->{pid}") eq 'Lock' }, 30,
			'the second connection to wait');
	};
	$other->{pid} = $other->query_safe('SELECT pg_backend_pid()');
	for my $first (0, 1)
	{
		# The second connection presents the holder's token either way
		# (issue 43): fenced first, with zk_fence_table, which takes the
		# table's fence; unfenced, with zk_fence, which takes only the
		# role's own fence.
		my $pre = $first ? "SELECT zk_fence_table('docs', 'docs', $th);\n" : "SELECT zk_fence('docs', $th);\n";
		$h->query_safe('BEGIN');
		$h->query_safe("SELECT zk_fence_table('docs', 'docs')") if $first;
		is(bg_sqlstate($h, "UPDATE docs SET body = 'h', token = $th WHERE id = 10"), 'ok',
			($first ? 'fence first' : 'unfenced first') . ': the first connection updates row 10');
		$other->{stderr} = '';
		$other->query_until(qr/started/,
			"\\echo started\nBEGIN;\n${pre}UPDATE docs SET body = 'o', token = $th WHERE id = 11;\n\\echo done\n");
		$waits->();
		my $st = bg_sqlstate($h, "UPDATE docs SET body = 'h', token = $th WHERE id = 11");
		# Fenced first, the second connection goes on once the first commits;
		# unfenced, it has gone on already, one of them the deadlock's victim.
		$h->query('COMMIT') if $first;
		$other->query_until(qr/done/, '');
		$h->query('COMMIT') unless $first;
		my $other_st = sqlstate_of($other->{stderr});
		$other->query('COMMIT');
		if ($first)
		{
			is("$st/$other_st", 'ok/ok', 'fence first: both connections go through, one after the other');
		}
		else
		{
			ok($st eq '40P01' || $other_st eq '40P01',
				"without fencing first the two connections deadlock (40P01: $st/$other_st)");
		}
	}
	$h->query_safe("SELECT zk_lock_release('docs')");
	$_->quit for ($h, $other);
}

# (3) A stale holder idle in its transaction.
for my $case ([ 'zk_fence', "SELECT zk_fence('docs', %s)" ],
	[ 'the trigger', "UPDATE docs SET body = 'by %s' WHERE id = 1" ])
{
	my ($what, $sql) = @$case;
	my $old = docs_writer($a);
	my $old_pid = $old->query_safe('SELECT pg_backend_pid()');
	my $to = $old->query_safe("SELECT zk_lock_acquire('docs')");
	$old->query_safe('BEGIN');
	is(bg_sqlstate($old, sprintf($sql, $to)), 'ok', "$what: the holder fences in its transaction");
	my $znode = held_znode($a, $old_pid, 'docs');
	my $log = -s $a->logfile;
	ok(zk_delete($zk, $znode), "$what: its node is deleted (as an expiry would) while it is idle in its transaction");
	ok(wait_until(sub { $a->safe_psql('postgres', "SELECT count(*) FROM pg_stat_activity WHERE pid = $old_pid") eq '0' },
		30, 'the stale holder to end'), "$what: the stale holder's backend is ended");
	like(slurp_file($a->logfile, $log), qr/terminating backend $old_pid: its transaction holds a fence row of ZooKeeper lock "docs", which it lost/,
		"$what: the log says why");
	my $new = docs_writer($a);
	$new->query_safe("SET statement_timeout = '5s'");
	my $tn = $new->query_safe("SELECT zk_lock_acquire('docs')");
	is(bg_sqlstate($new, "SELECT zk_fence('docs', $tn)"), 'ok', "$what: the new holder's zk_fence answers");
	is(bg_sqlstate($new, "UPDATE docs SET body = 'new' WHERE id = 1"), 'ok', "$what: ... and its fenced update");
	$new->query_safe("SELECT zk_lock_release('docs')");
	$new->quit;
	eval { $old->quit };
}

$_->quit for ($s1, $s2, $s3);
ok(wait_until(sub { !zk_ls($zk, '/zklock/docs') }, 30, 'docs to empty'), 'no node is left');

done_testing();
