# The fast path, counted with zk_status()'s counters and ZooKeeper's own
# per-session counts (no timing):
#  (1) Uncontended, an acquire costs two ZooKeeper requests (create and
#      listing sent back to back) and a release one (the delete), and
#      ZooKeeper sends no notification: 200 cycles in one session.  (A
#      release's delete and the next acquire's create, when ready in one
#      pass of the worker, reach ZooKeeper as one multi, whose setData of
#      the directory spares the listing: issue 32.)  (A hold
#      that lasts until the worker's next heartbeat tick gets a watch on its
#      own node then: (4).)
#  (2) A handoff to a waiter of the same cluster needs no request at all:
#      a holder and five waiters in cluster A, each granted as the one
#      before releases; handoffs = 5, handoff_requests = 0, and every
#      release fired one predecessor watch (ZooKeeper: one notification
#      per deleted node).
#  (3) A handoff across clusters to the waiter right behind the holder
#      needs no request either; a waiter further back whose predecessor was
#      another cluster's waiter lists the directory again, once.
#  (5) Inside batches (issue 32): four backends on four locks, their
#      acquires made ready at once (A's worker frozen while they post),
#      each released as soon as granted (each lock taken alone once
#      before, so that the worker knows its directory empty: issue 41):
#      the creates travel as one multi,
#      the deletes as one or more.  The multi's setData of each lock
#      directory tells its children: three directories hold only the new
#      node, which holds without a listing; the fourth has another child
#      (not a contender), so it is listed.  zk_status() counts a create and
#      a delete per lock and the one listing (one request per release),
#      while ZooKeeper answered three to six requests (a multi, a listing,
#      the deletes) instead of twelve, and sent no notification.  (073_write_batch counts each operation per
#      lock, inside the multis, through a relay.)
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::RealBin/../lib";
use ZklockTest;
use Test::More;
use Time::HiRes qw(time);

my $zk = zk_start(1);
my $a = zklock_node('a', $zk);
my $b = zklock_node('b', $zk);

sub counters
{
	my ($node) = @_;
	my %c;
	@c{qw(zk_requests release_requests acquired released handoffs handoff_requests watch_events)} = split /\|/,
	  $node->safe_psql('postgres',
		'SELECT zk_requests, release_requests, acquired, released, handoffs, handoff_requests, watch_events FROM zk_status()');
	return \%c;
}

sub delta
{
	my ($before, $after) = @_;
	return { map { $_ => $after->{$_} - $before->{$_} } keys %$after };
}

# (1) Uncontended cycles.  A first cycle creates the lock's directory; the
# directory is a container, which ZooKeeper may remove while it is empty,
# so a few cycles may pay for it again.
$a->safe_psql('postgres', "SELECT zk_lock_acquire('fp') > 0 AND zk_lock_release('fp')");
wait_until(sub { counters($a)->{released} == 1 }, 10, 'the first release is done');
my $a_session = zk_status_of($a)->{session_id};
my $c0 = counters($a);
my $z0 = zk_session_counts($zk, $a_session);
my $t0 = time;
$a->safe_psql('postgres', "DO \$\$ BEGIN FOR i IN 1..200 LOOP PERFORM zk_lock_acquire('fp'); PERFORM zk_lock_release('fp'); END LOOP; END \$\$");
wait_until(sub { counters($a)->{released} == $c0->{released} + 200 }, 20, 'every release is done');
my $z1 = zk_session_counts($zk, $a_session);
my $window = time - $t0;
my $d = delta($c0, counters($a));
is($d->{acquired}, 200, '(1) 200 acquires');
is($d->{release_requests}, 200, '(1) one request per release: the delete');
my $per_acquire = ($d->{zk_requests} - $d->{release_requests}) / 200;
# A create that travels in a multi with the release's delete before it
# needs no listing when the multi's setData finds its node alone.
cmp_ok($per_acquire, '>=', 1, '(1) an acquire sends its create');
cmp_ok($per_acquire, '<=', 2,
	sprintf('(1) ... and at most its listing, nothing more (%.3f requests per acquire)', $per_acquire));
is($d->{handoffs}, 0, '(1) no handoff when nobody waits');

# ZooKeeper's own view of the session (cons), beside zk_status(): the
# requests it answered are zklock's lock requests plus the heartbeats of
# the window (one every sixth of the 10 s session timeout), or fewer when
# a release's delete and the next acquire's create were ready in one pass
# of the worker and travelled as one multi (issue 32; zk_status() counts
# each operation), whose setData of the directory spares the listing, but
# never less than one request a cycle (each create reaches it in one);
# and it sent no notification, but for a hold that a heartbeat tick found
# (it then watches its own node, which its delete fires).
my $zk_requests = $z1->{requests} - $z0->{requests};
my $heartbeats_max = 1 + int($window / (10 / 6));
cmp_ok($zk_requests, '>=', 200,
	"(1) ZooKeeper answered $zk_requests requests of A's session, zk_status() counts $d->{zk_requests}");
