# Distributed deadlock detection (README, "Deadlocks across clusters").
# Each cycle is made for real, with sessions of real clusters waiting on
# each other; lock_timeout bounds every wait at deadlock_timeout + 2 s, so
# a cycle not broken in time ends in 55P03 instead of 40P01 and fails the
# test.  Exactly one member of each cycle gets 40P01 (the newest request),
# the others are granted, and no node is left in ZooKeeper.
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::RealBin/../lib";
use ZklockTest;
use Test::More;

my $zk = zk_start(1);
my %nodes;
for my $name (qw(a b c))
{
	$nodes{$name} = zklock_node($name, $zk,
		conf => [ "cluster_name = '$name'", "deadlock_timeout = '1s'", "lock_timeout = '3s'" ]);
}
my ($a, $b, $c) = @nodes{qw(a b c)};

# A session in a transaction that holds the given locks (exclusive unless
# "name:shared").
sub holder
{
	my ($node, @locks) = @_;
	my $s = bg_session($node);
	$s->query_safe("\\set VERBOSITY verbose");
	$s->query_safe('BEGIN');
	for my $l (@locks)
	{
		my ($name, $shared) = split /:/, $l;
		my $fn = $shared ? 'zk_lock_acquire_xact_shared' : 'zk_lock_acquire_xact';
		$s->query_safe("SELECT $fn('$name')");
	}
	$s->{pid} = $s->query_safe('SELECT pg_backend_pid()');
	return $s;
}

# Start a waiting acquire in session $s; returns once it waits in zk_locks.
sub start_wait
{
	my ($s, $node, $lock, $shared) = @_;
	my $fn = $shared ? 'zk_lock_acquire_xact_shared' : 'zk_lock_acquire_xact';
	$s->{stderr} = '';
	$s->query_until(qr/started/, "\\echo started\nSELECT $fn('$lock') > 0 AS granted;\n\\echo done\n");
	wait_until(sub {
		$node->safe_psql('postgres',
			"SELECT count(*) FROM zk_locks WHERE pid = $s->{pid} AND name = '$lock' AND state = 'waiting'") eq '1'
	}, 30, "" . $node->name . " pid $s->{pid} waits for $lock");
}

# The outcome of the wait started with start_wait: 'granted' or a SQLSTATE;
# the stderr (with the error's detail) in $s->{last_err}.
sub finish_wait
{
	my ($s) = @_;
	my $out = $s->query_until(qr/done/, '');
	$s->{last_err} = $s->{stderr};
	$s->{stderr} = '';
	return 'granted' if $out =~ /\bt\b/;
	return sqlstate_of($s->{last_err});
}

sub end_all
{
	for my $s (@_)
	{
		$s->query('ROLLBACK');
		$s->quit;
	}
}

sub counter
{
	my ($node, $col) = @_;
	return $node->safe_psql('postgres', "SELECT $col FROM zk_status()");
}

sub no_nodes_left
{
	my ($what, @locks) = @_;
	wait_until(sub { !grep { zk_ls($zk, "/zklock/$_") } @locks, '.waits' }, 30,
		"$what: no node is left (locks and published waits)");
}

# (1) Two clusters, opposite order: B's request is the newer, B gives up.
{
	my $sa = holder($a, 'x');
	my $sb = holder($b, 'y');
	start_wait($sa, $a, 'y');
	start_wait($sb, $b, 'x');
	my $ra = finish_wait($sb);
	is($ra, '40P01', 'two clusters: the newer request (B) fails with 40P01 within deadlock_timeout + 2 s');
	like($sb->{last_err}, qr/Process $sa->{pid} of cluster "a" waits for ZooKeeper lock "y" in exclusive mode; blocked by process $sb->{pid} of cluster "b"\./,
		'the detail names the edge A -> B');
	like($sb->{last_err}, qr/Process $sb->{pid} of cluster "b" waits for ZooKeeper lock "x" in exclusive mode; blocked by process $sa->{pid} of cluster "a"\./,
		'the detail names the edge B -> A');
	is(finish_wait($sa), 'granted', 'the other member (A) is granted');
	is(counter($b, 'deadlocks_found'), '1', "B counts the deadlock it broke");
	is(counter($a, 'deadlocks_found'), '0', "A counts none");
	cmp_ok(counter($a, 'deadlock_checks'), '>=', 1, 'A ran a check');
	end_all($sa, $sb);
	no_nodes_left('two clusters', 'x', 'y');
}

done_testing();
