# ZklockTest::Loss: a held lock lost behind its holder's back.
#
#   lose_lock($zk, $node, $pid, $name, $what)
#       an operator deletes the node by which backend $pid of $node holds
#       $name, then zk_locks must show the lock lost; two assertions,
#       named after $what.
package ZklockTest::Loss;

use strict;
use warnings FATAL => 'all';

use Exporter 'import';
use Test::More;
use ZklockTest::Node;
use ZklockTest::Poll;
use ZklockTest::ZooKeeper;

our @EXPORT = qw(lose_lock);

sub lose_lock
{
	my ($zk, $node, $pid, $name, $what) = @_;
	local $Test::Builder::Level = $Test::Builder::Level + 1;
	my $znode = held_znode($node, $pid, $name);
	ok($znode ne '' && zk_delete($zk, $znode), "$what: an operator deletes the node of $name held by $pid");
	ok(wait_until(sub { lock_state($node, $pid, $name) eq 'lost' }, 15, "$name turns lost"),
		"$what: zk_locks shows $name lost");
	return;
}

1;
