# Mutual exclusion across clusters, checked on what was committed: three
# PostgreSQL clusters on one standalone ZooKeeper, eight sessions each,
# increment a shared counter under one zklock lock (ZklockChecker) for at
# least 2,000 committed holds.  No two holds overlap, no update is lost,
# tokens rise in grant order, and no node is left in ZooKeeper.  The rate of
# committed holds is printed as a benchmark figure.  deadlock_timeout is
# 100ms, so waits look for cycles all along: none is found (there is one
# lock), and no transaction fails with 40P01.
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::RealBin/../lib";
use ZklockTest;
use ZklockChecker;
use Test::More;

my $zk = zk_start(1);
my @nodes = map { zklock_node($_, $zk, conf => checker_conf() . "deadlock_timeout = '100ms'\n") } qw(a b c);

# The run is bounded by its count of transactions, not by the clock: a
# loaded machine takes longer, and the duration is only a safety stop.
my $res = run_checker(
	nodes           => \@nodes,
	zk              => $zk,
	sessions        => 8,
	iterations      => 100,      # 2,400 transactions
	acquire_timeout => '60s',
	duration        => 600);

is($res->{attempts}, 2400, 'every session ran its 100 transactions');
cmp_ok($res->{committed}, '>=', 2000, 'at least 2,000 holds committed');
# Without faults nothing but a lock timeout (under heavy load) may fail.
my @unexpected = grep { !/^acquire 55P03$/ } keys %{ $res->{errors_by_step} };
ok(!@unexpected, 'without faults no transaction fails other than by a lock timeout')
  or diag('errors: ' . join(', ', map { "$_: $res->{errors_by_step}{$_}" } sort keys %{ $res->{errors_by_step} }));
check_invariants($res);
my ($checks, $found) = (0, 0);
for my $node (@nodes)
{
	my ($c, $f) = split /\|/, $node->safe_psql('postgres', 'SELECT deadlock_checks, deadlocks_found FROM zk_status()');
	$checks += $c;
	$found += $f;
}
cmp_ok($checks, '>', 0, 'waits longer than deadlock_timeout (100ms) looked for cycles');
is($found, 0, '... and found none: no false deadlock');

diag(sprintf('benchmark figure: %d holds committed in %.1f s by 3 clusters x 8 sessions: %.0f holds/s',
	$res->{committed}, $res->{elapsed}, $res->{holds_per_second}));
diag("benchmark figure: $res->{figures}");

done_testing();
