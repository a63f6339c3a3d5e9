# A create whose answer is lost with the connection: the worker looks for
# the node it may have made by listing the directory, and a server that has
# not applied that create yet (a follower behind its leader) would answer
# without it, so a second node would be made and the first left until the
# session ends.  The listing must come after a sync, which makes the server
# catch up with the leader first (ZooKeeper answers one session's requests
# in order).
#
# zklock reaches ZooKeeper through a relay that reads the client protocol
# (test/tools/zkwire.pl) and loses the answer to one create: of a lock's
# node, then of a semaphore's lease.  Asserted for each: the request is
# granted; the directory holds one node of ours; and on the connection
# after the loss, a sync of the directory went before the first listing
# of it.
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::RealBin/../lib";
use ZklockTest;
use PostgreSQL::Test::Utils;
use Test::More;

my $zk = zk_start(1);
my $wire = zk_wire($zk);
my $a = zklock_node('a', $zk, hosts => $wire->{connect});
wait_until(sub { zk_status_of($a)->{state} eq 'connected' }, 30, 'A is connected through the relay');
# The holds are session scope: one session keeps them while the directory
# is counted.
my $s = bg_session($a);

my @creates = map { $ZK_OP{$_} } qw(create create2 createTTL);
my @listings = map { $ZK_OP{$_} } qw(getChildren getChildren2);

# The ops of connection $conn and after: is a sync of a path under $sync_of
# sent before the first listing of $listed?
sub sync_before_listing
{
	my ($conn, $sync_of, $listed) = @_;
	for my $op (grep { $_->[0] > $conn } $wire->ops)
	{
		return 1 if $op->[1] == $ZK_OP{sync} && index($op->[2], $sync_of) == 0;
		return 0 if (grep { $op->[1] == $_ } @listings) && $op->[2] eq $listed;
	}
	return 0;
}

sub show_ops
{
	my ($conn) = @_;
	diag(join "\n", map { "@$_" } grep { $_->[0] >= $conn } $wire->ops);
}

# A lock's node.
$wire->lose_answer(\@creates, '^/zklock/recov1/');
is(bg_result($s, "SELECT zk_lock_acquire('recov1', '60s') > 0"), 't',
	'the lock is granted although the answer to its create was lost');
my $fired = $wire->fired;
ok($fired, 'the answer to the lock node\'s create was lost') or BAIL_OUT('the relay never saw the create');
is(scalar(zk_ls($zk, '/zklock/recov1')), 1, 'one node in the lock\'s directory')
  or diag(join ' ', zk_ls($zk, '/zklock/recov1'));
ok(sync_before_listing($fired->[0], '/zklock/recov1', '/zklock/recov1'),
	'after the loss, a sync of the directory goes before its listing') or show_ops($fired->[0]);
is(bg_result($s, "SELECT zk_lock_check('recov1')"), 't', 'the hold is proven after the reconnection');
is(bg_result($s, "SELECT zk_lock_release('recov1')"), 't', 'the lock is released');
wait_until(sub { !zk_ls($zk, '/zklock/recov1') }, 30, 'no node left in the lock\'s directory');

# A semaphore's lease.
$wire->lose_answer(\@creates, '^/zklock/recov2/leases/');
is(bg_result($s, "SELECT zk_semaphore_acquire('recov2', 2, '60s') > 0"), 't',
	'the permit is granted although the answer to its lease\'s create was lost');
$fired = $wire->fired;
ok($fired, 'the answer to the lease\'s create was lost') or BAIL_OUT('the relay never saw the lease');
is(scalar(zk_ls($zk, '/zklock/recov2/leases')), 1, 'one lease in the semaphore\'s leases')
  or diag(join ' ', zk_ls($zk, '/zklock/recov2/leases'));
ok(sync_before_listing($fired->[0], '/zklock/recov2', '/zklock/recov2/leases'),
	'after the loss, a sync goes before the listing of the leases') or show_ops($fired->[0]);
is(bg_result($s, "SELECT zk_semaphore_release('recov2')"), 't', 'the permit is released');
wait_until(sub { !zk_ls($zk, '/zklock/recov2/leases') }, 30, 'no lease left');

$s->quit;
done_testing();
