# Fault: the whole ZooKeeper ensemble goes away while locks are held and
# waited for (zk_stop of all three servers), then comes back.
#
# What ZooKeeper itself does here decides what zklock may do: sessions live
# in the ensemble, and a new leader restarts every known session's timer
# when it takes office.  An outage of the whole ensemble, however long,
# therefore expires no session by itself; a session expires only when its
# client stays away for a session timeout while a quorum serves.  zklock
# must follow both cases and never let a commit through without proof:
#
# Phase 1, outage shorter than the session timeout (cluster D, session
# timeout 15 s): a holder's COMMIT issued while the ensemble is down waits,
# and proceeds once the ensemble is back; the row is committed and the
# wait is logged.
#
# Phase 2, outage of 8 s, twice the session timeout of A, B, C (4 s):
#  - A (all three servers listed) holds L1 in an open transaction with a row
#    inserted; B waits for L1.  A's COMMIT issued while the ensemble is down
#    waits for proof and fails with ZK002 ("could not confirm", or "was
#    lost" once the worker gave the session up), the row is not committed,
#    and B is granted L1 once ZooKeeper is back.
#  - A also holds L2 in another open transaction with a row and does not try
#    to commit during the outage.  Nothing tells a client whether the whole
#    ensemble is down (which renews every session when it comes back) or
#    only its own link (ZooKeeper expires the session a timeout after the
#    last proof, and may give the lock to another client): A's worker gives
#    the session up two thirds of the timeout after its last proof (issue 40
#    point 2), so L2 turns 'lost' during the outage.  When the ensemble is
#    back A reattaches to the old session only to close it (L2's node goes at
#    once, B can take L2) and opens a new one; L2's COMMIT fails with ZK002
#    ("was lost") and its row is not committed.
#  - C lists only server 1, which comes back last: servers 2 and 3 form a
#    quorum without it and expire C's session (a session timeout without its
#    client) while C is still cut off.  C held L3 in an open transaction
#    with a row; B waits for L3.  B is granted L3 when C's session expires;
#    once server 1 is back C learns of the expiry: L3 turns 'lost', C's COMMIT
#    fails with ZK002 ("was lost"), the row is not committed, the loss is
#    reported once and C can take L3 again.
# Every check of what was committed counts rows; every check of ZooKeeper
# uses its own view (zkutil).  At the end no lock directory keeps a node.
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::RealBin/../lib";
use ZklockTest;
use Test::More;
use PostgreSQL::Test::Utils;
use Time::HiRes qw(time sleep);

my $zk = zk_start(3);
my @ports = @{ $zk->{ports} };
my $a = zklock_node('a', $zk, session_timeout => '4s');
my $b = zklock_node('b', $zk, session_timeout => '4s');
my $c = zklock_node('c', $zk, session_timeout => '4s', hosts => "127.0.0.1:$ports[0]");
my $d = zklock_node('d', $zk, session_timeout => '15s');

for my $node ($a, $c, $d)
{
	$node->safe_psql('postgres', 'CREATE TABLE work (tag text)');
}

sub rows
{
	my ($node, $name) = @_;
	return $node->safe_psql('postgres',
		"SELECT pid || ' ' || scope || ' ' || state || ' ' || coalesce(znode, '-') FROM zk_locks WHERE name = '$name' ORDER BY pid");
}

sub diag_lock
{
	my ($name) = @_;
	my $dir = "/zklock/$name";
	diag("ZooKeeper children of $dir: " . join(', ', zk_ls($zk, $dir)));
	diag("zk_locks of ${\ $_->name} for $name:\n" . rows($_, $name)) for ($a, $b, $c);
}

# A session of $node that holds $name in an open transaction that has
# inserted a row tagged $tag.  Returns (session, backend pid, znode).
sub xact_holder
{
	my ($node, $name, $tag) = @_;
	my $s = bg_session($node);
	$s->query_safe('\set VERBOSITY verbose');
	my $pid = $s->query_safe('SELECT pg_backend_pid()');
	is($s->query_safe("BEGIN; SELECT zk_lock_acquire_xact('$name', '10s') > 0; INSERT INTO work VALUES ('$tag')"),
		't', "$tag: holds $name in an open transaction with a row inserted");
	my $znode = $node->safe_psql('postgres',
		"SELECT znode FROM zk_locks WHERE pid = $pid AND name = '$name' AND state = 'held'");
	ok(scalar(grep { $_ eq zk_base($znode) } zk_ls($zk, "/zklock/$name")),
		"$tag: its node is in ZooKeeper");
	return ($s, $pid, $znode);
}

