# A contender node that zklock may not read (its ACL denies READ) is a
# contender whose data is unknown, never an error for the whole directory
# (issue 23, defect 5).  A kazoo program (test/peers/kazoo_nodes.py) makes
# such a node in a lock's directory, as a waiter behind a zklock holder and
# as the holder itself.  zk_lock_contenders lists it in its place, with its
# czxid and with holder and data NULL, next to the readable rest;
# zk_lock_verify and zk_lock_revoke still answer for the lock; and a
# deadlock check of a waiter in that directory runs and finds nothing, so
# the wait ends by lock_timeout (55P03), not with ZK000.
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::RealBin/../lib";
use ZklockTest;
use ZklockTest::Command qw($test_dir);
use Test::More;

my $zk = zk_start(1);
my $a = zklock_node('a', $zk, conf => [ "deadlock_timeout = '200ms'" ]);

my $kz = peer_start('kazoo-nodes', [ '/usr/bin/python3', "$test_dir/peers/kazoo_nodes.py" ]);
is($kz->cmd("connect $zk->{connect}"), 'ok', 'the kazoo program connects');

my $uuid = '00000000-0000-4000-8000-000000000048';

# A node of lock $lock that nobody may read: (path, czxid).
sub unreadable
{
	my ($lock) = @_;
	my $reply = $kz->cmd("unreadable /zklock/$lock/_c_$uuid-lock-");
	like($reply, qr{^/zklock/$lock/\S+ \d+$}, "an unreadable contender of $lock is made");
	return split / /, $reply;
}

my $columns = "position, mode, state, client, czxid, holder IS NULL, data IS NULL";

# --- (1) an unreadable waiter behind zklock's holder and waiter

my $s1 = bg_session($a);
$s1->query_safe('BEGIN');
my $t1 = $s1->query_safe("SELECT zk_lock_acquire_xact('u')");

# Two zklock waiters, of 'u' and of 'w' (held by s1 too), publish their
# waits after deadlock_timeout (200ms), so each deadlock check (again after
# each further 200ms) reads the directory of 'u'; lock_timeout ends them.
$s1->query_safe("SELECT zk_lock_acquire_xact('w')");
my $checks = sql_result($a, 'SELECT deadlock_checks FROM zk_status()');
my %waiter;
for my $lock ('u', 'w')
{
	my $s = bg_session($a);
	$s->query_safe("\\set VERBOSITY verbose");
	$s->query_safe("SET lock_timeout = '4s'");
	my $pid = $s->query_safe('SELECT pg_backend_pid()');
	$s->query_until(qr/started/, "\\echo started\nSELECT zk_lock_acquire('$lock');\n\\echo done\n");
	ok(wait_until(sub { lock_state($a, $pid, $lock) eq 'waiting' }, 30, "the waiter of $lock waits"),
		"a zklock waiter of $lock queues behind the holder");
	$waiter{$lock} = $s;
}
my $t2 = sql_result($a, "SELECT czxid FROM zk_lock_contenders('u') WHERE position = 2");

my ($u_node, $u_czxid) = unreadable('u');
is(sql_result($a, "SELECT $columns FROM zk_lock_contenders('u')"),
	"1|exclusive|held|zklock|$t1|f|t\n2|exclusive|waiting|zklock|$t2|f|t\n"
	  . "3|exclusive|waiting|curator|$u_czxid|t|t",
	'zk_lock_contenders: the readable contenders as usual, the unreadable one with holder and data NULL');
is(sql_result($a, "SELECT znode FROM zk_lock_contenders('u') WHERE position = 3"), $u_node,
	'and the unreadable node by its path');
is(sql_result($a, "SELECT zk_lock_verify('u', $t1)"), 't', "zk_lock_verify: the holder's token holds");
is(sql_result($a, "SELECT zk_lock_verify('u', $u_czxid)"), 'f',
	"zk_lock_verify: the unreadable waiter's czxid does not");

# The waiters' deadlock checks read the unreadable node: no edge, no error.
for my $lock ('u', 'w')
{
	my $s = $waiter{$lock};
	$s->query_until(qr/done/, '');
	is(sqlstate_of($s->{stderr}), '55P03',
		"the waiter of $lock, whose deadlock checks read the unreadable node, ends by lock_timeout, not ZK000")
	  or diag($s->{stderr});
	$s->quit;
}
cmp_ok(sql_result($a, 'SELECT deadlock_checks FROM zk_status()'), '>', $checks + 2,
	'and their deadlock checks did run');

$s1->query_safe('ROLLBACK');
$s1->quit;

# --- (2) an unreadable holder

my ($v_node, $v_czxid) = unreadable('v');
is(sql_result($a, "SELECT $columns FROM zk_lock_contenders('v')"),
	"1|exclusive|held|curator|$v_czxid|t|t",
	'zk_lock_contenders: the unreadable holder holds, its description unknown');
is(sql_result($a, "SELECT zk_lock_verify('v', $v_czxid)"), 't',
	"zk_lock_verify: the unreadable holder's czxid holds");
is(sql_result($a, "SELECT zk_lock_try('v')"), 'f', 'zk_lock_try: the unreadable holder keeps zklock out');
# A waiter watches the unreadable node ahead of it (exists: no READ needed).
is(sql_sqlstate($a, "SET lock_timeout = '1s'; SELECT zk_lock_acquire('v')"), '55P03',
	'a zklock waiter behind the unreadable holder waits until lock_timeout');
# Its ACL lets anyone write: the revocation message is written.
is(sql_result($a, "SELECT zk_lock_revoke('v')"), '1', 'zk_lock_revoke asks the unreadable holder');

$kz->quit;
ok(wait_until(sub { !grep { zk_ls($zk, "/zklock/$_") } qw(u v w) }, 30, 'the nodes go with the session'),
	'no contender is left');

done_testing();
