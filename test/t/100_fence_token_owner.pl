# An equal token belongs to its writer (issue 43, point 1; doc/fencing.md,
# "Whose token a row carries").  A token in a fenced row is accepted only
# when the writing session holds the lock with it through zklock, or its
# transaction presented it with zk_fence or zk_fence_table and ZooKeeper
# confirms that its node holds now; a token copied from a row is no claim.
# Ordinary roles: app (fenced_docs) and bystander, which never takes a lock.
#  (1) A holds docs and writes rows 1 and 2; its node is deleted (as an
#      expiry would), A learns it (ZK002); B takes the lock and writes row
#      1.  While B holds: A's "SET token = token", A's ORM save (reload row
#      1, write every column back, B's token included), the bystander's
#      ORM save and its insert with B's token copied from row 1, and a
#      MERGE that writes B's token into row 2: all refused (ZK004).  On the
#      code before, each was accepted, ZooKeeper confirming B's token.
#  (2) B's own ORM saves are accepted: of row 1 (its token) and of row 2
#      (A's older token written back: the row then carries B's).
#  (3) A Curator program holds the lock (B released).  A session of app
#      that holds no lock writes for it: the ORM save with the token it
#      read is refused until the transaction presents Curator's token with
#      zk_fence; then accepted, the row carrying Curator's token.  Writing
#      Curator's token in the row without presenting it is refused; a claim
#      made in a savepoint rolled back, or in an earlier transaction, does
#      not count; once Curator's node is gone, a presented token is refused.
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::RealBin/../lib";
use ZklockTest;
use Test::More;
use PostgreSQL::Test::Utils;

my $zk = zk_start(1);
my $n = zklock_node('a', $zk);
fenced_docs($n, delete_trigger => 1);
$n->safe_psql('postgres', q{
CREATE ROLE bystander LOGIN;
GRANT SELECT, INSERT, UPDATE, DELETE ON docs TO bystander;
GRANT EXECUTE ON FUNCTION zk_fence(text, bigint), zk_fence_table(regclass, text, bigint) TO bystander;
});

# The ORM's save of row $id as $s read it: every column written back.
sub orm_save
{
	my ($s, $id, $body) = @_;
	my $token = $s->query_safe("SELECT token FROM docs WHERE id = $id");
	return bg_sqlstate($s, "UPDATE docs SET id = $id, body = '$body', token = $token WHERE id = $id");
}

# --- (1) a stale holder and a bystander while B holds

my $a = docs_writer($n);
my $a_pid = $a->query_safe('SELECT pg_backend_pid()');
my $ta = $a->query_safe("SELECT zk_lock_acquire('docs')");
is(bg_sqlstate($a, "INSERT INTO docs VALUES (1, 'A', $ta), (2, 'A', $ta)"), 'ok', 'A writes rows 1 and 2 with its token');
ok(zk_delete($zk, held_znode($n, $a_pid, 'docs')), "A's node is deleted (as an expiry would)");
ok(wait_until(sub { lock_state($n, $a_pid, 'docs') eq 'lost' }, 15, "A's hold to turn lost"), "A's hold is lost");
is(bg_sqlstate($a, 'SELECT 1'), 'ZK002', 'A learns that it lost the lock (ZK002)');

my $b = docs_writer($n);
my $tb = $b->query_safe("SELECT zk_lock_acquire('docs')");
cmp_ok($tb, '>', $ta, 'B holds docs with a newer token');
is(bg_sqlstate($b, "UPDATE docs SET body = 'B', token = $tb WHERE id = 1"), 'ok', 'B writes row 1 with its token');

is(bg_sqlstate($a, "UPDATE docs SET body = 'A-stale', token = token WHERE id = 1"), 'ZK004',
	"A's UPDATE ... SET token = token of B's row is refused (ZK004)");
