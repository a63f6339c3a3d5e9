# The holder's description is made once per backend and again only when
# the user or application_name changed (issue 46, point 7): what another
# client reads on a lock's node still follows SET application_name and
# SET ROLE from one acquire to the next.  A guard of the cache: the code
# before, which described every acquire afresh, passes it too.
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::RealBin/../lib";
use ZklockTest;
use Test::More;

my $zk = zk_start(1);
my $node = zklock_node('a', $zk, conf => [ "cluster_name = 'a'" ]);
$node->safe_psql('postgres', 'CREATE ROLE other; GRANT ALL ON SCHEMA public TO other');
$node->safe_psql('postgres', 'GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA public TO other');

my $s = bg_session($node);
sub described
{
	my ($lock, $field) = @_;
	return $node->safe_psql('postgres',
		"SELECT holder->>'$field' FROM zk_lock_contenders('$lock') WHERE (holder->>'pid')::int = $s->{pid}");
}
$s->{pid} = $s->query_safe('SELECT pg_backend_pid()');

$s->query_safe("SET application_name = 'first'");
$s->query_safe("SELECT zk_lock_acquire('d1')");
is(described('d1', 'application_name'), 'first', 'the first acquire describes its application_name');
is(described('d1', 'cluster'), 'a', 'and its cluster');
is(described('d1', 'database'), 'postgres', 'and its database');

$s->query_safe("SELECT zk_lock_acquire('d2')");
is(described('d2', 'application_name'), 'first', 'the next acquire the same');

$s->query_safe("SET application_name = 'second'");
$s->query_safe("SELECT zk_lock_acquire('d3')");
is(described('d3', 'application_name'), 'second', 'a changed application_name is described');
is(described('d1', 'application_name'), 'first', 'an earlier node keeps what it said');

$s->query_safe('SET ROLE other');
$s->query_safe("SELECT zk_lock_acquire('d4')");
is(described('d4', 'user'), 'other', 'a changed user is described');
$s->query_safe('RESET ROLE');
$s->query_safe("SELECT zk_lock_acquire('d5')");
isnt(described('d5', 'user'), 'other', 'and the user before it again');

$s->query_safe("SELECT zk_lock_release_all()");
$s->quit;

done_testing();
