# No herd: with 50 waiters on one lock, from four clusters (four ZooKeeper
# sessions, so that "watched by at most two sessions" and "at most two
# watches per deletion" could fail: with two sessions they could not),
# every waiter watches only its predecessor, and each release wakes exactly
# one waiter.  Shown with ZooKeeper's own watch table and with the workers'
# count of watch events.
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::RealBin/../lib";
use ZklockTest;
use Test::More;

my $nwaiters = 50;
my $zk = zk_start(1);
my @nodes = map { zklock_node($_, $zk, conf => 'max_connections = 40') } qw(a b c d);
my $dir = $nodes[0]->safe_psql('postgres', "SELECT zk_lock_path('herd')");

sub watch_events
{
	my $sum = 0;
	$sum += $_->safe_psql('postgres', 'SELECT watch_events FROM zk_status()') for @nodes;
	return $sum;
}

my $holder = bg_session($nodes[0]);
$holder->query_safe("SELECT zk_lock_acquire('herd')");

my @waiters;
for my $i (0 .. $nwaiters - 1)
{
	my $s = bg_session($nodes[ $i % @nodes ]);
	# Hold for a moment once granted, so each handoff is its own event.
	$s->query_until(qr/waiting/,
		"\\echo waiting\nSELECT zk_lock_acquire('herd') > 0, pg_sleep(0.02), zk_lock_release('herd');\n");
	push @waiters, $s;
}
wait_until(sub { scalar(zk_ls($zk, $dir)) == $nwaiters + 1 }, 60, 'all waiters queued');

# ZooKeeper's view (wchc: session -> watched paths): each contender node is
# watched by its own cluster's session (zklock watches its own node, to
# notice if anyone deletes it) and by its successor's, so by at most two
# sessions whatever the number of waiters; the newest node by its own
# session only; and nothing watches the directory itself.
sub watchers_by_path
{
	my %by_path;
	my $wchc = zk_wchc($zk);
	for my $session (keys %$wchc)
	{
		push @{ $by_path{$_} }, $session for @{ $wchc->{$session} };
	}
	return \%by_path;
}
my %session_of = map { $_->name => $_->safe_psql('postgres', 'SELECT session_id FROM zk_status()') } @nodes;
my $watchers;
wait_until(sub {
	$watchers = watchers_by_path();
	scalar(grep { index($_, "$dir/") == 0 } keys %$watchers) == $nwaiters + 1
	  && scalar(grep { index($_, "$dir/") == 0 && @{ $watchers->{$_} } == 2 } keys %$watchers) >= $nwaiters / 2
}, 30, 'every waiter has set its watches');
my @watched = grep { index($_, "$dir/") == 0 } keys %$watchers;
is(scalar(@watched), $nwaiters + 1, 'every contender node is watched');
is(scalar(grep { scalar(@{ $watchers->{$_} }) > 2 } @watched), 0, 'none by more than two sessions');
my ($newest) = sort { ($b =~ /(\d+)$/)[0] <=> ($a =~ /(\d+)$/)[0] } @watched;
# Whose it is, from its data: the waiters of the clusters queue in no
# fixed order between them.
my ($newest_cluster) = zk_get($zk, $newest) =~ /"cluster":\s*"(\w+)"/;
my ($newest_owner) = grep { $_->name eq ($newest_cluster // '') } @nodes;
is(join(",", map { lc } @{ $watchers->{$newest} }), $newest_owner ? lc($session_of{ $newest_owner->name }) : "the owner named in its data",
	'the newest node is watched by its own cluster only');
ok(!exists $watchers->{$dir}, 'nobody watches the lock directory');

my $events_before = watch_events();
$holder->query_safe("SELECT zk_lock_release('herd')");
for my $s (@waiters)
{
	$s->query_safe("SELECT 'done'");
	$s->quit;
}
wait_until(sub { !zk_ls($zk, $dir) }, 60, 'every waiter got the lock and released it');
my $events = watch_events() - $events_before;
is($events, $nwaiters, "$nwaiters releases fired $nwaiters watch events: one waiter woken per release");

# ZooKeeper's own counters agree: whatever the number of waiters, a
# deletion fires at most two watches, the successor's and the holder's own
# (zklock watches the node it holds, to notice if anyone deletes it).  The
# only children watch is each worker's one on <root>/.waits (deadlock
# checks learn there when a wait is published or ends): a change there
# fires at most one watch per cluster, never one per waiter.
my $mntr = zk_mntr($zk);
cmp_ok($mntr->{zk_max_node_deleted_watch_count}, '<=', 2, 'ZooKeeper: at most two watches fired per deleted node');
cmp_ok($mntr->{zk_cnt_node_deleted_watch_count}, '>=', $nwaiters, 'ZooKeeper: deletions fired watches');
cmp_ok($mntr->{zk_max_node_children_watch_count}, '<=', scalar(@nodes),
	'ZooKeeper: a children change fired at most one watch per cluster (.waits), not one per waiter');

$holder->quit;
done_testing();
