# A session that holds a lock exclusive takes it shared at once, whatever
# is queued behind its exclusive node, and a queued writer never slips in
# between its two holds: the exclusive node stays while either hold does.
# Against a real Curator InterProcessReadWriteLock writer and a kazoo
# WriteLock, each queued behind zklock's exclusive node (zklock in the
# readwrite layout, which Curator's read-write lock sees; kazoo is given
# zklock's markers):
#  - zk_lock_try_shared succeeds and zk_lock_acquire_shared returns at
#    once (on the unfixed rule the shared request waited for the writer,
#    which waits for the holder: 55P03);
#  - zk_lock_contenders shows zklock's exclusive and shared nodes held and
#    the peer's writer waiting;
#  - after zk_lock_release (the exclusive hold) the writer still waits, its
#    node behind zklock's kept exclusive node; after the shared release it
#    is granted;
#  - zk_lock_release_all and the session's end give up both nodes.
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::RealBin/../lib";
use ZklockTest;
use Test::More;

my $zk = zk_start(1);
my $a = zklock_node('a', $zk);
my $dir = '/zklock/x';
my %peers = (
	Curator => [ curator_peer($zk), 'write', 20000 ],
	kazoo   => [ kazoo_peer($zk),   'wlock', 20 ],
);

for my $name (sort keys %peers)
{
	my ($peer, $cmd, $wait) = @{ $peers{$name} };
	my $s = bg_session($a);
	$s->query_safe("SET zklock.exclusive_layout = 'readwrite'");
	is($s->query_safe("SELECT zk_lock_acquire('x', '5s') > 0"), 't', "$name: zklock holds x exclusive");

	$peer->send("${cmd}_try $dir $wait");
	wait_until(sub { zk_ls($zk, $dir) == 2 }, 15, "$name: the writer queues behind zklock");

	is($s->query_safe("SELECT zk_lock_try_shared('x')"), 't', "$name: zk_lock_try_shared succeeds at once");
	is($s->query_safe("SELECT zk_lock_acquire_shared('x', '2s') > 0"), 't',
		"$name: zk_lock_acquire_shared returns at once");
	is( $a->safe_psql('postgres',
			"SELECT string_agg(client || ' ' || mode || ' ' || state, ', ' ORDER BY position) FROM zk_lock_contenders('x')"),
		'zklock exclusive held, ' . lc($name) . ' exclusive waiting, zklock shared held',
		"$name: zk_lock_contenders: zklock holds both modes, the writer waits");

	# The exclusive hold ends, the shared ones last: the writer stays out.
	is($s->query_safe("SELECT zk_lock_release('x')"), 't', "$name: zklock drops its exclusive hold");
	is($a->safe_psql('postgres', "SELECT zk_lock_try('x')"), 'f',
		"$name: another session still cannot take it exclusive");
	is( $a->safe_psql('postgres',
			"SELECT string_agg(client || ' ' || mode || ' ' || state, ', ' ORDER BY position) FROM zk_lock_contenders('x')"),
		'zklock exclusive held, ' . lc($name) . ' exclusive waiting, zklock shared held',
		"$name: the exclusive node stays while the shared holds do: the writer still waits");
	is($s->query_safe("SELECT zk_lock_release_shared('x')"), 't', "$name: zklock drops one shared hold");
	is(zk_nchildren($zk, $dir), 3, "$name: one shared hold is left: nothing was deleted");
	is($s->query_safe("SELECT zk_lock_release_shared('x')"), 't', "$name: zklock drops its last shared hold");
	is($peer->reply(30), 'true', "$name: the writer is granted after zklock's last hold");
	is($peer->cmd("${cmd}_release $dir"), 'ok', "$name: the writer releases");
	zk_wait_empty($zk, $dir, "after the $name round");
	$s->quit;
}

# zk_lock_release_all, and the session's end, give up both nodes.
my $s = bg_session($a);
is($s->query_safe("SELECT zk_lock_acquire('x') > 0 AND zk_lock_acquire_shared('x') > 0"), 't',
	'both modes held once more');
$s->query_safe('SELECT zk_lock_release_all()');
zk_wait_empty($zk, $dir, 'after zk_lock_release_all');
is($s->query_safe("SELECT zk_lock_acquire('x') > 0 AND zk_lock_acquire_shared('x') > 0"), 't',
	'both modes held again');
is($s->query_safe("SELECT zk_lock_release('x')"), 't', 'the exclusive hold ends first');
$s->quit;
zk_wait_empty($zk, $dir, 'after the session ended with both held');

$_->[0]->quit for values %peers;
done_testing();
