# A handoff inside one cluster costs no round trip to ZooKeeper (issue 46,
# shape (c)): when a backend releases an exclusive hold and a waiter of the
# same cluster watches its node, the worker grants the waiter at once,
# before the release's delete has reached ZooKeeper, as the deletion would
# have (lock_rule.c, zkl_hands_over_at_release).  Shown with ZooKeeper's
# server stopped (SIGSTOP): the waiter holds although no answer can come.
# Before the change it held only once the deletion's watch event arrived.
#
# What must not change: every other client still waits for the released
# node, which stays in ZooKeeper until the delete is applied; a waiter
# behind a foreign node is never handed the lock by a release of ours; a
# read lock's release hands nothing over (it was no exclusive grant); and
# once ZooKeeper runs again the released node is gone, the waiter's node
# holds in ZooKeeper's order too (another cluster's try fails, then
# succeeds after the release), and nothing is left behind.
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::RealBin/../lib";
use ZklockTest;
use Test::More;
use PostgreSQL::Test::Utils;

my $zk = zk_start(1);
# A long session timeout: the proof (a third of it) outlasts the freeze.
my $a = zklock_node('a', $zk, session_timeout => '30s');
my $b = zklock_node('b', $zk);

my $zk_pid = slurp_file("$zk->{dir}/zk1.pid") =~ s/\s+//gr;
my $frozen = 0;
sub thaw
{
	kill('CONT', $zk_pid) if $frozen;
	$frozen = 0;
	return;
}
END { thaw(); }

sub count_in
{
	my ($node, $lock, $state) = @_;
	return $node->safe_psql('postgres',
		"SELECT count(*) FROM zk_locks WHERE name = '$lock' AND state = '$state'");
}

my $s = bg_session($a);
my $w = bg_session($a);

# 1. The handoff at release, with ZooKeeper stopped.
bg_result($s, "SELECT zk_lock_acquire('h')");
bg_start($w, "SELECT zk_lock_acquire('h', '60s') IS NOT NULL AS granted");
ok(wait_until(sub { count_in($a, 'h', 'waiting') == 1 }, 30, 'the waiter queued'),
	'a second session of the cluster waits for h');
# Its watch on the holder's node is set once the waiter shows as waiting
# with a node; the heartbeat is fresh (just connected, 30 s timeout).
ok(wait_until(sub { zk_nchildren($zk, '/zklock/h') == 2 }, 30, 'two nodes'),
	'ZooKeeper has both nodes');
sleep 1;
kill('STOP', $zk_pid) or die "SIGSTOP: $!";
$frozen = 1;
is(bg_result($s, "SELECT zk_lock_release('h')"), 't', 'the holder releases h while ZooKeeper is stopped');
ok(wait_until(sub { count_in($a, 'h', 'held') == 1 }, 20, 'the waiter holds'),
	'the waiter of the same cluster holds h while ZooKeeper is stopped (no round trip)');
my ($got) = bg_collect($w);
like($got, qr/^t$/m, "the waiter's acquire answered while ZooKeeper is stopped");
thaw();

# ZooKeeper's order agrees once it runs: the released node is gone and the
# waiter's is the lowest; another cluster cannot take h until it is released.
ok(wait_until(sub { zk_nchildren($zk, '/zklock/h') == 1 }, 30, 'released node gone'),
	"the released node's delete is applied once ZooKeeper runs again");
is($b->safe_psql('postgres', "SELECT zk_lock_try('h')"), 'f', 'another cluster cannot take h while the waiter holds it');
is(bg_result($w, "SELECT zk_lock_release('h')"), 't', 'the waiter releases h');
ok(wait_until(sub { $b->safe_psql('postgres', "SELECT zk_lock_try('h') AND zk_lock_release('h')") eq 't' }, 30, 'b takes h'),
	'another cluster takes h once it is released');

# 2. A waiter behind a foreign node is not handed the lock by our release.
bg_result($s, "SELECT zk_lock_acquire('f')");
my $foreign = zk_hold($zk, '/zklock/f/_c_00000000-0000-0000-0000-00000000000f-lock-');
bg_start($w, "SELECT zk_lock_acquire('f', '60s') IS NOT NULL AS granted");
ok(wait_until(sub { count_in($a, 'f', 'waiting') == 1 && zk_nchildren($zk, '/zklock/f') == 3 }, 30, 'waiter queued'),
	'our waiter queues behind the foreign node');
