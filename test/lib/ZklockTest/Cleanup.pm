# What a ZklockTest test started and must stop when it ends, whatever way it
# ends: ZooKeeper servers (ZklockTest::ZooKeeper's zk_start), foreign holders
# and peer clients (zk_hold, ZklockTest::Peer's peer_start) and PostgreSQL
# nodes (ZklockTest::Node's zklock_node).  Those modules push what they start
# onto the lists exported here; the one END block below stops it all by pid,
# in the process that loaded this module and only there.
package ZklockTest::Cleanup;

use strict;
use warnings FATAL => 'all';

use Exporter 'import';
# Loaded before the END block below is compiled: END blocks run in reverse
# order of compilation, so Cluster.pm's own END runs after this one.
use PostgreSQL::Test::Cluster;
use Test::More;
use ZklockTest::Command qw($zkserver);

our @EXPORT_OK = qw($owner_pid @zk_all @holders @nodes);

# What to clean up at exit; only the process that started things does it
# (IPC::Run children that fail to exec also run END blocks).
our $owner_pid = $$;
our @zk_all;
our @holders;
our @nodes;

# A runner giving up on us (run_all.sh's stage timeout, Ctrl-C) sends a
# signal: exit through END blocks so servers are stopped, not orphaned.
for my $sig (qw(TERM INT HUP))
{
	$SIG{$sig} = sub { diag("caught SIG$sig, stopping servers"); exit 1; };
}

END
{
	my $exit_code = $?;
	if ($$ == $owner_pid)
	{
		$_->crash for @holders;
		# Nodes first, so their workers do not log a ZooKeeper outage at exit
		# (Cluster.pm's own END runs after this one and finds them stopped).
		eval { $_->teardown_node; 1 } for @nodes;
		for my $zk (@zk_all)
		{
			system('bash', $zkserver, 'stop', $zk->{dir}) == 0
			  or print STDERR "could not stop ZooKeeper in $zk->{dir}\n";
		}
	}
	$? = $exit_code;
}

1;
