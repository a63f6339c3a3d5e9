# Nodes zklock made and could not delete (issue 41, point 2).  zklock reads
# a lock directory's ACL before its first create there (t/093: a directory
# that refuses its deletes is refused before anything is made).  What the
# ACL cannot tell is learnt at the delete, and then said:
# (1) a directory whose DELETE is granted only by an entry zklock cannot
#     evaluate (ip: the address the server sees): the hold is granted, its
#     release waits for the delete, which is refused: zk_lock_release
#     answers false with a WARNING, the node is "stranded" in zk_locks, and
#     the same session's and another session's next requests there are
#     refused (42501) rather than wait behind it or leave one more node;
# (2) once the ACL is put right, the worker's next attempt deletes it, the
#     slot goes, and the lock is used again;
# (3) a directory whose ACL loses DELETE after the create: the release
#     cannot know (it does not wait where the ACL granted DELETE), but the
#     node is "stranded" in zk_locks until the ACL is put right, and the
#     directory is refused meanwhile.
# Before the fix the release answered true, zk_locks showed nothing, and
# the refusal was only a line of the server log.
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::RealBin/../lib";
use ZklockTest;
use PostgreSQL::Test::Utils;
use Test::More;

my $zk = zk_start(1);
my $a = zklock_node('a', $zk, conf => [ "lock_timeout = '3s'" ]);
expect_in_log($a, qr/WARNING:  ZooKeeper lock "u" was given up, but ZooKeeper refused the delete of its node/, 1);
expect_in_log($a, qr/WARNING:  could not delete ZooKeeper node "\/zklock\/[uc]\//, 2);

my $kazoo = kazoo_peer($zk);
sub state_of
{
	my ($name) = @_;
	return sql_result($a, "SELECT coalesce(string_agg(state, ','), '') FROM zk_locks WHERE name = '$name'");
}

# (1) DELETE granted only to an address zklock is not at.
zk_create($zk, '/zklock/u', undef, '--parents');
is($kazoo->cmd('set_acl /zklock/u world:anyone:crwa,ip:10.9.9.9:crwda'), 'ok',
	"u's directory grants DELETE to one ip address only");
my $s = bg_session($a);
like(bg_result($s, "SELECT zk_lock_acquire('u')"), qr/^\d+$/, '(1) the acquire in u is granted');
# The WARNING is read from the server log; the client is spared it here.
bg_result($s, "SET client_min_messages = error");
is(bg_result($s, "SELECT zk_lock_release('u')"), 'f',
	'(1) its release answers false: the delete was refused');
bg_result($s, "RESET client_min_messages");
ok(wait_until(sub { slurp_file($a->logfile) =~ /WARNING:  ZooKeeper lock "u" was given up, but ZooKeeper refused/ }, 10, 'warning'),
	'(1) ... with a WARNING saying so');
is(state_of('u'), 'stranded', '(1) zk_locks shows the node stranded');
is(sql_result($a, "SELECT znode LIKE '/zklock/u/_c_%' FROM zk_locks WHERE name = 'u'"), 't',
	'(1) ... with its znode');
is(scalar(zk_ls($zk, '/zklock/u')), 1, '(1) the node stays');
for my $sql ("SELECT zk_lock_try('u')", "SELECT zk_lock_acquire('u')")
{
	is(bg_sqlstate($s, $sql), '42501', "(1) $sql in the same session: refused (42501), not behind its own node");
	is(sql_sqlstate($a, $sql), '42501', "(1) $sql in another session: refused too");
}
is(scalar(zk_ls($zk, '/zklock/u')), 1, '(1) no other node was left in u');

# (2) The ACL put right: the next attempt deletes it.
is($kazoo->cmd('set_acl /zklock/u world:anyone:crwda'), 'ok', "(2) u's directory grants DELETE again");
ok(wait_until(sub { scalar(zk_ls($zk, '/zklock/u')) == 0 && state_of('u') eq '' }, 30, 'stranded node deleted'),
	'(2) the worker deletes the stranded node, and its slot goes');
like(bg_result($s, "SELECT zk_lock_acquire('u')"), qr/^\d+$/, '(2) u is granted again');
is(bg_result($s, "SELECT zk_lock_release('u')"), 't', '(2) and released');
ok(wait_until(sub { scalar(zk_ls($zk, '/zklock/u')) == 0 }, 10, 'u empty'), '(2) its node is gone');

# (3) DELETE withdrawn after the create.
zk_create($zk, '/zklock/c', undef, '--parents');
like(bg_result($s, "SELECT zk_lock_acquire('c')"), qr/^\d+$/, '(3) the acquire in c is granted');
is($kazoo->cmd('set_acl /zklock/c world:anyone:crwa'), 'ok', "(3) c's directory loses DELETE");
is(bg_result($s, "SELECT zk_lock_release('c')"), 't',
	'(3) the release does not wait where the ACL granted DELETE');
ok(wait_until(sub { state_of('c') eq 'stranded' }, 10, 'c stranded'), '(3) zk_locks shows the node stranded');
is(bg_sqlstate($s, "SELECT zk_lock_try('c')"), '42501', '(3) the next try in c is refused');
is(scalar(zk_ls($zk, '/zklock/c')), 1, '(3) one node in c, the stranded one');
is($kazoo->cmd('set_acl /zklock/c world:anyone:crwda'), 'ok', "(3) c's directory grants DELETE again");
ok(wait_until(sub { scalar(zk_ls($zk, '/zklock/c')) == 0 && state_of('c') eq '' }, 30, 'c cleaned'),
	'(3) the worker deletes it, and its slot goes');

$kazoo->quit;
$s->quit;
done_testing();
