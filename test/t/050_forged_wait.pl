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
use PostgreSQL::Test::Utils;
use Test::More;

my $zk = zk_start(1);
my $pg = zklock_node('a', $zk,
	conf => [ "cluster_name = 'a'", "deadlock_timeout = '200ms'", "lock_timeout = '4s'" ]);

# A kazoo client that writes what it is told: "connect HOSTS" (ok),
# "session" (its session id as .waits names it), "create PATH DATA"
# (an ephemeral node, parents made; PATH ending in "-" is sequential;
# answers the path), "czxid PATH", "delete PATH", "quit".
my $forger_py = <<'PY';
import sys
from kazoo.client import KazooClient
zk = None
for line in sys.stdin:
    cmd = line.rstrip("\n").split(" ", 2)
    try:
        if cmd[0] == "quit":
            print("bye", flush=True)
            break
        elif cmd[0] == "connect":
            zk = KazooClient(hosts=cmd[1], timeout=10.0)
            zk.start(timeout=15)
            reply = "ok"
        elif cmd[0] == "session":
            reply = "%016x" % zk.client_id[0]
        elif cmd[0] == "create":
            reply = zk.create(cmd[1], cmd[2].encode(), ephemeral=True,
                              sequence=cmd[1].endswith("-"), makepath=True)
        elif cmd[0] == "czxid":
            reply = str(zk.exists(cmd[1]).czxid)
        elif cmd[0] == "delete":
            zk.delete(cmd[1])
            reply = "ok"
        else:
            reply = "error unknown command"
    except Exception as e:
        reply = "error %s: %s" % (type(e).__name__, e)
    print(reply, flush=True)
if zk is not None:
    zk.stop()
    zk.close()
PY

# A session in a transaction that holds the given locks.
sub holder
{
	my ($node, @locks) = @_;
	my $s = bg_session($node);
	$s->query_safe("\\set VERBOSITY verbose");
	$s->query_safe('BEGIN');
	$s->query_safe("SELECT zk_lock_acquire_xact('$_')") for @locks;
	$s->{pid} = $s->query_safe('SELECT pg_backend_pid()');
	return $s;
}

# Start a waiting acquire in session $s; returns once it waits in zk_locks.
sub start_wait
{
	my ($s, $lock) = @_;
	$s->{stderr} = '';
	$s->query_until(qr/started/, "\\echo started\nSELECT zk_lock_acquire_xact('$lock') > 0 AS granted;\n\\echo done\n");
	wait_until(sub {
		$pg->safe_psql('postgres',
			"SELECT count(*) FROM zk_locks WHERE pid = $s->{pid} AND name = '$lock' AND state = 'waiting'") eq '1'
	}, 30, "pid $s->{pid} waits for $lock");
}

# The outcome of the wait: 'granted' or a SQLSTATE (stderr in last_err).
sub finish_wait
{
	my ($s) = @_;
	my $out = $s->query_until(qr/done/, '');
	$s->{last_err} = $s->{stderr};
	$s->{stderr} = '';
	return 'granted' if $out =~ /\bt\b/;
	return sqlstate_of($s->{last_err});
}

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

my $forger = PostgreSQL::Test::Utils::tempdir('forger') . '/forger.py';
PostgreSQL::Test::Utils::append_to_file($forger, $forger_py);
my $kz = peer_start('forger', [ '/usr/bin/python3', $forger ]);
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
	start_wait($u, 'l2');
	my $x = newest_node('l2');
	my $czxid = $kz->cmd("czxid /zklock/l2/$x");
	like($czxid, qr/^\d+$/, "U's request in l2 ($x) has czxid $czxid");
	my $wait = "/zklock/.waits/$session-$fake_pid";
	is($kz->cmd(qq(create $wait {"lock_dir":"/zklock/l2","lock_node":"$x","czxid":$czxid,"mode":"exclusive","cluster":"forged"})),
		$wait, 'kazoo publishes a wait of its session naming U\'s request');
	start_wait($t, 'l1');
	is(finish_wait($t), '55P03',
		'a wait published by another session than the named request\'s is not believed: T ends by lock_timeout (55P03), not 40P01');
	unlike($t->{last_err} // '', qr/process $fake_pid\b/, 'no detail names the forged backend');
	cmp_ok(counter('deadlock_checks'), '>', $checks, 'T looked for a cycle meanwhile');
	is(counter('deadlocks_found'), $found, 'and found none');
	$t->query('ROLLBACK');
	is(finish_wait($u), 'granted', 'U is granted l2 once T gave up');
	is($kz->cmd("delete $wait"), 'ok', 'kazoo withdraws its wait');
	for my $s ($t, $u)
	{
		$s->query('ROLLBACK');
		$s->quit;
	}
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
	start_wait($t, 'l1');
	is(finish_wait($t), '40P01', 'a wait published by the session that owns the named request is believed: T gets 40P01');
	like($t->{last_err}, qr/blocked by process $fake_pid of cluster "forged"/, 'the detail names kazoo\'s "backend"');
	is(counter('deadlocks_found'), $found + 1, 'the deadlock is counted');
	$t->query('ROLLBACK');
	$t->quit;
}

$kz->quit;
ok(wait_until(sub { !grep { zk_ls($zk, "/zklock/$_") } 'l1', 'l2', '.waits' }, 30, 'no node left'),
	'no node is left (locks and published waits)');
done_testing();
