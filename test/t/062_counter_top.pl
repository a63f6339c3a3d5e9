# A lock directory whose child counter is really at its top.  The counter
# (the count of the directory's child creates, which numbers them) is set
# near 2147483647 in the data directory of the stopped ZooKeeper server
# with ZooKeeper's own classes (zk_set_counter); the server, started again,
# numbers the next children 2147483645, 46, 47, and then 2147483647 again
# for every create.  Two clusters (A, B) and a kazoo Lock contend across the
# top:
#  - below it the lock is handed over as ever (kazoo, then A);
#  - at it, B's request and kazoo's share 2147483647: B is not granted
#    while kazoo's node is there, whatever kazoo decides for itself, nor is
#    A's zk_lock_try: never two holders; zk_lock_contenders shows both in
#    state "anomaly";
#  - the workers warn of the counter (a WARNING naming the directory, and
#    zk_status().near_top_listings) and log the anomaly;
#  - after the top: once kazoo's node goes, B holds; once the directory
#    empties, ZooKeeper removes the container and the next request starts a
#    new directory whose counter begins at 0, and holds.
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::RealBin/../lib";
use ZklockTest;
use Test::More;
use PostgreSQL::Test::Utils;

# The container manager looks for empty containers every 200 ms, not once a
# minute, so that the end of the test does not wait for it.
$ENV{ZK_SYSTEM_PROPERTIES} = 'znode.container.checkIntervalMs=200';
my $zk = zk_start(1);
my $dir = '/zklock/top';

# The directory as zklock makes it, a container, kept by a child that is no
# contender until the test is done with it.
zk_create($zk, $dir, undef, '--container', '--parents');
zk_create($zk, "$dir/keep");
zk_set_counter($zk, $dir, 2147483645);
is(zk_next_sequence($zk, $dir), 2147483645, 'the server numbers the next child 2147483645');
ok(zk_stat($zk, $dir)->{cversion} < 0, "... while the directory's Stat shows a negative cversion");

my $a = zklock_node('a', $zk);
my $b = zklock_node('b', $zk);
my $kazoo = kazoo_peer($zk);

# The number of a contender's node in the directory, by its owner's mark.
sub number_of
{
	my ($re) = @_;
	my @n = sort map { /(\d{10})$/ ? $1 : () } grep { /$re/ } zk_ls($zk, $dir);
	return join ',', @n;
}

sub contenders
{
	return $a->safe_psql('postgres',
		"SELECT string_agg(client || ' ' || state, ', ' ORDER BY state, client) FROM zk_lock_contenders('top')");
}

# Below the top: kazoo holds, A and B queue behind it.
is($kazoo->cmd("lock_try $dir"), 'true', "kazoo's Lock takes the lock");
is(number_of(qr/__lock__/), '2147483645', "kazoo's node is numbered 2147483645");
my $sa = bg_session($a);
my $pa = $sa->query_safe('SELECT pg_backend_pid()');
bg_start($sa, "SELECT 'a granted', zk_lock_acquire('top', '120s') > 0");
wait_until(sub { lock_state($a, $pa, 'top') eq 'waiting' }, 15, 'A waits behind kazoo');
my $sb = bg_session($b);
my $pb = $sb->query_safe('SELECT pg_backend_pid()');
bg_start($sb, "SELECT 'b granted', zk_lock_acquire('top', '120s') > 0");
wait_until(sub { lock_state($b, $pb, 'top') eq 'waiting' }, 15, 'B waits behind kazoo and A');
is(number_of(qr/-lock-/), '2147483646,2147483647', "A's and B's nodes are numbered 2147483646 and 2147483647")
  or diag join ' ', zk_ls($zk, $dir);

is($kazoo->cmd("lock_release $dir"), 'ok', 'kazoo releases');
my ($out) = bg_collect($sa);
like($out, qr/^a granted\|t$/m, 'A holds after kazoo, as ever below the top');
is(lock_state($b, $pb, 'top'), 'waiting', 'B still waits for A');

# At the top: kazoo's next request is numbered 2147483647 too.
$kazoo->send("lock_try $dir 600");
wait_until(sub { number_of(qr/__lock__/) ne '' }, 15, "kazoo's new node is there");
is(number_of(qr/__lock__/), '2147483647', "kazoo's new node has B's number, 2147483647");
is(contenders(), 'kazoo anomaly, zklock anomaly, zklock held',
	'zk_lock_contenders: A holds; B and kazoo share a number, an anomaly');

# A goes: nobody ahead of B and kazoo but each other.
is($sa->query_safe("SELECT zk_lock_release('top')"), 't', 'A releases');
wait_until(sub { contenders() eq 'kazoo anomaly, zklock anomaly' }, 15, 'only the equal nodes are left');
wait_until(sub { slurp_file($b->logfile) =~ /lock directory "\Q$dir\E" has contenders with equal sequence numbers/ },
	15, "B's worker logs the anomaly, with the directory");
is(lock_state($b, $pb, 'top'), 'waiting', 'B is not granted beside an equal number at the top');
is(sql_result($a, "SELECT zk_lock_try('top')"), 'f', "A's zk_lock_try fails: its node would be 2147483647 too");
is($a->safe_psql('postgres', "SELECT count(*) FROM zk_lock_contenders('top') WHERE state = 'held'"),
	'0', 'zk_lock_contenders: no holder');
is(number_of(qr/-lock-/), '2147483647', "A's try left no node behind");

# The counter's warning, on both clusters.
for my $n ($a, $b)
{
	like(
		slurp_file($n->logfile),
		qr/WARNING: .*the child counter of lock directory "\Q$dir\E" is at 214748364\d of 2147483647/,
		uc($n->name) . ": the worker warns of the counter, naming the directory");
	cmp_ok(zk_status_of($n)->{near_top_listings}, '>', 0,
		uc($n->name) . ': zk_status().near_top_listings counts the listings near the top');
}

# kazoo's own rule picks one of two equal nodes by the order of the
# listing; whatever it decided, B did not hold beside it.  kazoo's program
# ends (its session lingers), and its node is deleted.
$kazoo->crash;
my ($knode) = grep { /__lock__/ } zk_ls($zk, $dir);
is(lock_state($b, $pb, 'top'), 'waiting', "B still waits while kazoo's node is there");
ok(zk_delete($zk, "$dir/$knode"), "kazoo's node is deleted");
($out) = bg_collect($sb);
like($out, qr/^b granted\|t$/m, "B holds once kazoo's node is gone");
is(contenders(), 'zklock held', 'zk_lock_contenders: B holds, alone');
is($sb->query_safe("SELECT zk_lock_release('top')"), 't', 'B releases');

# After the top: the directory empties, ZooKeeper removes it, and the
# counter starts again.
wait_until(sub { join(',', zk_ls($zk, $dir)) eq 'keep' }, 15, 'only the keeper is left');
zk_delete($zk, "$dir/keep");
wait_until(sub { !defined zk_stat($zk, $dir) }, 30, 'ZooKeeper removes the empty container');
is($sa->query_safe("SELECT zk_lock_try('top')"), 't', 'A takes the lock in a new directory');
is(number_of(qr/-lock-/), '0000000000', "A's node is numbered 0: the counter started again");
is($sa->query_safe("SELECT zk_lock_release('top')"), 't', 'A releases');

$sa->quit;
$sb->quit;
zk_wait_empty($zk, $dir, 'at the end');
# Once per request that met the anomaly: A's try, B's acquire.
expect_in_log($a, qr/equal sequence numbers/, 1);
expect_in_log($b, qr/equal sequence numbers/, 1);

done_testing();
