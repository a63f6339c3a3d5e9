# The ZooKeeper traffic of deadlock detection grows linearly with the
# number of waiters (doc/internals.md, "Deadlock detection").  One session
# holds lock m; N = 30 sessions of the same cluster wait for it, each
# running a check every deadlock_timeout (200 ms).  Each check reads the
# published waits (1 + N requests) and m's directory (1 + N + 1): were
# every check to read them afresh, one round of checks (one per waiter)
# would cost about 2N^2 requests.  The first reading of a check may be a
# recent one shared by the cluster's backends, so one round costs a few
# readings of each directory: the test asserts at most 10 requests per
# check (10 N per round), counted both by zk_status().zk_requests and by
# ZooKeeper (cons: the session's requests), over at least five rounds.
# Then a real cycle among two more sessions, made while the N waiters keep
# checking, is still found: exactly one member fails with 40P01.
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::RealBin/../lib";
use Time::HiRes qw(time);
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

my $holder = holder($node, 'm');
my @waiters;
for my $i (1 .. $n)
{
	my $s = holder($node);
	start_wait($s, $node, 'm');
	push @waiters, $s;
}

# Every waiter has checked twice: its wait is published, the rounds run.
my $start = status();
ok(wait_until(sub { status()->{checks} >= $start->{checks} + 2 * $n }, 60,
	'two rounds of checks'), 'the waiters run their deadlock checks');

my $before = status();
ok(wait_until(sub { status()->{checks} >= $before->{checks} + 5 * $n }, 60,
	'five rounds of checks'), 'five more rounds of checks ran');
my $after = status();

my $checks = $after->{checks} - $before->{checks};
my $requests = $after->{requests} - $before->{requests};
my $seconds = $after->{at} - $before->{at};
diag(sprintf('N = %d: %d checks, %d requests (%.1f per check, %.0f per second), ZooKeeper counts %s',
	$n, $checks, $requests, $requests / $checks, $requests / $seconds,
	defined $before->{zk_requests} && defined $after->{zk_requests}
	? $after->{zk_requests} - $before->{zk_requests} : 'none'));
cmp_ok($requests, '<=', 10 * $checks,
	"zk_requests: at most 10 per check, 10 N per round of checks (N = $n)");
ok(defined $before->{zk_requests} && defined $after->{zk_requests}
	  && $after->{zk_requests} - $before->{zk_requests} <= 10 * $checks,
	"ZooKeeper counts at most 10 requests of the session per check (N = $n)");

# A cycle made while the waiters keep checking is found all the same.
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
