# Deadlock checks without a herd (issue 46, point 4; doc/reference.md,
# "Deadlocks across clusters", When).  One session holds m; N = 30 others
# of the same cluster queue behind it (deadlock_timeout 100 ms) and wait
# while their waits are published and checked, for at least twenty more
# deadlock_timeouts; then the holder goes and each waiter, once granted,
# commits at once: N + 1 acquisitions.  Counted over the whole cycle, from
# before the holder's acquire until every node is gone (zk_status(),
# counters, not times): a wait is checked once after deadlock_timeout and
# again only when a wait was published since, so the checks stay near one
# per waiter and zklock's own ZooKeeper requests per acquisition stay
# bounded (the lock's own create, listing, watch and delete, the wait's
# publication and its delete, a share of the shared readings).  A waiter
# that checked again every deadlock_timeout, as before, ran some twenty
# checks and a hundred requests per acquisition here.  Then a cycle made
# among two more sessions while nothing else changes is still broken.
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::RealBin/../lib";
use Time::HiRes qw(sleep);
use ZklockTest;
use ZklockTest::Deadlock;
use Test::More;

my $n = 30;
my $zk = zk_start(1);
my $node = zklock_node('a', $zk,
	conf => [ "cluster_name = 'a'", "deadlock_timeout = '100ms'", 'max_connections = 60' ]);

sub status
{
	my $row = $node->safe_psql('postgres',
		'SELECT zk_requests, deadlock_checks, acquired, slots_used FROM zk_status()');
	my %s;
	@s{qw(requests checks acquired slots)} = split /\|/, $row;
	return \%s;
}

my $s0 = status();
my $holder = holder($node, 'm');
my @waiters;
for my $i (1 .. $n)
{
	my $s = holder($node);
	start_wait($s, $node, 'm');
	push @waiters, $s;
}
ok(wait_until(sub { (() = zk_ls($zk, '/zklock/.waits')) >= $n }, 60,
	'every wait published'), "the $n waits are published");
# Twenty more deadlock_timeouts of waiting, in which nothing changes.
sleep(2);
my $s1 = status();

end_all($holder);
my $granted = 0;
for my $s (@waiters)
{
	$granted++ if finish_wait($s) eq 'granted';
	end_all($s);
}
is($granted, $n, 'each waiter is granted in turn once the holder is gone');
ok(wait_until(sub { status()->{slots} == 0 && !zk_ls($zk, '/zklock/.waits') }, 30,
	'no slot used'), 'every node is gone');
my $s2 = status();

my $acquired = $s2->{acquired} - $s0->{acquired};
my $checks = $s2->{checks} - $s0->{checks};
my $requests = $s2->{requests} - $s0->{requests};
diag(sprintf('N = %d: %d acquisitions, %d checks (%d while waiting), %d requests: %.2f per acquisition',
	$n, $acquired, $checks, $s1->{checks} - $s0->{checks}, $requests, $requests / $acquired));
is($acquired, $n + 1, 'N + 1 acquisitions');
cmp_ok($checks, '<=', 3 * $n, 'at most 3 checks per waiter over the whole cycle');
cmp_ok($requests / $acquired, '<=', 15,
	'at most 15 ZooKeeper requests per acquisition over the whole cycle');

# A cycle closed while nothing else changes: found by its newer member.
my $p = holder($node, 'p');
my $q = holder($node, 'q');
$_->query_safe("SET lock_timeout = '10s'") for ($p, $q);
start_wait($p, $node, 'q');
start_wait($q, $node, 'p');
is(finish_wait($q), '40P01', 'the newer request of a cycle gives up (40P01)');
is(finish_wait($p), 'granted', 'the other member is granted');
end_all($p, $q);
ok(wait_until(sub { !zk_ls($zk, '/zklock/.waits') }, 30, 'no wait left'),
	'no published wait is left');

done_testing();
