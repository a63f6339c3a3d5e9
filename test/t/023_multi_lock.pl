# Several locks at once: zk_lock_acquire(text[]) and zk_lock_acquire_xact(text[])
# take every lock of the set or none, in one canonical order (bytewise by
# name) whatever order they are given in.
#  (1) Two sessions in clusters A and B take ARRAY['a','b'] and
#      ARRAY['b','a'] in a loop, 500 transactions each, at the same time:
#      neither ever times out (a deadlock would end in timeouts), and
#      every transaction commits.  deadlock_timeout is 100ms: the
#      detection, which may run, finds no deadlock where there is none.
#  (2) On timeout none of the set is left held or queued: B holds 'b'; A
#      asks for ARRAY['c','b','a'] with a 1 s timeout and fails with 55P03;
#      A's zk_locks shows nothing held or waiting, and ZooKeeper soon has
#      only B's node.  The same
#      for a session-scope set, whose earlier locks were granted before the
#      failure.
#  (3) Duplicates are folded: ARRAY['d','d'] takes 'd' once, returns its
#      token twice, and one release frees it.  NULL and empty arrays are
#      refused.
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::RealBin/../lib";
use ZklockTest;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time sleep);

my $zk = zk_start(1);
my $a = zklock_node('a', $zk, conf => "deadlock_timeout = '100ms'");
my $b = zklock_node('b', $zk, conf => "deadlock_timeout = '100ms'");
$_->safe_psql('postgres', 'CREATE TABLE done (i int)') for ($a, $b);

# (1) Opposite orders, concurrently.
my %loop;
for my $pair ([ $a, "ARRAY['a','b']" ], [ $b, "ARRAY['b','a']" ])
{
	my ($node, $set) = @$pair;
	my $s = bg_session($node);
	$s->query_safe('\set VERBOSITY verbose');
	$s->query_until(qr/looping\n/, "\\echo looping\n"
		  . "DO \$\$ BEGIN FOR i IN 1..500 LOOP\n"
		  . "  PERFORM zk_lock_acquire_xact($set, '20s');\n"
		  . "  INSERT INTO done VALUES (i);\n"
		  . "  COMMIT;\n"
		  . "END LOOP; END \$\$;\n");
	$loop{ $node->name } = $s;
}
my $t0 = time;
for my $name (sort keys %loop)
{
	my $s = $loop{$name};
	$s->query("SELECT 'sync'");
	is($s->{stderr}, '', "(1) the loop in $name ran without an error");
	$s->{stderr} = '';
}
my $took = time - $t0;
is($a->safe_psql('postgres', 'SELECT count(*) FROM done') . ' ' . $b->safe_psql('postgres', 'SELECT count(*) FROM done'),
	'500 500', '(1) 500 transactions committed in each cluster, opposite orders, no deadlock');
diag(sprintf('(1) 2 x 500 two-lock transactions in %.1f s', $took));
is($a->safe_psql('postgres', 'SELECT timeouts FROM zk_status()') . ' ' . $b->safe_psql('postgres', 'SELECT timeouts FROM zk_status()'),
	'0 0', '(1) no request timed out in either cluster');
is($a->safe_psql('postgres', 'SELECT deadlocks_found FROM zk_status()') . ' ' . $b->safe_psql('postgres', 'SELECT deadlocks_found FROM zk_status()'),
	'0 0', '(1) no deadlock was found in either cluster');
$_->quit for values %loop;

# (2) A timeout leaves nothing of the set.
my $hb = bg_session($b);
is($hb->query_safe("SELECT zk_lock_acquire('b', '5s') > 0"), 't', '(2) B holds b');
my $b_node = $b->safe_psql('postgres', "SELECT znode FROM zk_locks WHERE name = 'b'");
for my $fn (qw(zk_lock_acquire_xact zk_lock_acquire))
{
	my $sa = bg_session($a);
	$sa->query_safe('\set VERBOSITY verbose');
	$sa->query("BEGIN; SELECT $fn(ARRAY['c','b','a'], '1s'); COMMIT");
	like($sa->{stderr}, qr/55P03: could not obtain ZooKeeper lock "b"/, "(2) $fn of the set times out on b");
	$sa->{stderr} = '';
	is($a->safe_psql('postgres', "SELECT count(*) FROM zk_locks WHERE state <> 'releasing'"), '0',
		"(2) $fn: A holds and queues nothing (a release may still be on its way)");
	is($sa->query_safe("SELECT zk_lock_token('a') IS NULL AND zk_lock_token('c') IS NULL"), 't',
		"(2) $fn: the session holds neither a nor c");
	wait_until(sub { !zk_ls($zk, '/zklock/a') && zk_ls($zk, '/zklock/b') == 1 }, 10, 'A\'s nodes go');
	is(join(',', zk_ls($zk, '/zklock/a'), zk_ls($zk, '/zklock/b')), (split m{/}, $b_node)[-1],
		"(2) $fn: ZooKeeper has B's node of b and nothing of A's");
	$sa->quit;
}
is($b->safe_psql('postgres', "SELECT zk_lock_try('a') AND zk_lock_release('a')"), 't', '(2) a is free');
$hb->quit;

# (3) Duplicates fold; bad input is refused.
my $sd = bg_session($a);
my $tokens = $sd->query_safe("SELECT zk_lock_acquire(ARRAY['d','e','d'], '5s')");
like($tokens, qr/^\{(\d+),(\d+),\1\}$/, '(3) ARRAY[d,e,d] returns d\'s token twice');
is($a->safe_psql('postgres', "SELECT string_agg(name || ':' || scope, ',' ORDER BY name) FROM zk_locks"), 'd:session,e:session',
	'(3) d and e are each held once');
is($sd->query_safe("SELECT zk_lock_release('d') AND zk_lock_release('e')"), 't', '(3) one release each frees them');
is($a->safe_psql('postgres', "SELECT count(*) FROM zk_locks WHERE state <> 'releasing'"), '0', '(3) nothing held');
my ($rc, $out, $err) = $a->psql('postgres', "SELECT zk_lock_acquire(ARRAY['f', NULL])");
like($err, qr/ZooKeeper lock name must not be null/, '(3) a NULL element is refused');
($rc, $out, $err) = $a->psql('postgres', "SELECT zk_lock_acquire('{}'::text[])");
like($err, qr/must not be an empty array/, '(3) an empty array is refused');
$sd->quit;

for my $name (qw(a b c d e))
{
	wait_until(sub { !zk_ls($zk, "/zklock/$name") }, 10, "$name empties");
}
is(join(',', map { zk_ls($zk, "/zklock/$_") } qw(a b c d e)), '', 'no node left');

done_testing();
