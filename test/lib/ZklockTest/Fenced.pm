# ZklockTest::Fenced: the fenced table the fencing tests write, and the
# sessions of the role that writes it.
#
#   fenced_docs($node, delete_trigger => 1)
#       role app (LOGIN) with EXECUTE on the acquire, the release, zk_fence
#       and zk_fence_table; table docs (id, body, token) fenced by
#       zk_fence_trigger('docs', 'token') (and zk_fence_delete_trigger with
#       delete_trigger), which app may read and write.
#   docs_writer($node)   a background session as app, VERBOSITY verbose
#   doc_row($node, $id)  "body:token" of row $id
package ZklockTest::Fenced;

use strict;
use warnings FATAL => 'all';

use Exporter 'import';
use ZklockTest::Node;

our @EXPORT = qw(fenced_docs docs_writer doc_row);

sub fenced_docs
{
	my ($node, %opts) = @_;
	my $delete = $opts{delete_trigger} ? q{
CREATE TRIGGER docs_fence_delete BEFORE DELETE ON docs
	FOR EACH ROW EXECUTE FUNCTION zk_fence_delete_trigger('docs');} : '';
	$node->safe_psql('postgres', qq{
CREATE ROLE app LOGIN;
GRANT EXECUTE ON FUNCTION zk_lock_acquire(text, interval), zk_lock_release(text),
	zk_fence(text, bigint), zk_fence_table(regclass, text, bigint) TO app;
CREATE TABLE docs (id int PRIMARY KEY, body text, token bigint);
CREATE TRIGGER docs_fence BEFORE INSERT OR UPDATE ON docs
	FOR EACH ROW EXECUTE FUNCTION zk_fence_trigger('docs', 'token');$delete
GRANT SELECT, INSERT, UPDATE, DELETE ON docs TO app;
});
	return;
}

sub docs_writer
{
	my ($node) = @_;
	my $s = bg_session($node, extra_params => [ '-U', 'app' ]);
	$s->query_safe('\set VERBOSITY verbose');
	return $s;
}

sub doc_row
{
	my ($node, $id) = @_;
	return $node->safe_psql('postgres', "SELECT body || ':' || token FROM docs WHERE id = $id");
}

1;