# Start COMMIT in $s without waiting for it; the result is read by
# finish_commit.  Returns the time the COMMIT was sent.
sub start_commit
{
	my ($s) = @_;
	my $t = time;
	$s->query_until(qr/commit-start\n/,
		"\\echo commit-start\nCOMMIT;\nSELECT 'commit-end', extract(epoch FROM clock_timestamp());\n");
	return $t;
}

# Wait for a COMMIT started by start_commit.  Returns (error text or '',
# time the COMMIT ended).
sub finish_commit
{
	my ($s) = @_;
	my ($out, $err) = bg_collect($s);
	my ($end) = $out =~ /^commit-end\|([\d.]+)$/m;
	return ($err, $end);
}

# A blocked acquire in a new session of B; returns the session.
sub start_waiter
{
	my ($name, $pid_ref) = @_;
	my $s = bg_session($b);
	$s->query_safe('\set VERBOSITY verbose');
	# The outage and the servers' restart may outlast the default 10 s.
	$s->query_safe("SET zklock.connect_timeout = '60s'");
	$$pid_ref = $s->query_safe('SELECT pg_backend_pid()');
	$s->query_until(qr/waiting\n/,
		"\\echo waiting\nSELECT 'granted', zk_lock_acquire('$name', '60s') > 0, extract(epoch FROM clock_timestamp());\n");
	my $pid = $$pid_ref;
	wait_until(sub { lock_state($b, $pid, $name) eq 'waiting' }, 20, "B waits for $name");
	return $s;
}

# The waiter's outcome: 'granted' or the error text.
sub waiter_outcome
{
	my ($s) = @_;
	my ($out, $err) = bg_collect($s);
	return $out =~ /^granted\|t\|/m ? 'granted' : "not granted: $err";
}

# ---------------------------------------------------------------------
# Phase 1: a short outage, within D's 15 s session timeout.
# ---------------------------------------------------------------------
my $d_before = zk_status_of($d);
is($d_before->{negotiated_timeout}, '15000', 'D negotiated a 15 s session timeout');
my ($hd, $hd_pid) = xact_holder($d, 'L0', 'd-short-outage');

my $t_stop = time;
zk_stop($zk);
wait_until(sub { zk_status_of($d)->{state} ne 'connected' }, 10, 'D notices that the ensemble is gone');
my $t_commit = start_commit($hd);
sleep 1;
is($d->safe_psql('postgres', "SELECT state || ' ' || query FROM pg_stat_activity WHERE pid = $hd_pid"),
	'active COMMIT;', 'phase 1: the COMMIT is still waiting 1 s into the outage');
