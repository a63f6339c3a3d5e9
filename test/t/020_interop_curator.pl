# Apache Curator programs and SQL sessions share one lock, both ways:
# Curator's InterProcessMutex against zklock's exclusive lock (default
# layout 'mutex', Curator's "-lock-" nodes), and Curator's
# InterProcessReadWriteLock against zklock's shared and exclusive locks
# (zklock.exclusive_layout = 'readwrite', Curator's "__WRIT__" nodes).
# A waiter of either side queues behind the other's node, shows in
# zk_lock_contenders in queue order with its client, mode and node data,
# and is woken by the holder's release.  Nothing is left in ZooKeeper at
# the end.  The Curator side is test/peers/CuratorPeer.java; the scenarios
# that the kazoo test (021) runs too are methods of test/lib/ZklockPeers.pm.
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::RealBin/../lib";
use ZklockTest;
use ZklockPeers;
use Test::More;

my $t = ZklockPeers->start('curator');

# --- InterProcessMutex against zklock's exclusive lock (default layout)

$t->peer_excludes_zklock('mutex');
$t->zklock_excludes_peer('mutex');

# --- zk_lock_contenders: a Curator holder and a zklock waiter, in order

is($t->try('mutex'), 'true', 'Curator holds the mutex again');
$t->zklock_waits_behind_peer('mutex');

# --- InterProcessReadWriteLock against zklock's shared and exclusive locks
# (zklock's exclusive requests in the readwrite layout, which Curator's
# read-write lock sees)

$t->peer_excludes_zklock('write', 'readwrite');
$t->peer_reader_shares('read', 'readwrite');
$t->zklock_writes_readwrite([qw(read write)], 'write');

$t->zklock_reads('read', 'write');
is($t->sql_in("SELECT zk_lock_try_shared('x')"), 't', 'a second shared hold by the same session (reentrant)');
is($t->sql_in("SELECT zk_lock_release_shared('x')"), 't', 'zklock drops one shared hold');
is($t->try('write'), 'false', 'Curator still cannot take the write lock');

# A Curator writer queues behind zklock's reader and is woken by its delete.
$t->peer_waits_behind_zklock('write', 'shared');
is($t->release('write'), 'ok', 'Curator releases the write lock');

$t->finish;

done_testing();
