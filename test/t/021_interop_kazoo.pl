# kazoo programs and SQL sessions share one lock, both ways: kazoo's Lock
# (given zklock's and Curator's node names with extra_lock_patterns) against
# zklock's exclusive lock in either layout, and kazoo's ReadLock and
# WriteLock against zklock's shared and exclusive locks.  zklock reads
# kazoo's "__lock__" nodes as exclusive and "__rlock__" nodes as shared, so
# a kazoo Lock also keeps zklock's readers out.  A waiter of either side
# queues behind the other's node, shows in zk_lock_contenders in queue
# order with its client and mode, and is woken by the holder's release.
# Nothing is left in ZooKeeper at the end.  The kazoo side is
# test/peers/kazoo_peer.py.
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::RealBin/../lib";
use ZklockTest;
use Test::More;

my $zk = zk_start(1);
my $a = zklock_node('a', $zk);
my $kz = kazoo_peer($zk);
my $path = $a->safe_psql('postgres', "SELECT zk_lock_path('x')");
is($path, '/zklock/x', 'the lock path kazoo is given');

# Helpers of ZklockTest, bound to this test's cluster, peer and path.
sub sql_once { return sql_result($a, @_) }
sub sql_in { return bg_result(@_) }
sub kazoo_gets { local $Test::Builder::Level = $Test::Builder::Level + 1; return peer_gets($kz, $path, @_) }
sub no_contender_left { local $Test::Builder::Level = $Test::Builder::Level + 1; return zk_wait_empty($zk, $path, @_) }

# --- kazoo's Lock against zklock's exclusive lock (default layout)

is($kz->cmd("lock_try $path"), 'true', 'kazoo takes the lock');
like(join(',', zk_ls($zk, $path)), qr/^[0-9a-f]{32}__lock__\d{10}$/, "kazoo's own node layout");
is(sql_once("SELECT zk_lock_try('x')"), 'f', 'zk_lock_try fails while kazoo holds the lock');
like(sql_once("SELECT zk_lock_acquire('x', '300ms')"), qr/could not obtain ZooKeeper lock "x"/,
	'a timed zk_lock_acquire times out while kazoo holds the lock');
is(sql_once("SELECT zk_lock_try_shared('x')"), 'f',
	'zk_lock_try_shared fails too: a kazoo Lock excludes readers');
is($kz->cmd("lock_release $path"), 'ok', 'kazoo releases the lock');

my $s = bg_session($a);
is(sql_in($s, "SELECT zk_lock_try('x')"), 't', 'zk_lock_try succeeds after kazoo released');
is(sql_in($s, "SELECT zk_lock_release('x')"), 't', 'zklock releases');

is(sql_in($s, "SELECT zk_lock_acquire('x') > 0"), 't', 'zk_lock_acquire holds x');
is($kz->cmd("lock_try $path"), 'false', 'kazoo cannot take the lock while zklock holds x');
is($kz->cmd("lock_try $path 0.2"), 'false', 'nor with a 200 ms wait');
is($kz->cmd("rlock_try $path"), 'false', 'nor the read lock');

# A kazoo waiter queues behind zklock's node and is woken by its delete.
$kz->send("lock_try $path 20");
wait_until(sub { my @kids = zk_ls($zk, $path); @kids == 2 }, 10, 'kazoo to queue behind zklock');
is( sql_once(
		"SELECT position, client, mode, state, coalesce(data, '-') "
		  . "FROM zk_lock_contenders('x') ORDER BY position"),
	"1|zklock|exclusive|held|-\n2|kazoo|exclusive|waiting|kazoo-peer",
	'zk_lock_contenders: zklock holds, kazoo waits');
is(sql_in($s, "SELECT zk_lock_release('x')"), 't', 'zklock releases x');
is($kz->reply(20), 'true', 'the waiting kazoo is granted after zklock released');
is($kz->cmd("lock_release $path"), 'ok', 'kazoo releases the lock');
no_contender_left('after the lock rounds');

# --- zk_lock_contenders: a kazoo holder and a zklock waiter, in order

is($kz->cmd("lock_try $path"), 'true', 'kazoo holds the lock again');
my $w = bg_session($a);
my $wpid = sql_in($w, 'SELECT pg_backend_pid()');
$w->query_until(qr/waiting/, "\\echo waiting\nSELECT zk_lock_acquire('x', '30s') > 0;\n");
wait_until(sub {
	$a->safe_psql('postgres', "SELECT count(*) FROM zk_locks WHERE name = 'x' AND state = 'waiting'") eq '1'
}, 15, 'the zklock waiter to queue');
is( sql_once(
		"SELECT position, client, mode, state, coalesce(holder->>'pid', '-'), coalesce(data, '-') "
		  . "FROM zk_lock_contenders('x') ORDER BY position"),
	"1|kazoo|exclusive|held|-|kazoo-peer\n2|zklock|exclusive|waiting|$wpid|-",
	'zk_lock_contenders: kazoo holds, the zklock backend waits');
