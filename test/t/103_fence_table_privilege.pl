# zk_fence_table requires the privilege on the table whose fence it takes
# (issue 43, point 4): a partition's fence is its root's, so a role that
# may write one partition only may not take it.  Ordinary roles:
# part_writer has INSERT on partition parts_1 only; tree_writer has
# INSERT on the root parts; both hold lock parts.
#  part_writer: zk_fence_table('parts_1', 'parts') refused (42501), the
#  detail naming the root (on the code before: accepted, the root's fence
#  row then held by the role in its transaction, every partition's fenced
#  writers waiting); tree_writer: accepted through the root and through
#  the partition.
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
CREATE ROLE part_writer LOGIN;
CREATE ROLE tree_writer LOGIN;
GRANT EXECUTE ON FUNCTION zk_lock_acquire(text, interval), zk_lock_release(text),
	zk_fence_table(regclass, text, bigint) TO part_writer, tree_writer;
CREATE TABLE parts (id int, token bigint) PARTITION BY RANGE (id);
CREATE TABLE parts_1 PARTITION OF parts FOR VALUES FROM (0) TO (10);
CREATE TABLE parts_2 PARTITION OF parts FOR VALUES FROM (10) TO (20);
CREATE TRIGGER parts_fence BEFORE INSERT OR UPDATE ON parts
	FOR EACH ROW EXECUTE FUNCTION zk_fence_trigger('parts', 'token');
GRANT INSERT ON parts_1 TO part_writer;
GRANT INSERT ON parts TO tree_writer;
});

for my $role (qw(part_writer tree_writer))
{
	my $s = bg_session($n, extra_params => [ '-U', $role ]);
	my $t = $s->query_safe("SELECT zk_lock_acquire('parts')");
	my ($st, $err) = bg_sqlstate($s, "BEGIN; SELECT zk_fence_table('parts_1', 'parts'); COMMIT;");
	$s->query('ROLLBACK');
	if ($role eq 'part_writer')
	{
		is($st, '42501', 'a writer of one partition may not take the fence of its root');
		like($err, qr/The fence of "parts_1" is the fence of its whole tree, "parts"'s/, '... and the detail names the root');
		is(bg_sqlstate($s, "SELECT zk_fence_table('parts', 'parts')"), '42501', '... nor name the root itself');
		is(bg_sqlstate($s, "INSERT INTO parts_1 VALUES (1, $t)"), 'ok', '... while its fenced insert into the partition goes through');
	}
	else
	{
		is($st, 'ok', 'a writer of the root takes the fence through a partition');
		is(bg_sqlstate($s, "SELECT zk_fence_table('parts', 'parts')"), 'ok', '... and through the root');
	}
	$s->query_safe("SELECT zk_lock_release('parts')");
	$s->quit;
}
done_testing();
