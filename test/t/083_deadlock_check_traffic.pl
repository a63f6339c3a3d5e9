# The ZooKeeper traffic of deadlock detection while many sessions wait
# (doc/internals.md, "Deadlock detection").  One session holds lock m;
# N = 30 sessions of the same cluster wait for it (deadlock_timeout
# 200 ms).  Each wait is checked once when it has lasted deadlock_timeout
# (a check reads the published waits and m's directory, about 2N
# requests, the first reading possibly shared); after that, while nothing
# is published, a wait is not checked again: each waiter only looks, once
# per deadlock_timeout, at the count of the worker's watch on the
# published waits, and reads their names and child counters (one request
# per cluster per half deadlock_timeout, shared) only when it moved.  The
# test lets every waiter check once and the session go quiet, then counts
# over ten more deadlock_timeouts the checks (at most N / 3 more, not the
# N per round of checks every deadlock_timeout that 1.4 ran) and the
# requests: by zk_status().zk_requests none (at most one late listing;
# before issue 46, a listing per half deadlock_timeout and every wait's
# data read again each 10 s), by ZooKeeper (cons: the session's requests) the heartbeats' syncs, which
# zk_requests leaves out, and that listing: a count, not a time.  Then a real cycle among two more
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

# The looks that followed the last publications have read .waits once
# more: from then on the session is quiet (zk_requests unchanged for five
# deadlock_timeouts).
my ($last, $since) = (status(), time);
ok(wait_until(sub {
	my $now = status();
	($last, $since) = ($now, time) if $now->{requests} != $last->{requests};
	return time - $since >= 1;
}, 30, 'the session goes quiet'), 'the session goes quiet once every wait is published');

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
cmp_ok($requests, '<=', 1,
	"zk_requests: none (at most one late listing) while the waits stand (N = $n)");
ok(defined $before->{zk_requests} && defined $after->{zk_requests}
	  && $after->{zk_requests} - $before->{zk_requests} <= 4,
	"ZooKeeper counts the heartbeats of the session (and at most one listing) while the waits stand (N = $n)");

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
