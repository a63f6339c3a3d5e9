# A cycle of two waits behind decoy waits (issue 27, point 1; README,
# "Deadlocks across clusters", bounds).  Y of cluster b holds y; X of
# cluster a holds x in shared mode after N decoys did, each of which waits
# for a lock of its own (held by H of cluster b); X waits for y, then Y asks
# for x in exclusive mode.  Y's check reads x and then, breadth-first, the
# decoys' directories before X's: with N = 14 the published waits name 16
# directories and Y, the newest request, sees the cycle and gives up; with
# N = 15 and N = 20 its 16 reads end before y, and X, which sees the cycle
# at every check, gives up once Y has had its turn.  Either way exactly one
# member fails with 40P01 and the other is granted (Y only once the decoys'
# shared holds of x are gone too); lock_timeout (6 s for X, 60 s for Y,
# none for the decoys) turns a cycle left standing into 55P03.
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::RealBin/../lib";
use ZklockTest;
use ZklockTest::Deadlock;
use Test::More;

my $zk = zk_start(1);
my %nodes;
for my $name (qw(a b))
{
	$nodes{$name} = zklock_node($name, $zk,
		conf => [ "cluster_name = '$name'", "deadlock_timeout = '200ms'",
			"lock_timeout = '6s'", 'max_connections = 60' ]);
}
my ($a, $b) = @nodes{qw(a b)};

sub counter
{
	my ($node, $col) = @_;
	return $node->safe_psql('postgres', "SELECT $col FROM zk_status()");
}

sub decoy_case
{
	my ($n, $expect_victim) = @_;
	my $t = "c$n";
	my @decoys;
	my $found = counter($a, 'deadlocks_found') + counter($b, 'deadlocks_found');

	my $h = holder($b, map { "$t-d$_" } 1 .. $n);
	for my $i (1 .. $n)
	{
		my $d = holder($a, "$t-x:shared");
		$d->query_safe("SET LOCAL lock_timeout = 0");
		push @decoys, $d;
	}
	my $sx = holder($a, "$t-x:shared");
	my $sy = holder($b, "$t-y");
	# Granted x only once X and every decoy are gone: it may wait long.
	$sy->query_safe("SET LOCAL lock_timeout = '60s'");
	start_wait($decoys[ $_ - 1 ], $a, "$t-d$_") for 1 .. $n;
	ok(wait_until(sub { (() = zk_ls($zk, '/zklock/.waits')) >= $n }, 30,
		"$n decoys published their waits"), "N = $n: the decoys' waits are published");

	start_wait($sx, $a, "$t-y");
	start_wait($sy, $b, "$t-x");
	my $victim = $expect_victim eq 'Y' ? $sy : $sx;
	is(finish_wait($victim), '40P01', "N = $n: $expect_victim fails with 40P01");
	like($victim->{last_err},
		qr/Process $sx->{pid} of cluster "a" waits for ZooKeeper lock "$t-y" in exclusive mode; blocked by process $sy->{pid} of cluster "b"\./,
		"N = $n: the detail names the edge X -> Y");
	like($victim->{last_err},
		qr/Process $sy->{pid} of cluster "b" waits for ZooKeeper lock "$t-x" in exclusive mode; blocked by process $sx->{pid} of cluster "a"\./,
		"N = $n: the detail names the edge Y -> X");
	is(counter($a, 'deadlocks_found') + counter($b, 'deadlocks_found') - $found, 1,
		"N = $n: one deadlock counted in all");
	if ($expect_victim eq 'Y')
	{
		is(finish_wait($sx), 'granted', "N = $n: X is granted y");
		end_all($sx, $sy, $h);
		is(finish_wait($decoys[0]), 'granted', "N = $n: a decoy is granted once H is gone");
		end_all(@decoys);
	}
	else
	{
		# X's transaction, aborted, holds x no more; Y waits for the decoys'
		# shared holds of x, which last until they end.
		end_all($h);
		is(finish_wait($decoys[0]), 'granted', "N = $n: a decoy is granted once H is gone");
		end_all(@decoys);
		is(finish_wait($sy), 'granted', "N = $n: Y is granted x once the decoys are gone");
		end_all($sx, $sy);
	}
	ok(wait_until(sub { !grep { zk_ls($zk, "/zklock/$_") } "$t-x", "$t-y", '.waits' }, 30,
		"N = $n: no node is left"), "N = $n: no node is left");
}

# At the bound: 16 directories hold published waits (x, y and 14 decoys').
decoy_case(14, 'Y');
# One past it: Y cannot see the cycle, X gives up in its place.
decoy_case(15, 'X');
# The issue's case: 20 decoy waits.
decoy_case(20, 'X');

done_testing();