is(orm_save($a, 1, 'A-orm'), 'ZK004', "A's ORM save of row 1 (B's token read and written back) is refused");
my $by = bg_session($n, extra_params => [ '-U', 'bystander' ]);
is(orm_save($by, 1, 'bystander-orm'), 'ZK004', "the bystander's ORM save of row 1 is refused");
my ($st, $err) = bg_sqlstate($by, "INSERT INTO docs VALUES (3, 'copied', $tb)");
is($st, 'ZK004', "the bystander's insert with B's token copied from row 1 is refused");
like($err, qr/a token copied from a row is no claim to the lock/, '... and the detail says why');
is(bg_sqlstate($by,
		"MERGE INTO docs d USING (SELECT 2 AS id) s ON d.id = s.id WHEN MATCHED THEN UPDATE SET body = 'merged', token = $tb"),
	'ZK004', "the bystander's MERGE writing B's token into row 2 is refused");
is(doc_row($n, 1) . ' ' . doc_row($n, 2), "B:$tb A:$ta", 'rows 1 and 2 are as B and A left them');

# --- (2) the holder's ORM saves

is(orm_save($b, 1, 'B-orm'), 'ok', "B's ORM save of row 1 is accepted");
is(orm_save($b, 2, 'B-orm'), 'ok', "B's ORM save of row 2, which carried A's older token, is accepted");
is(doc_row($n, 1) . ' ' . doc_row($n, 2), "B-orm:$tb B-orm:$tb", '... and both rows carry B\'s token');
$b->query_safe("SELECT zk_lock_release('docs')");

# --- (3) a Curator holder writing through a session that holds no lock

my $curator = curator_peer($zk);
is($curator->cmd('mutex_try /zklock/docs'), 'true', 'Curator holds docs');
my $tc = $curator->cmd('mutex_token /zklock/docs');
cmp_ok($tc, '>', $tb, "Curator's token is newer");

my $c = docs_writer($n);
is(bg_sqlstate($c, "UPDATE docs SET body = 'C-unpresented', token = $tc WHERE id = 1"), 'ZK004',
	"Curator's token written in the row without presenting it is refused");
$c->query_safe('BEGIN');
is(orm_save($c, 1, 'C-orm'), 'ZK004', 'the ORM save before presenting is refused');
$c->query_safe('ROLLBACK');
$c->query_safe('BEGIN');
is(bg_sqlstate($c, "SELECT zk_fence('docs', $tc)"), 'ok', "the transaction presents Curator's token with zk_fence");
is(orm_save($c, 1, 'C-orm'), 'ok', '... then its ORM save of row 1 is accepted');
is(bg_sqlstate($c, "UPDATE docs SET body = 'C-col', token = $tc WHERE id = 2"), 'ok', '... and so is a write of the token in row 2');
is(bg_sqlstate($c, 'DELETE FROM docs WHERE id = 2'), 'ok', '... and a delete, fenced with the presented token');
$c->query_safe('COMMIT');
is(doc_row($n, 1), "C-orm:$tc", "row 1 carries Curator's token");
is(orm_save($c, 1, 'C-again'), 'ZK004', 'in the next transaction the claim is gone: refused');
is(bg_sqlstate($c, "BEGIN; SAVEPOINT s; SELECT zk_fence_table('docs', 'docs', $tc); ROLLBACK TO s;"), 'ok',
	'a claim made in a savepoint that rolls back ...');
is(orm_save($c, 1, 'C-sp'), 'ZK004', '... does not count');
$c->query('ROLLBACK');

$c->query_safe('BEGIN');
is(bg_sqlstate($c, "SELECT zk_fence_table('docs', 'docs', $tc)"), 'ok', "presented with zk_fence_table");
my ($cnode) = zk_ls($zk, '/zklock/docs');
ok(zk_delete($zk, "/zklock/docs/$cnode"), "Curator's node is deleted (as an expiry would)");
is(orm_save($c, 1, 'C-late'), 'ZK004', 'the presented token holds no more: the ORM save is refused');
$c->query('ROLLBACK');
is(doc_row($n, 1), "C-orm:$tc", 'row 1 is as the Curator holder left it');

$curator->quit;
$_->quit for ($b, $by, $c);
eval { $a->quit };
done_testing();
