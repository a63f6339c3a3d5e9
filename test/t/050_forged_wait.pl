# Deadlock detection believes a published wait only from the session that
# owns the request it names (issue 23, defect 7).  A kazoo session, which
# holds a lock with a node that looks like a zklock backend's, publishes a
# wait under .waits naming another session's waiting request: were it
# believed, it would close a cycle through an innocent transaction, which
# would be made the 40P01 victim.  It is not believed: the transaction
# waits on and ends by lock_timeout (55P03).  The same wait, naming a
# request of kazoo's own session, is a real cycle and is broken by 40P01:
# what tells the two apart is the owner of the named node, nothing else.
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::RealBin/../lib";
use ZklockTest;
use ZklockTest::Deadlock;
use Test::More;

my $zk = zk_start(1);
my $pg = zklock_node('a', $zk,
	conf => [ "cluster_name = 'a'", "deadlock_timeout = '1s'", "lock_timeout = '4s'" ]);

sub counter
{
	my ($col) = @_;
	return $pg->safe_psql('postgres', "SELECT $col FROM zk_status()");
}

# The newest node of a lock directory (sequence numbers are zero-padded).
sub newest_node
{
	my ($lock) = @_;
	my @kids = sort { substr($a, -10) cmp substr($b, -10) } zk_ls($zk, "/zklock/$lock");
	return $kids[-1];
}

# A kazoo client that writes the nodes it is told to (test/peers).
my $kz = peer_start('kazoo writer', [ '/usr/bin/python3', "$FindBin::RealBin/../peers/kazoo_writer.py" ]);
is($kz->cmd("connect $zk->{connect}"), 'ok', 'the kazoo client connects');
my $session = $kz->cmd('session');
my $fake_pid = 424242;
# What a zklock node's description says; enough for the detector to take
# the node for a backend (pid $fake_pid) of the kazoo session.
my $desc = qq({"system_identifier":"1","pid":$fake_pid,"cluster":"forged","host":"h","port":"1"});

# kazoo holds l1, as "backend $fake_pid" of its session.
my $l1 = $kz->cmd("create /zklock/l1/_c_00000000-0000-0000-0000-000000000000-lock- $desc");
like($l1, qr{^/zklock/l1/_c_.*-lock-\d{10}$}, 'kazoo holds l1 with a node described as a backend');

# (1) The forged wait.  T holds l2; U, another session, waits for l2 behind
# it.  kazoo publishes "backend $fake_pid of my session waits with U's
# request": with it, T (waiting for l1, kazoo's) and "$fake_pid" wait for
# each other, and T's request, the newer, would be the victim.
{
	my $checks = counter('deadlock_checks');
	my $found = counter('deadlocks_found');
	my $t = holder($pg, 'l2');
	my $u = holder($pg);
	$u->query_safe("SET lock_timeout = '60s'");
	start_wait($u, $pg, 'l2');
	my $x = newest_node('l2');
	my $czxid = $kz->cmd("czxid /zklock/l2/$x");
	like($czxid, qr/^\d+$/, "U's request in l2 ($x) has czxid $czxid");
	my $wait = "/zklock/.waits/$session-$fake_pid";
	is($kz->cmd(qq(create $wait {"lock_dir":"/zklock/l2","lock_node":"$x","czxid":$czxid,"mode":"exclusive","cluster":"forged"})),
		$wait, 'kazoo publishes a wait of its session naming U\'s request');
	start_wait($t, $pg, 'l1');
	is(finish_wait($t), '55P03',
		'a wait published by another session than the named request\'s is not believed: T ends by lock_timeout (55P03), not 40P01');
	unlike($t->{last_err} // '', qr/process $fake_pid\b/, 'no detail names the forged backend');
	cmp_ok(counter('deadlock_checks'), '>', $checks, 'T looked for a cycle meanwhile');
	is(counter('deadlocks_found'), $found, 'and found none');
	$t->query('ROLLBACK');
	is(finish_wait($u), 'granted', 'U is granted l2 once T gave up');
	is($kz->cmd("delete $wait"), 'ok', 'kazoo withdraws its wait');
	end_all($t, $u);
}

# (2) The control: the same wait, naming a request of kazoo's own session
# in l2, behind T's hold, is a real cycle; T's request on l1 is the newer
# and T is its victim.
{
	my $found = counter('deadlocks_found');
	my $t = holder($pg, 'l2');
	my $x = $kz->cmd("create /zklock/l2/_c_00000000-0000-0000-0000-000000000001-lock- $desc");
	like($x, qr{^/zklock/l2/}, 'kazoo queues for l2 behind T');
	my $czxid = $kz->cmd("czxid $x");
	my $node = (split m{/}, $x)[-1];
	my $wait = "/zklock/.waits/$session-$fake_pid";
	is($kz->cmd(qq(create $wait {"lock_dir":"/zklock/l2","lock_node":"$node","czxid":$czxid,"mode":"exclusive","cluster":"forged"})),
		$wait, 'kazoo publishes the wait of its own request');
	start_wait($t, $pg, 'l1');
	is(finish_wait($t), '40P01', 'a wait published by the session that owns the named request is believed: T gets 40P01');
	like($t->{last_err}, qr/blocked by process $fake_pid of cluster "forged"/, 'the detail names kazoo\'s "backend"');
	is(counter('deadlocks_found'), $found + 1, 'the deadlock is counted');
	end_all($t);
}

$kz->quit;
ok(wait_until(sub { !grep { zk_ls($zk, "/zklock/$_") } 'l1', 'l2', '.waits' }, 30, 'no node left'),
	'no node is left (locks and published waits)');
done_testing();
