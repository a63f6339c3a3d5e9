# The ZooKeeper traffic of deadlock detection while many sessions wait
# (doc/internals.md, "Deadlock detection").  One session holds lock m;
# N = 30 sessions of the same cluster wait for it (deadlock_timeout
# 200 ms).  Each wait is checked once when it has lasted deadlock_timeout
# (a check reads the published waits and m's directory, about 2N
# requests, the first reading possibly shared); after that, while nothing
# is published, a wait is not checked again: each waiter only looks, once
# per deadlock_timeout, at the names and child counters of the published
# waits, one request per cluster per half deadlock_timeout, shared.  The
# test lets every waiter check once, then counts over ten more
# deadlock_timeouts the checks (at most N / 3 more, not the N per round
# of checks every deadlock_timeout that 1.4 ran) and the requests, by
# zk_status().zk_requests and by ZooKeeper (cons: the session's requests),
# at most N: a count, not a time.  Then a real cycle among two more
# sessions, made while the N waiters wait, is still found: exactly one
# member fails with 40P01.
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::RealBin/../lib";
use Time::HiRes qw(time sleep);
use ZklockTest;
use ZklockTest::Deadlock;
use Test::More;

my $n = 30;
my $zk = zk_start(1);
my $node = zklock_node('a', $zk,
	conf => [ "cluster_name = 'a'", "deadlock_timeout = '200ms'", 'max_connections = 60' ]);

sub status
{
	my $row = $node->safe_psql('postgres',
		'SELECT zk_requests, deadlock_checks, session_id FROM zk_status()');
	my ($requests, $checks, $session) = split /\|/, $row;
	my $zk_counts = zk_session_counts($zk, $session);
	return {
		requests => $requests,
		checks => $checks,
		zk_requests => $zk_counts ? $zk_counts->{requests} : undef,
		at => time
	};
}

my $start = status();
my $holder = holder($node, 'm');
my @waiters;
for my $i (1 .. $n)
{
	my $s = holder($node);
	start_wait($s, $node, 'm');
	push @waiters, $s;
}

# Every waiter has checked once: its wait is published.
ok(wait_until(sub { status()->{checks} >= $start->{checks} + $n }, 60,
	'a round of checks'), 'the waiters run their deadlock checks');
ok(wait_until(sub { (() = zk_ls($zk, '/zklock/.waits')) >= $n }, 60,
	'every wait published'), "the $n waits are published");

# Ten deadlock_timeouts in which nothing is published.
my $before = status();
sleep(2);
my $after = status();

my $checks = $after->{checks} - $before->{checks};
my $requests = $after->{requests} - $before->{requests};
my $seconds = $after->{at} - $before->{at};
diag(sprintf('N = %d: %d checks, %d requests (%.0f per second), ZooKeeper counts %s',
	$n, $checks, $requests, $requests / $seconds,
	defined $before->{zk_requests} && defined $after->{zk_requests}
	? $after->{zk_requests} - $before->{zk_requests} : 'none'));
cmp_ok($checks, '<=', $n / 3,
	"no new round of checks while nothing is published (N = $n)");
cmp_ok($requests, '<=', $n,
	"zk_requests: at most N while the waits stand (N = $n)");
ok(defined $before->{zk_requests} && defined $after->{zk_requests}
	  && $after->{zk_requests} - $before->{zk_requests} <= $n,
	"ZooKeeper counts at most N requests of the session while the waits stand (N = $n)");

# A cycle made while the waiters wait is found all the same.
my $s1 = holder($node, 'p');
my $s2 = holder($node, 'q');
$_->query_safe("SET lock_timeout = '10s'") for ($s1, $s2);
start_wait($s1, $node, 'q');
start_wait($s2, $node, 'p');
is(finish_wait($s2), '40P01', 'the newer request of a cycle gives up (40P01)');
is(finish_wait($s1), 'granted', 'the other member is granted');
end_all($s1, $s2);

end_all($holder);
my $granted = 0;
for my $s (@waiters)
{
	$granted++ if finish_wait($s) eq 'granted';
	end_all($s);
}
is($granted, $n, 'each waiter is granted in turn once the holder is gone');
ok(wait_until(sub { !zk_ls($zk, '/zklock/m') && !zk_ls($zk, '/zklock/.waits') }, 30,
	'no node left'), 'no node is left (lock and published waits)');

done_testing();