my $t_restart = time;
zk_start_all($zk);
my $t_back = time;
my ($err, $t_end) = finish_commit($hd);
is($err, '', 'phase 1: the COMMIT issued during a short outage proceeds once the ensemble is back');
cmp_ok($t_end // 0, '>', $t_restart,
	sprintf('phase 1: ... it waited through the outage (COMMIT ended %.1f s after it was sent; '
		  . 'restart began after %.1f s, all servers served after %.1f s)',
		($t_end // 0) - $t_commit, $t_restart - $t_commit, $t_back - $t_commit));
is(committed($d, 'd-short-outage'), '1', 'phase 1: the row is committed');
my ($waited_ms) = slurp_file($d->logfile) =~ /commit waited (\d+) ms for the ZooKeeper session to be confirmed/;
ok(defined $waited_ms, 'phase 1: the commit that waited is logged');
cmp_ok($waited_ms // 0, '>=', ($t_restart - $t_commit) * 1000 - 200,
	'phase 1: the logged wait covers the outage (' . ($waited_ms // 'none') . ' ms)');
is(zk_status_of($d)->{session_id}, $d_before->{session_id}, 'phase 1: D kept its ZooKeeper session');
wait_until(sub { !zk_ls($zk, '/zklock/L0') }, 10, 'phase 1: L0 released in ZooKeeper after the commit');
$hd->quit;

# Everybody is connected again before phase 2 starts.
for my $node ($a, $b, $c)
{
	wait_until(sub { zk_status_of($node)->{state} eq 'connected' }, 20, "${\ $node->name} connected before phase 2");
}

# ---------------------------------------------------------------------
# Phase 2: an 8 s outage, twice the session timeout of A, B and C.
# ---------------------------------------------------------------------
my $a_before = zk_status_of($a);
my $c_before = zk_status_of($c);
is($a_before->{negotiated_timeout}, '4000', 'A negotiated a 4 s session timeout');

my ($h1, $h1_pid, $h1_node) = xact_holder($a, 'L1', 'a-commit-during-outage');
my ($h2, $h2_pid, $h2_node) = xact_holder($a, 'L2', 'a-commit-after-outage');
my ($h3, $h3_pid, $h3_node) = xact_holder($c, 'L3', 'c-session-expired');
my ($w1_pid, $w3_pid);
my $w1 = start_waiter('L1', \$w1_pid);
my $w3 = start_waiter('L3', \$w3_pid);
is(scalar(zk_ls($zk, '/zklock/L1')), 2, 'L1: the holder and the waiter are queued in ZooKeeper');
is(scalar(zk_ls($zk, '/zklock/L3')), 2, 'L3: the holder and the waiter are queued in ZooKeeper');

$t_stop = time;
zk_stop($zk);
wait_until(sub { zk_status_of($a)->{state} ne 'connected' }, 10, 'A notices that the ensemble is gone');
is(zk_status_of($a)->{state}, 'suspended', 'A reports its session suspended, not expired, during the outage');
is(lock_state($a, $h2_pid, 'L2'), 'suspended', 'while suspended, zk_locks shows L2 suspended, not held');
is($h2->query_safe("SELECT zk_lock_check('L2')"), 'f', 'while suspended, zk_lock_check(L2) is false in its holder');

# A COMMIT while the ensemble is down waits for proof, then fails.
$t_commit = start_commit($h1);
($err, $t_end) = finish_commit($h1);
my $waited = ($t_end // time) - $t_commit;
like($err, qr/ZK002: (could not confirm the ZooKeeper session before commit|ZooKeeper lock "L1" was lost)/,
	'phase 2: a COMMIT while the ensemble is down fails with ZK002');
cmp_ok($waited, '<', 8, sprintf('phase 2: ... within the outage (%.1f s)', $waited));
is(committed($a, 'a-commit-during-outage'), '0', 'phase 2: the row of the failed COMMIT is not committed');

# The outage lasts 8 s in all.
sleep(8 - (time - $t_stop)) if time - $t_stop < 8;
my $outage = time - $t_stop;

# Servers 2 and 3 come back and form a quorum; server 1 (C's only server)
# stays down.
zk_start_one($zk, 2, no_quorum_wait => 1);
zk_start_one($zk, 3);
my $t_quorum = time;
note sprintf('outage of servers 2 and 3: %.1f s', $t_quorum - $t_stop);

# A gave its session up during the outage (L2 turned lost then); it closes
# it and opens a new one.
is(lock_state($a, $h2_pid, 'L2'), 'lost', 'phase 2: A declared L2 lost during the outage');
wait_until(sub { zk_status_of($a)->{state} eq 'connected' }, 20, 'A reconnects to servers 2 and 3');
isnt(zk_status_of($a)->{session_id}, $a_before->{session_id}, 'phase 2: A has a new ZooKeeper session after giving the old one up');
like(slurp_file($a->logfile), qr/closed ZooKeeper session \Q$a_before->{session_id}\E of its own that it gave up/,
	'phase 2: A closed the session it gave up once ZooKeeper was back');

# L1: the failed COMMIT rolled back; its node goes and B's waiter is granted.
is(waiter_outcome($w1), 'granted', 'phase 2: B\'s waiter is granted L1 once ZooKeeper is back');
is(lock_state($a, $h1_pid, 'L1'), 'none', 'phase 2: A keeps no entry for L1 after its failed COMMIT');
my @l1 = zk_ls($zk, '/zklock/L1');
ok(@l1 == 1 && $l1[0] ne zk_base($h1_node), 'phase 2: only B\'s node is left in L1\'s directory')
  or diag_lock('L1');

# L2: lost, its node gone with the closed session; A's COMMIT fails.
ok(wait_until(sub { !zk_ls($zk, '/zklock/L2') }, 10, 'L2\'s node gone'),
	'phase 2: L2\'s node went with the session A closed')
  or diag_lock('L2');
is($b->safe_psql('postgres', "SELECT zk_lock_try('L2')"), 't', 'phase 2: B can take L2');
$h2->query("COMMIT");
like($h2->{stderr}, qr/ZK002: ZooKeeper lock "L2" was lost/, 'phase 2: A\'s COMMIT of the transaction that held L2 fails with ZK002');
$h2->{stderr} = '';
is(committed($a, 'a-commit-after-outage'), '0', 'phase 2: its row is not committed');

# L3: C cannot reach server 1; the quorum expires C's session after a
# session timeout, so its node goes and B's waiter is granted.
is(waiter_outcome($w3), 'granted', 'phase 2: B\'s waiter is granted L3 when C\'s session expires');
my $t_w3 = time;
note sprintf('B was granted L3 %.1f s after servers 2 and 3 served again', $t_w3 - $t_quorum);
cmp_ok(zk_status_of($c)->{state}, 'ne', 'connected', 'phase 2: C is still cut off');
note('C\'s own view of L3 while cut off (it cannot know of the expiry yet): ' . lock_state($c, $h3_pid, 'L3'));

# Server 1 comes back: C learns that its session expired.
zk_start_one($zk, 1);
wait_until(sub { lock_state($c, $h3_pid, 'L3') eq 'lost' }, 20, 'L3 turns lost in C');
is(lock_state($c, $h3_pid, 'L3'), 'lost', 'phase 2: C shows L3 lost once it hears its session expired');
like(slurp_file($c->logfile), qr/backend $h3_pid lost ZooKeeper lock "L3": /,
	'phase 2: C\'s log names the backend and the lost lock');
wait_until(sub { zk_status_of($c)->{state} eq 'connected' }, 20, 'C opens a new session');
isnt(zk_status_of($c)->{session_id}, $c_before->{session_id}, 'phase 2: C has a new ZooKeeper session');

$h3->query("COMMIT");
like($h3->{stderr}, qr/ZK002: ZooKeeper lock "L3" was lost/, 'phase 2: C\'s COMMIT fails with ZK002 (lock lost)');
$h3->{stderr} = '';
is(committed($c, 'c-session-expired'), '0', 'phase 2: C\'s row is not committed');
is(lock_state($c, $h3_pid, 'L3'), 'none', 'phase 2: the loss was reported and forgotten');

# The loss is reported once; then C can commit and take L3 again.
$h3->query("BEGIN; INSERT INTO work VALUES ('c-after-loss'); COMMIT");
is($h3->{stderr}, '', 'phase 2: C\'s next transaction commits');
$h3->{stderr} = '';
is(committed($c, 'c-after-loss'), '1', 'phase 2: ... and its row is there');

$w1->query_safe("SELECT zk_lock_release('L1')");
$w3->query_safe("SELECT zk_lock_release('L3')");
is($h1->query_safe("SELECT zk_lock_acquire('L1', '10s') > 0"), 't', 'A takes L1 again after the outage');
is($h3->query_safe("SELECT zk_lock_acquire('L3', '10s') > 0"), 't', 'C takes L3 again after its loss');
is($b->safe_psql('postgres', "SELECT zk_lock_try('L3')"), 'f', 'B cannot take L3 while C holds it again');
$h1->query_safe("SELECT zk_lock_release('L1')");
$h3->query_safe("SELECT zk_lock_release('L3')");

$_->quit for ($h1, $h2, $h3, $w1, $w3);

for my $name (qw(L0 L1 L2 L3))
{
	wait_until(sub { !zk_ls($zk, "/zklock/$name") }, 10, "no node left for $name");
	is(join(',', zk_ls($zk, "/zklock/$name")), '', "no orphan node left in ZooKeeper for $name")
	  or diag_lock($name);
}
for my $node ($a, $b, $c, $d)
{
	is($node->safe_psql('postgres', 'SELECT count(*) FROM zk_locks'), '0',
		"${\ $node->name} keeps no lock entry at the end");
}
diag(sprintf('ensemble down %.1f s (servers 2 and 3), server 1 down %.1f s; '
	  . 'A kept session %s; C\'s session %s expired; B granted L3 %.1f s after the quorum was back',
	$outage, time - $t_stop, $a_before->{session_id}, $c_before->{session_id}, $t_w3 - $t_quorum));

done_testing();
