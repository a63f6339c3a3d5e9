# A fenced table is fenced as a tree (issue 43, point 3): an inheritance
# child shares its parent's fence, as a partition shares its root's, and
# the DDL that would leave a child of a fenced table without its fence
# triggers is refused.  The tables belong to an ordinary role (owner_role);
# app (fenced_docs' grants) writes them without a lock.
#  (1) CREATE TABLE ... INHERITS from a fenced table, and fencing a table
#      that has an unfenced child, are refused (42P17): on the code before,
#      the child was created and a role without the lock updated and
#      deleted its rows through the parent and inserted into it at will.
#  (2) A child given the parent's triggers before it inherits: its rows,
#      written directly or through the parent, are fenced in the parent's
#      one fence (one row of zk_fence_table_tokens, the parent's): a
#      lock-less update or delete is refused (ZK004), an older token
#      refused (ZK003), the holder's writes accepted.
#  (3) A table that inherits from two tables has no one root: the trigger
#      refuses to run on it.
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::RealBin/../lib";
use ZklockTest;
use Test::More;
use PostgreSQL::Test::Utils;

my $zk = zk_start(1);
my $n = zklock_node('a', $zk);
$n->safe_psql('postgres', q{
CREATE ROLE owner_role LOGIN;
CREATE ROLE app LOGIN;
GRANT CREATE ON SCHEMA public TO owner_role;
GRANT EXECUTE ON FUNCTION zk_fence_trigger(), zk_fence_delete_trigger() TO owner_role;
GRANT EXECUTE ON FUNCTION zk_lock_acquire(text, interval), zk_lock_release(text) TO app;
});
my $own = bg_session($n);
$own->query_safe('SET ROLE owner_role');
$own->query_safe(q{
CREATE TABLE docs (id int PRIMARY KEY, body text, token bigint);
CREATE TRIGGER docs_fence BEFORE INSERT OR UPDATE ON docs
	FOR EACH ROW EXECUTE FUNCTION zk_fence_trigger('docs', 'token');
CREATE TRIGGER docs_fence_delete BEFORE DELETE ON docs
	FOR EACH ROW EXECUTE FUNCTION zk_fence_delete_trigger('docs');
GRANT SELECT, INSERT, UPDATE, DELETE ON docs TO app;
});

# (1)
my ($st, $err) = bg_sqlstate($own, 'CREATE TABLE docs_archive () INHERITS (docs)');
is($st, '42P17', '(1) CREATE TABLE ... INHERITS (docs) is refused (42P17)');
like($err, qr/table public.docs_archive inherits from fenced table public.docs without its fence trigger "docs_fence/, '... and says why');
$own->query_safe(q{
CREATE TABLE loose (id int, body text, token bigint);
CREATE TABLE loose_child () INHERITS (loose);
});
is(bg_sqlstate($own, q{CREATE TRIGGER loose_fence BEFORE INSERT OR UPDATE ON loose
	FOR EACH ROW EXECUTE FUNCTION zk_fence_trigger('docs', 'token')}), '42P17',
	'(1) fencing a table whose inheritance child has no fence trigger is refused');

# (2)
$own->query_safe(q{
CREATE TABLE docs_archive (LIKE docs);
CREATE TRIGGER docs_fence BEFORE INSERT OR UPDATE ON docs_archive
	FOR EACH ROW EXECUTE FUNCTION zk_fence_trigger('docs', 'token');
CREATE TRIGGER docs_fence_delete BEFORE DELETE ON docs_archive
	FOR EACH ROW EXECUTE FUNCTION zk_fence_delete_trigger('docs');
GRANT SELECT, INSERT, UPDATE, DELETE ON docs_archive TO app;
});
is(bg_sqlstate($own, 'ALTER TABLE docs_archive INHERIT docs'), 'ok', '(2) a child with the fence triggers of its parent inherits');

my $h = bg_session($n, extra_params => [ '-U', 'app' ]);
my $th = $h->query_safe("SELECT zk_lock_acquire('docs')");
is(bg_sqlstate($h, "INSERT INTO docs VALUES (1, 'parent', $th); INSERT INTO docs_archive VALUES (10, 'child', $th)"), 'ok',
	'the holder writes a row of the parent and one of the child');
is(bg_sqlstate($h, "UPDATE docs SET body = body || ', again'"), 'ok', '... and updates both through the parent');
is($n->safe_psql('postgres', "SELECT fenced_table || ':' || token FROM zk_fence_table_tokens WHERE resource = 'docs'"),
	"docs:$th", "one fence for the tree, the parent's");
$h->query_safe("SELECT zk_lock_release('docs')");

my $o = bg_session($n, extra_params => [ '-U', 'app' ]);
is(bg_sqlstate($o, "UPDATE docs SET body = 'no lock' WHERE id = 10"), 'ZK004', "a lock-less update of the child's row through the parent is refused");
is(bg_sqlstate($o, "DELETE FROM docs WHERE id = 10"), 'ZK004', '... and a delete');
is(bg_sqlstate($o, "INSERT INTO docs_archive VALUES (11, 'old', 1)"), 'ZK003', "an insert into the child with an older token is refused (ZK003)");
is($n->safe_psql('postgres', 'SELECT string_agg(body, \',\' ORDER BY id) FROM docs'), 'parent, again,child, again', 'the rows are as the holder left them');

# (3)
$own->query_safe(q{
CREATE TABLE other_parent (id int, body text, token bigint);
ALTER TABLE docs_archive INHERIT other_parent;
});
my $h2 = bg_session($n, extra_params => [ '-U', 'app' ]);
my $t2 = $h2->query_safe("SELECT zk_lock_acquire('docs')");
($st, $err) = bg_sqlstate($h2, "UPDATE docs_archive SET body = 'two parents' WHERE id = 10");
is($st, '0A000', '(3) the trigger refuses to run on a table with two parents');
like($err, qr/cannot fence table "docs_archive": it inherits from 2 tables/, '... and says why');
$h2->query_safe("SELECT zk_lock_release('docs')");

$_->quit for ($own, $h, $o, $h2);
done_testing();