cmp_ok($zk_requests - $d->{zk_requests}, '<=', $heartbeats_max,
	sprintf('(1) ... no more than zk_status() counts and heartbeats (at most %d in %.1f s)', $heartbeats_max, $window));
cmp_ok(($z1->{sent} - $z0->{sent}) - ($z1->{received} - $z0->{received}), '<=', $heartbeats_max,
	'(1) ZooKeeper sent A\'s session no notification per cycle (at most one per heartbeat tick)');

# (2) Handoffs within one cluster.
my $c1 = counters($a);
my $z2 = zk_session_counts($zk, $a_session);
my $t2 = time;
my $holder = bg_session($a);
$holder->query_safe("SELECT zk_lock_acquire('q') > 0");
my @waiters;
for my $i (1 .. 5)
{
	my $s = bg_session($a);
	$s->query_until(qr/waiting\n/, "\\echo waiting\nSELECT zk_lock_acquire('q') > 0, zk_lock_release('q');\n");
	wait_until(sub { $a->safe_psql('postgres', "SELECT count(*) FROM zk_locks WHERE name = 'q' AND state = 'waiting'") == $i },
		10, "waiter $i queues");
	push @waiters, $s;
}
$holder->query_safe("SELECT zk_lock_release('q')");
for my $s (@waiters)
{
	my ($out) = $s->query("SELECT 'sync'");
	like($out, qr/^t\|t$/m, '(2) a waiter is granted in turn');
	$s->quit;
}
wait_until(sub { !zk_ls($zk, '/zklock/q') }, 10, 'q empties');
$d = delta($c1, counters($a));
is($d->{handoffs}, 5, '(2) five handoffs');
is($d->{handoff_requests}, 0, '(2) none needed a request: the predecessor was this cluster\'s holder');
is($d->{watch_events}, 5, '(2) each release fired one predecessor watch');

# ZooKeeper's count of the notifications: one per deleted node (six: the
# holder's and the five waiters'), as ZooKeeper keeps one watch per path
# and session, so the successor's watch and the node's own (a waiter
# watches its own node) are one; the library hands the event to both.
my $z3 = zk_session_counts($zk, $a_session);
my $notified = ($z3->{sent} - $z2->{sent}) - ($z3->{received} - $z2->{received});
my $ticks = 1 + int((time - $t2) / (10 / 6));
is($notified, 6, '(2) ZooKeeper sent one notification per deleted node: 6 for five handoffs');
cmp_ok(($z3->{requests} - $z2->{requests}) - $d->{zk_requests}, '<=', $ticks,
	'(2) ZooKeeper answered the requests zk_status() counts, and heartbeats');
$holder->quit;

# (3) Across clusters: A holds, B waits right behind, A2 waits behind B.
my $ca = counters($a);
my $cb = counters($b);
my $ha = bg_session($a);
$ha->query_safe("SELECT zk_lock_acquire('x') > 0");
my $wb = bg_session($b);
$wb->query_until(qr/waiting\n/, "\\echo waiting\nSELECT zk_lock_acquire('x') > 0;\n");
wait_until(sub { zk_ls($zk, '/zklock/x') == 2 }, 10, 'B queues');
my $wa = bg_session($a);
$wa->query_until(qr/waiting\n/, "\\echo waiting\nSELECT zk_lock_acquire('x') > 0;\n");
wait_until(sub { zk_ls($zk, '/zklock/x') == 3 }, 10, 'A2 queues');
$ha->query_safe("SELECT zk_lock_release('x')");
my ($out) = $wb->query("SELECT 'sync'");
like($out, qr/^t$/m, '(3) B is granted after A\'s release');
is(delta($cb, counters($b))->{handoff_requests}, 0, '(3) B, right behind the holder, needed no request');
$wb->query_safe("SELECT zk_lock_release('x')");
($out) = $wa->query("SELECT 'sync'");
like($out, qr/^t$/m, '(3) A2 is granted after B\'s release');
my $da = delta($ca, counters($a));
is($da->{handoffs}, 1, '(3) one handoff in A');
is($da->{handoff_requests}, 1, '(3) A2, whose predecessor was another cluster\'s waiter, listed the directory again once');
$wa->query_safe("SELECT zk_lock_release('x')");
$_->quit for ($ha, $wb, $wa);
wait_until(sub { !zk_ls($zk, '/zklock/x') }, 10, 'x empties');
is(join(',', zk_ls($zk, '/zklock/x'), zk_ls($zk, '/zklock/q'), zk_ls($zk, '/zklock/fp')), '', 'no node left');

