# A hold the worker takes away (zklock.max_hold_time) in a lock directory
# that then refuses the delete of its node (issue 41, point 2, a reviewer's
# open item).  The directory grants DELETE only to ip:10.9.9.9, which
# zklock cannot evaluate, so the hold is granted; the limit takes it away,
# ZooKeeper refuses the delete.  The backend is told the hold is lost, and
# the node, which stays and holds the lock against everyone, shows
# "stranded" in zk_locks (after the backend has seen the loss too), later
# requests there are refused (42501), and once the ACL allows it the
# worker's next attempt deletes the node and frees the slot.  Before the
# fix the slot went with the backend's report of the loss: zk_locks showed
# nothing, nobody tried the delete again, and the node stayed until the
# session ended.
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::RealBin/../lib";
use ZklockTest;
use PostgreSQL::Test::Utils;
use Test::More;

my $zk = zk_start(1);
zk_create($zk, '/zklock/t', undef, '--parents');
my $kazoo = kazoo_peer($zk);
is($kazoo->cmd('set_acl /zklock/t world:anyone:crwa,ip:10.9.9.9:crwda'), 'ok',
	"t's directory grants DELETE to one ip address only");

my $a = zklock_node('a', $zk, conf => [ "lock_timeout = '3s'" ]);
expect_in_log($a, qr/WARNING:  could not delete ZooKeeper node "\/zklock\/t\//, 1);

sub state_of
{
	return sql_result($a, "SELECT coalesce(string_agg(state, ','), '') FROM zk_locks WHERE name = 't'");
}

my $s = bg_session($a);
like(bg_result($s, "SET zklock.max_hold_time = '1s'; SELECT zk_lock_acquire('t')"), qr/^\d+$/,
	'the acquire in t is granted, with a limit of 1 s');
ok(wait_until(sub { slurp_file($a->logfile) =~ /WARNING:  could not delete ZooKeeper node "\/zklock\/t\// }, 20, 'refused'),
	'the limit took the hold away, and its delete was refused');
isnt(bg_sqlstate($s, "SELECT zk_lock_check('t') OR zk_lock_release('t')"), 'ok',
	'the backend is told its hold is lost');
is(state_of(), 'stranded', 'zk_locks shows the node stranded, after the backend gave the slot up');
is(scalar(zk_ls($zk, '/zklock/t')), 1, 'the node stays');
is(bg_sqlstate($s, "SELECT zk_lock_try('t')"), '42501', 'a try in t is refused while it stays (42501)');

is($kazoo->cmd('set_acl /zklock/t world:anyone:crwda'), 'ok', "t's directory grants DELETE again");
ok(wait_until(sub { scalar(zk_ls($zk, '/zklock/t')) == 0 && state_of() eq '' }, 30, 'node deleted'),
	"the worker's next attempt deletes the node, and the slot goes");
is(bg_result($s, "RESET zklock.max_hold_time; SELECT zk_lock_try('t') AND zk_lock_release('t')"), 't',
	't is taken and released again');

$kazoo->quit;
$s->quit;
done_testing();
