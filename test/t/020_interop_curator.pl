# Apache Curator programs and SQL sessions share one lock, both ways:
# Curator's InterProcessMutex against zklock's exclusive lock (default
# layout 'mutex', Curator's "-lock-" nodes), and Curator's
# InterProcessReadWriteLock against zklock's shared and exclusive locks
# (zklock.exclusive_layout = 'readwrite', Curator's "__WRIT__" nodes).
# A waiter of either side queues behind the other's node, shows in
# zk_lock_contenders in queue order with its client and mode, and is woken
# by the holder's release.  Nothing is left in ZooKeeper at the end.  The
# Curator side is test/peers/CuratorPeer.java.
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::RealBin/../lib";
use ZklockTest;
use Test::More;

my $zk = zk_start(1);
my $a = zklock_node('a', $zk);
my $cur = curator_peer($zk);
my $path = $a->safe_psql('postgres', "SELECT zk_lock_path('x')");
is($path, '/zklock/x', 'the lock path Curator is given');

# Helpers of ZklockTest, bound to this test's cluster, peer and path.
sub sql_once { return sql_result($a, @_) }
sub sql_in { return bg_result(@_) }
sub curator_gets { local $Test::Builder::Level = $Test::Builder::Level + 1; return peer_gets($cur, $path, @_) }
sub no_contender_left { local $Test::Builder::Level = $Test::Builder::Level + 1; return zk_wait_empty($zk, $path, @_) }

my $rw = "SET zklock.exclusive_layout = 'readwrite';";

# --- InterProcessMutex against zklock's exclusive lock (default layout)

is($cur->cmd("mutex_try $path"), 'true', 'Curator takes the mutex');
is(sql_once("SELECT zk_lock_try('x')"), 'f', 'zk_lock_try fails while Curator holds the mutex');
is(sql_once("SELECT zk_lock_try_shared('x')"), 'f', 'zk_lock_try_shared fails while Curator holds the mutex');
like(sql_once("SELECT zk_lock_acquire('x', '300ms')"), qr/could not obtain ZooKeeper lock "x"/,
	'a timed zk_lock_acquire times out while Curator holds the mutex');
is($cur->cmd("mutex_release $path"), 'ok', 'Curator releases the mutex');

my $s = bg_session($a);
is(sql_in($s, "SELECT zk_lock_try('x')"), 't', 'zk_lock_try succeeds after Curator released');
is(sql_in($s, "SELECT zk_lock_release('x')"), 't', 'zklock releases');

is(sql_in($s, "SELECT zk_lock_acquire('x') > 0"), 't', 'zk_lock_acquire holds x');
is($cur->cmd("mutex_try $path"), 'false', 'Curator cannot take the mutex while zklock holds x');
is($cur->cmd("mutex_try $path 200"), 'false', 'nor with a 200 ms wait');

# A Curator waiter queues behind zklock's node and is woken by its delete.
$cur->send("mutex_try $path 20000");
wait_until(sub { my @kids = zk_ls($zk, $path); @kids == 2 }, 10, 'Curator to queue behind zklock');
is( sql_once(
		"SELECT position, client, mode, state, coalesce(data, '-') "
		  . "FROM zk_lock_contenders('x') ORDER BY position"),
	"1|zklock|exclusive|held|-\n2|curator|exclusive|waiting|curator-peer",
	'zk_lock_contenders: zklock holds, Curator waits');
is(sql_in($s, "SELECT zk_lock_release('x')"), 't', 'zklock releases x');
is($cur->reply(20), 'true', 'the waiting Curator is granted after zklock released');
is($cur->cmd("mutex_release $path"), 'ok', 'Curator releases the mutex');
no_contender_left('after the mutex rounds');

# --- zk_lock_contenders: a Curator holder and a zklock waiter, in order

is($cur->cmd("mutex_try $path"), 'true', 'Curator holds the mutex again');
my $w = bg_session($a);
my $wpid = sql_in($w, 'SELECT pg_backend_pid()');
$w->query_until(qr/waiting/, "\\echo waiting\nSELECT zk_lock_acquire('x', '30s') > 0;\n");
wait_until(sub {
	$a->safe_psql('postgres', "SELECT count(*) FROM zk_locks WHERE name = 'x' AND state = 'waiting'") eq '1'
}, 15, 'the zklock waiter to queue');
is( sql_once(
		"SELECT position, client, mode, state, coalesce(holder->>'pid', '-') "
		  . "FROM zk_lock_contenders('x') ORDER BY position"),
	"1|curator|exclusive|held|-\n2|zklock|exclusive|waiting|$wpid",
	'zk_lock_contenders: Curator holds, the zklock backend waits');
