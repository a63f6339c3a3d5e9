# A lock directory of 5,000 contenders (issue 23, defect 6): a kazoo
# program (test/peers/kazoo_nodes.py) queues 5,000 nodes in kazoo's layout.
# zk_lock_contenders lists them all, in queue order, the first one held,
# and prints how long that takes (noted, never asserted).  While a backend
# reads that directory over and over:
#  - ZooKeeper never has more than a bounded number of the worker's
#    requests outstanding (cons: queued), the reads in flight being capped
#    (ZKL_MAX_INSPECT_READS, 32) so that the session's own traffic
#    goes first;
#  - the heartbeat goes on: zk_status() stays connected, with a last
#    contact younger than half the session timeout;
#  - another backend's lock cycle is served;
#  - a cancel (pg_cancel_backend) and a statement_timeout end the reading
#    backend with 57014 (how long each took is noted).
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::RealBin/../lib";
use ZklockTest;
use ZklockTest::Command qw($test_dir);
use Test::More;
use Time::HiRes qw(time);

my $n = 5000;
my $zk = zk_start(1);
my $a = zklock_node('a', $zk);

my $kz = peer_start('kazoo-nodes', [ '/usr/bin/python3', "$test_dir/peers/kazoo_nodes.py" ]);
is($kz->cmd("connect $zk->{connect}"), 'ok', 'the kazoo program connects');
my $t0 = time;
is($kz->cmd("many /zklock/big/0123456789abcdef0123456789abcdef__lock__ $n", 120), 'ok',
	"$n kazoo contenders are queued");
note sprintf('creating %d nodes took %.2f s', $n, time - $t0);

my $count_sql = "SELECT count(*), count(*) FILTER (WHERE state = 'held'),"
  . " bool_and(position = 1 OR state = 'waiting'), min(position), max(position)"
  . " FROM zk_lock_contenders('big')";
for my $round (1 .. 3)
{
	my $t = time;
	my $r = sql_result($a, $count_sql);
	my $took = time - $t;
	is($r, "$n|1|t|1|$n", "round $round: zk_lock_contenders lists all $n, the first one held");
	diag sprintf('zk_lock_contenders of %d children: %.3f s', $n, $took);
}

# In one session the second read sizes its segment by the first one's
# reply: the directory is read once, not twice.
{
	my $s1 = bg_session($a);
	for my $round (1 .. 2)
	{
		my $r0 = $s1->query_safe('SELECT zk_requests FROM zk_status()');
		my $t = time;
		is($s1->query_safe($count_sql), "$n|1|t|1|$n", "one session, read $round: all $n listed");
		my $took = time - $t;
		my $requests = $s1->query_safe('SELECT zk_requests FROM zk_status()') - $r0;
		diag sprintf('one session, read %d: %.3f s, %d requests to ZooKeeper', $round, $took, $requests);
		is($requests, $n + 1, "one session, read $round: one listing and one read per child")
		  if $round == 2;
	}
	$s1->quit;
}

# A backend that reads the directory again and again (the argument changes
# every row, so that the function runs anew).
my $reads = "SELECT count(*) FROM generate_series(1, 1000) g,"
  . " LATERAL zk_lock_contenders('big' || repeat('x', g * 0)) c";

sub start_reader
{
	my $s = bg_session($a);
	$s->query_safe("\\set VERBOSITY verbose");
	my $pid = $s->query_safe('SELECT pg_backend_pid()');
	$s->{stderr} = '';
	$s->query_until(qr/started/, "\\echo started\n$reads;\n\\echo done\n");
	return ($s, $pid);
}

my ($s, $pid) = start_reader();
my $status = zk_status_of($a);
my $session = lc($status->{session_id}) =~ s/^0x0*//r;
my $fresh_ms = $status->{negotiated_timeout} / 2;

# Watch ZooKeeper's side of the worker's session while the reads go on.
my $max_queued = 0;
my $samples = 0;
my $stale = 0;
my $status_samples = 0;
my $next_status = 0;
my $t_end = time + 8;
while (time < $t_end)
{
	my $cons = zk_fourlw($zk, 'cons') // '';
	for my $line (split /\n/, $cons)
	{
		my ($fields) = $line =~ /\((.*)\)\s*$/ or next;
		my %f = map { /^(\w+)=(.*)$/ ? ($1 => $2) : () } split /,/, $fields;
		next unless defined $f{sid} && (lc($f{sid}) =~ s/^0x0*//r) eq $session;
		$max_queued = $f{queued} if $f{queued} > $max_queued;
		$samples++;
	}
	# zk_status() every half second or so.
	next if time < $next_status;
	$next_status = time + 0.5;
	my $contact = $a->safe_psql('postgres',
		"SELECT state || ' ' || (extract(epoch FROM clock_timestamp() - last_contact) * 1000)::int FROM zk_status()");
	my ($state, $age) = split / /, $contact;
	$status_samples++;
	if ($state ne 'connected' || $age > $fresh_ms)
	{
		$stale++;
		diag "zk_status: $contact ms";
	}
}
diag "outstanding requests of the worker's session at ZooKeeper: at most $max_queued in $samples samples";
cmp_ok($samples, '>', 10, 'the worker\'s session was sampled while the reads went on');
cmp_ok($max_queued, '<=', 40, 'ZooKeeper never had more than the cap of reads (and a few more) outstanding');
cmp_ok($status_samples, '>', 5, 'zk_status() was sampled while the reads went on');
is($stale, 0, 'zk_status() stayed connected, its last contact younger than half the session timeout');
is(sql_result($a, "SELECT zk_lock_try('small') AND zk_lock_release('small')"), 't',
	"another backend's lock cycle is served meanwhile");

# Cancel the reader while it reads.
my $t = time;
$a->safe_psql('postgres', "SELECT pg_cancel_backend($pid)");
$s->query_until(qr/done/, '');
my $cancel_took = time - $t;
is(sqlstate_of($s->{stderr}), '57014', 'a cancel ends the reading backend with 57014')
  or diag($s->{stderr});
diag sprintf('the cancel took %.3f s', $cancel_took);

$s->quit;
ok(wait_until(sub { zk_status_of($a)->{slots_used} == 0 }, 60, 'the reads are over'),
	'the reading slots are freed');

# statement_timeout ends one read of the directory, and the worker stops
# reading it: of the reads a whole directory needs (one per child), those
# not yet sent when the backend gave up are never sent.  A worker that
# sends them all at once sends at least one per child.
my $requests0 = zk_status_of($a)->{zk_requests};
$t = time;
is(sql_sqlstate($a, "SET statement_timeout = '100ms'; SELECT count(*) FROM zk_lock_contenders('big')"),
	'57014', 'statement_timeout ends a read of the directory with 57014');
diag sprintf('the read under statement_timeout 100ms ended after %.3f s', time - $t);
ok(wait_until(sub { zk_status_of($a)->{slots_used} == 0 }, 60, 'the timed-out read is over'),
	'the timed-out read\'s slot is freed');
my $requests = zk_status_of($a)->{zk_requests} - $requests0;
diag "requests sent for the read that timed out: $requests";
cmp_ok($requests, '<', $n, 'a read given up is not read to its end: fewer requests than children');

$kz->quit;
ok(wait_until(sub { !zk_ls($zk, '/zklock/big') }, 60, 'the nodes go with the session'),
	'no contender is left');

done_testing();