is($kz->cmd("lock_release $path"), 'ok', 'kazoo releases the lock');
my ($granted) = split /\n/, sql_in($w, "SELECT 'done'");
is($granted, 't', 'the zklock waiter is granted after kazoo released');
is(sql_in($w, "SELECT zk_lock_release('x')"), 't', 'the waiter releases');
$w->quit;
no_contender_left('after the contenders round');

# --- zklock's exclusive lock in the readwrite layout

is(sql_in($s, "SET zklock.exclusive_layout = 'readwrite'; SELECT zk_lock_acquire('x') > 0"), 't',
	'zklock holds x exclusively (readwrite layout)');
is($kz->cmd("lock_try $path"), 'false', 'kazoo cannot take the lock');
is($kz->cmd("rlock_try $path"), 'false', 'nor the read lock');
is(sql_in($s, "SELECT zk_lock_release('x'); RESET zklock.exclusive_layout"), 't',
	'zklock releases its exclusive hold');
ok(kazoo_gets('lock'), 'kazoo takes the lock after zklock released');
is($kz->cmd("lock_release $path"), 'ok', 'kazoo releases the lock');
no_contender_left('after zklock held exclusively');

# --- kazoo's ReadLock and WriteLock against zklock's shared lock

is(sql_in($s, "SELECT zk_lock_acquire_shared('x') > 0"), 't', 'zklock holds x shared');
is($kz->cmd("lock_try $path"), 'false', 'kazoo cannot take the lock');
is($kz->cmd("wlock_try $path"), 'false', 'nor the write lock');

# A kazoo writer queues behind zklock's reader and is woken by its delete.
$kz->send("wlock_try $path 20");
wait_until(sub { my @kids = zk_ls($zk, $path); @kids == 2 }, 10, 'the kazoo writer to queue');
is( sql_once(
		"SELECT position, client, mode, state FROM zk_lock_contenders('x') ORDER BY position"),
	"1|zklock|shared|held\n2|kazoo|exclusive|waiting",
	'zk_lock_contenders: zklock reads, the kazoo writer waits');
is(sql_in($s, "SELECT zk_lock_release_shared('x')"), 't', 'zklock drops its shared hold');
is($kz->reply(20), 'true', 'the waiting kazoo writer is granted after zklock released');
like(join(',', zk_ls($zk, $path)), qr/^[0-9a-f]{32}__lock__\d{10}$/, 'the write lock is a __lock__ node');
is(sql_once("SELECT zk_lock_try_shared('x')"), 'f', "zk_lock_try_shared fails against kazoo's writer");
is($kz->cmd("wlock_release $path"), 'ok', 'kazoo releases the write lock');
no_contender_left('after the kazoo writer');

is(sql_in($s, "SELECT zk_lock_acquire_shared('x') > 0"), 't', 'zklock holds x shared again');
is($kz->cmd("rlock_try $path"), 'true', 'kazoo takes the read lock next to it');
is(sql_once("SELECT zk_lock_try_shared('x')"), 't', 'another zklock session joins the readers');
is(sql_once("SELECT zk_lock_try('x')"), 'f', 'zk_lock_try fails against the readers');
is(sql_in($s, "SELECT zk_lock_release_shared('x')"), 't', 'zklock drops its shared hold');
is(sql_once("SELECT zk_lock_try('x')"), 'f', "zk_lock_try still fails against kazoo's reader");

# A zklock writer queues behind kazoo's reader and is woken by its delete.
my $w2 = bg_session($a);
my $w2pid = sql_in($w2, 'SELECT pg_backend_pid()');
$w2->query_until(qr/waiting/, "\\echo waiting\nSELECT zk_lock_acquire('x', '30s') > 0;\n");
wait_until(sub { my @kids = zk_ls($zk, $path); @kids == 2 }, 10,
	"the zklock writer to queue behind kazoo's reader alone");
is( sql_once(
		"SELECT position, client, mode, state, coalesce(holder->>'pid', '-') "
		  . "FROM zk_lock_contenders('x') ORDER BY position"),
	"1|kazoo|shared|held|-\n2|zklock|exclusive|waiting|$w2pid",
	'zk_lock_contenders: kazoo reads, the zklock writer waits');
is($kz->cmd("rlock_release $path"), 'ok', 'kazoo releases the read lock');
($granted) = split /\n/, sql_in($w2, "SELECT 'done'");
is($granted, 't', 'the zklock writer is granted after kazoo released');
is(sql_in($w2, "SELECT zk_lock_release('x')"), 't', 'the zklock writer releases');
$w2->quit;

$s->quit;
$kz->quit;
no_contender_left('at the end');

done_testing();