like(sql_once("SELECT data FROM zk_lock_contenders('x') WHERE client = 'curator'"),
	qr/^curator-peer$/, "Curator's node data is shown raw");
is($cur->cmd("mutex_release $path"), 'ok', 'Curator releases the mutex');
my ($granted) = split /\n/, sql_in($w, "SELECT 'done'");
is($granted, 't', 'the zklock waiter is granted after Curator released');
is(sql_in($w, "SELECT zk_lock_release('x')"), 't', 'the waiter releases');
$w->quit;
no_contender_left('after the contenders round');

# --- InterProcessReadWriteLock against zklock's shared and exclusive locks

is($cur->cmd("write_try $path"), 'true', 'Curator takes the write lock');
is(sql_once("$rw SELECT zk_lock_try('x')"), 'f',
	'zk_lock_try (readwrite layout) fails against the write lock');
is(sql_once("SELECT zk_lock_try_shared('x')"), 'f', 'zk_lock_try_shared fails against the write lock');
is($cur->cmd("write_release $path"), 'ok', 'Curator releases the write lock');
no_contender_left('after the write lock');

is($cur->cmd("read_try $path"), 'true', 'Curator takes the read lock');
is(sql_in($s, "SELECT zk_lock_try_shared('x')"), 't', 'zk_lock_try_shared succeeds next to the read lock');
is(sql_in($s, "SELECT zk_lock_release_shared('x')"), 't', 'zklock releases its shared hold');
is(sql_once("$rw SELECT zk_lock_try('x')"), 'f',
	'zk_lock_try (readwrite layout) fails against the read lock');
is($cur->cmd("read_release $path"), 'ok', 'Curator releases the read lock');
no_contender_left('after the read lock');

is(sql_in($s, "$rw SELECT zk_lock_acquire('x') > 0"), 't', 'zklock holds x exclusively (readwrite layout)');
like(join(',', zk_ls($zk, $path)), qr/^_c_[0-9a-f-]+-__WRIT__\d{10}$/,
	'its node has the layout of a Curator write lock');
is($cur->cmd("read_try $path"), 'false', 'Curator cannot take the read lock');
is($cur->cmd("write_try $path"), 'false', 'Curator cannot take the write lock');
is(sql_in($s, "SELECT zk_lock_release('x')"), 't', 'zklock releases its exclusive hold');
ok(curator_gets('write'), 'Curator takes the write lock after zklock released');
is($cur->cmd("write_release $path"), 'ok', 'Curator releases the write lock');
no_contender_left('after zklock held exclusively');

is(sql_in($s, "SELECT zk_lock_acquire_shared('x') > 0"), 't', 'zklock holds x shared');
like(join(',', zk_ls($zk, $path)), qr/^_c_[0-9a-f-]+-__READ__\d{10}$/,
	'its node has the layout of a Curator read lock');
is($cur->cmd("read_try $path"), 'true', 'Curator takes the read lock next to it');
is($cur->cmd("read_release $path"), 'ok', 'Curator releases the read lock');
is($cur->cmd("write_try $path"), 'false', 'Curator cannot take the write lock');
is(sql_in($s, "SELECT zk_lock_try_shared('x')"), 't', 'a second shared hold by the same session (reentrant)');
is(sql_in($s, "SELECT zk_lock_release_shared('x')"), 't', 'zklock drops one shared hold');
is($cur->cmd("write_try $path"), 'false', 'Curator still cannot take the write lock');

# A Curator writer queues behind zklock's reader and is woken by its delete.
$cur->send("write_try $path 20000");
wait_until(sub { my @kids = zk_ls($zk, $path); @kids == 2 }, 10, 'the Curator writer to queue');
is( sql_once(
		"SELECT position, client, mode, state FROM zk_lock_contenders('x') ORDER BY position"),
	"1|zklock|shared|held\n2|curator|exclusive|waiting",
	'zk_lock_contenders: zklock reads, the Curator writer waits');
is(sql_in($s, "SELECT zk_lock_release_shared('x')"), 't', 'zklock drops its last shared hold');
is($cur->reply(20), 'true', 'the waiting Curator writer is granted after zklock released');
is($cur->cmd("write_release $path"), 'ok', 'Curator releases the write lock');

$s->quit;
$cur->quit;
no_contender_left('at the end');

done_testing();
