# kazoo programs and SQL sessions share one lock, both ways: kazoo's Lock
# (given zklock's and Curator's node names with extra_lock_patterns) against
# zklock's exclusive lock in either layout, and kazoo's ReadLock and
# WriteLock against zklock's shared and exclusive locks.  zklock reads
# kazoo's "__lock__" nodes as exclusive and "__rlock__" nodes as shared, so
# a kazoo Lock also keeps zklock's readers out.  A waiter of either side
# queues behind the other's node, shows in zk_lock_contenders in queue
# order with its client, mode and node data, and is woken by the holder's
# release.  Nothing is left in ZooKeeper at the end.  The kazoo side is
# test/peers/kazoo_peer.py; the scenarios that the Curator test (020) runs
# too are methods of test/lib/ZklockPeers.pm.
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::RealBin/../lib";
use ZklockTest;
use ZklockPeers;
use Test::More;

my $t = ZklockPeers->start('kazoo');

# --- kazoo's Lock against zklock's exclusive lock (default layout)

$t->peer_excludes_zklock('lock');
$t->zklock_excludes_peer('lock', 'rlock');

# --- zk_lock_contenders: a kazoo holder and a zklock waiter, in order

is($t->try('lock'), 'true', 'kazoo holds the lock again');
$t->zklock_waits_behind_peer('lock');

# --- zklock's exclusive lock in the readwrite layout

$t->zklock_writes_readwrite([qw(lock rlock)], 'lock');

# --- kazoo's ReadLock and WriteLock against zklock's shared lock

$t->zklock_reads('rlock', 'lock', 'wlock');

# A kazoo writer queues behind zklock's reader and is woken by its delete.
$t->peer_waits_behind_zklock('wlock', 'shared');
like($t->nodes, qr/^[0-9a-f]{32}__lock__\d{10}$/, 'the write lock is a __lock__ node');
is($t->sql_once("SELECT zk_lock_try_shared('x')"), 'f', "zk_lock_try_shared fails against kazoo's writer");
is($t->release('wlock'), 'ok', 'kazoo releases the write lock');
$t->no_contender_left('after the kazoo writer');

# A zklock writer queues behind kazoo's reader and is woken by its delete.
$t->peer_reader_shares('rlock');

$t->finish;

done_testing();