# (4) A hold that lasts: within a heartbeat interval (a sixth of the 10 s
# session timeout) A's session watches the held node, as ZooKeeper's watch
# table shows, so an operator's deletion of it is noticed.
# Paths A's session watches, from ZooKeeper's watch table (wchc).
sub watched_by_a
{
	my $wchc = zk_wchc($zk);
	my ($key) = grep { (lc($_) =~ s/^0x0*//r) eq (lc($a_session) =~ s/^0x0*//r) } keys %$wchc;
	return defined $key ? @{ $wchc->{$key} } : ();
}
my $hl = bg_session($a);
my $hl_pid = $hl->query_safe('SELECT pg_backend_pid()');
$hl->query_safe("SELECT zk_lock_acquire('last') > 0");
my $last_node = held_znode($a, $hl_pid, 'last');
wait_until(sub { grep { $_ eq $last_node } watched_by_a() }, 10,
	'A\'s session watches the node of the hold that lasts');
ok(scalar(grep { $_ eq $last_node } watched_by_a()),
	'(4) a hold that outlives a heartbeat interval watches its own node');
ok(zk_delete($zk, $last_node), '(4) an operator deletes the held node');
wait_until(sub { lock_state($a, $hl_pid, 'last') eq 'lost' }, 10, 'the hold turns lost');
is(lock_state($a, $hl_pid, 'last'), 'lost', '(4) ... and A counts the lock lost');
$hl->quit;

# (5) Batches: the writes ready in one pass travel as one multi.
my $wpid = worker_pid($a);
my $frozen;
END { kill('CONT', $frozen) if $frozen; }
my @bs = map { bg_session($a) } 1 .. 4;
# Persistent directories: no ZNONODE (a container may go while empty).
zk_create($zk, "/zklock/fpb$_") for 0 .. 3;
# In fpb3, a child that is no contender: the directory must be listed.
zk_create($zk, "/zklock/fpb3/not-a-contender");
# A create travels in a multi only in a directory the worker has listed and
# found without data (issue 41): each lock is taken alone once first.
is(sql_result($a, "SELECT zk_lock_try('fpb$_'), zk_lock_release('fpb$_')"), 't|t',
	"(5) fpb$_ is taken alone once, its directory listed")
  for 0 .. 3;
wait_until(sub { $a->safe_psql('postgres', 'SELECT count(*) FROM zk_locks') == 0 }, 10, 'those releases are done');
my $c5 = counters($a);
my $z5 = zk_session_counts($zk, $a_session);
my $t5 = time;
kill('STOP', $wpid);
$frozen = $wpid;
wait_until(sub { proc_state($wpid) eq 'T' }, 5, 'the worker is stopped');
bg_start($bs[$_], "SELECT zk_lock_acquire('fpb$_') > 0 AND zk_lock_release('fpb$_')") for 0 .. 3;
wait_until(sub { $a->safe_psql('postgres', "SELECT count(*) FROM zk_locks WHERE state = 'waiting'") == 4 },
	10, 'every acquire is posted');
kill('CONT', $wpid);
$frozen = undef;
for my $s (@bs)
{
	my ($out) = bg_collect($s);
	like($out, qr/^t$/m, '(5) each of the four is granted and released');
}
wait_until(sub { counters($a)->{released} == $c5->{released} + 4 }, 10, 'every release is done');
my $z6 = zk_session_counts($zk, $a_session);
$d = delta($c5, counters($a));
is($d->{acquired}, 4, '(5) four acquires');
is($d->{release_requests}, 4, '(5) one request per release, alone or inside a multi');
is($d->{zk_requests}, 9,
	'(5) per lock a create and a delete, and one listing: of the directory with another child, as zk_status() counts them');
is($d->{handoffs}, 0, '(5) no handoff');
# ZooKeeper received the creates as one multi and fpb3's listing; the
# releases follow each grant at once, so they may reach the worker in one
# pass (one multi) or in several (at most four requests).
my $ticks5 = 1 + int((time - $t5) / (10 / 6));
my $zk5 = $z6->{requests} - $z5->{requests};
cmp_ok($zk5, '>=', 3, "(5) ZooKeeper answered $zk5 requests: a multi of creates, one listing, the deletes");
cmp_ok($zk5, '<=', 6 + $ticks5, '(5) ... not the twelve of lone cycles, nor a listing per lock (and heartbeats)');
cmp_ok(($z6->{sent} - $z5->{sent}) - ($z6->{received} - $z5->{received}), '<=', $ticks5,
	'(5) ZooKeeper sent no notification (at most one per heartbeat tick)');
$_->quit for @bs;

done_testing();