is(bg_result($s, "SELECT zk_lock_release('f')"), 't', 'our holder releases f');
ok(wait_until(sub { zk_nchildren($zk, '/zklock/f') == 2 }, 30, 'holder node gone'), "the holder's node is deleted");
is(count_in($a, 'f', 'waiting'), '1', 'the waiter still waits: the foreign node is ahead of it');
$foreign->release;
ok(wait_until(sub { count_in($a, 'f', 'held') == 1 }, 30, 'the waiter holds f'),
	'the waiter holds f once the foreign node goes');
($got) = bg_collect($w);
like($got, qr/^t$/m, "the waiter's acquire of f answered");
is(bg_result($w, "SELECT zk_lock_release('f')"), 't', 'the waiter releases f');

# 3. A foreign waiter behind our released holder still waits for the node:
# while ZooKeeper is stopped nothing can reach it, and once it runs the
# lock passes in ZooKeeper's order (our waiter first, then the foreign one).
bg_result($s, "SELECT zk_lock_acquire('q')");
bg_start($w, "SELECT zk_lock_acquire('q', '60s') IS NOT NULL AS granted");
ok(wait_until(sub { count_in($a, 'q', 'waiting') == 1 && zk_nchildren($zk, '/zklock/q') == 2 }, 30, 'waiter queued'),
	'our waiter queues for q');
my $late = zk_hold($zk, '/zklock/q/_c_00000000-0000-0000-0000-00000000001f-lock-');
my @before = sort(zk_ls($zk, '/zklock/q'));
is(scalar(@before), 3, 'a foreign node queues behind both');
sleep 1;
kill('STOP', $zk_pid) or die "SIGSTOP: $!";
$frozen = 1;
is(bg_result($s, "SELECT zk_lock_release('q')"), 't', 'our holder releases q while ZooKeeper is stopped');
ok(wait_until(sub { count_in($a, 'q', 'held') == 1 }, 20, 'the waiter holds q'),
	'our waiter holds q at once');
thaw();
ok(wait_until(sub { zk_nchildren($zk, '/zklock/q') == 2 }, 30, 'released node gone'),
	"the released node's delete is applied");
is($b->safe_psql('postgres', "SELECT zk_lock_try('q')"), 'f',
	'another cluster cannot take q: our waiter holds it, the foreign node queues');
($got) = bg_collect($w);
like($got, qr/^t$/m, "the waiter's acquire of q answered");
is(bg_result($w, "SELECT zk_lock_release('q')"), 't', 'the waiter releases q');
ok(wait_until(sub { zk_nchildren($zk, '/zklock/q') == 1 }, 30, 'only the foreign node left'),
	'only the foreign node is left in q');
$late->release;

# 4. A read lock's release hands nothing over: the writer behind waits for
# the deletion's event (ZooKeeper stopped: it keeps waiting).
bg_result($s, "SELECT zk_lock_acquire_shared('r')");
bg_start($w, "SELECT zk_lock_acquire('r', '60s') IS NOT NULL AS granted");
ok(wait_until(sub { count_in($a, 'r', 'waiting') == 1 && zk_nchildren($zk, '/zklock/r') == 2 }, 30, 'writer queued'),
	'a writer waits behind a read lock');
sleep 1;
kill('STOP', $zk_pid) or die "SIGSTOP: $!";
$frozen = 1;
is(bg_result($s, "SELECT zk_lock_release_shared('r')"), 't', 'the reader releases r while ZooKeeper is stopped');
sleep 2;
is(count_in($a, 'r', 'waiting'), '1', 'the writer still waits: a read lock is never handed over at its release');
thaw();
ok(wait_until(sub { count_in($a, 'r', 'held') == 1 }, 30, 'the writer holds r'),
	'the writer holds r once the read node is deleted');
($got) = bg_collect($w);
like($got, qr/^t$/m, "the writer's acquire of r answered");
is(bg_result($w, "SELECT zk_lock_release('r')"), 't', 'the writer releases r');

ok(wait_until(sub { !grep { zk_nchildren($zk, "/zklock/$_") } qw(h f q r) }, 30, 'nodes gone'),
	'no node of ours is left behind');

$w->quit;
$s->quit;
done_testing();
