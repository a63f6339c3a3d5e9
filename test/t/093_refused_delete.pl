# A lock directory whose ACL refuses zklock's deletes (issue 41, point 3).
# Another tool made the directory first, with world:anyone:crwa: anyone may
# create, read and write its children, nobody may delete them.  zklock's
# first hold there is granted and released, but its node cannot be deleted
# (ZNOAUTH): it stays until the cluster's ZooKeeper session ends, and holds
# the lock meanwhile.  The worker says so (a WARNING in the server log,
# 42501, with a hint) and remembers the directory: every later request
# there, this session's and others', a try or an acquire, is refused before
# its create with a clear error (42501, naming the directory), instead of
# waiting behind the orphan (55P03) or answering false and leaving one
# more node each time.  Before the fix the refused delete was a LOG line
# only, the same session's acquire waited behind its own orphan until
# lock_timeout, each try left another node, and the directory filled.
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::RealBin/../lib";
use ZklockTest;
use PostgreSQL::Test::Utils;
use Test::More;

my $zk = zk_start(1);
my $a = zklock_node('a', $zk, conf => [ "lock_timeout = '3s'" ]);
expect_in_log($a, qr/WARNING:  could not delete ZooKeeper node "\/zklock\/nd\//, 1);

zk_create($zk, '/zklock/nd', undef, '--parents');
my $kazoo = kazoo_peer($zk);
is($kazoo->cmd('set_acl /zklock/nd world:anyone:crwa'), 'ok', "nd's directory refuses DELETE");

my $s = bg_session($a);
like(bg_result($s, "SELECT zk_lock_acquire('nd')"), qr/^\d+$/, 'the first acquire in nd is granted');
is(bg_result($s, "SELECT zk_lock_release('nd')"), 't', 'and released');
ok(wait_until(sub { slurp_file($a->logfile) =~ /could not delete ZooKeeper node/ }, 30, 'the delete is refused'),
	'the refused delete is reported in the server log');
like(slurp_file($a->logfile), qr/WARNING:  could not delete/,
	'as a WARNING');
is(scalar(zk_ls($zk, '/zklock/nd')), 1, 'the node it could not delete stays');

for my $sql ("SELECT zk_lock_try('nd')", "SELECT zk_lock_acquire('nd')", "SELECT zk_lock_try_shared('nd')")
{
	is(bg_sqlstate($s, $sql), '42501', "$sql in the same session: refused before its create (42501)");
	is(sql_sqlstate($a, $sql), '42501', "$sql in another session: refused too");
}
my ($ret, $out, $err) = $a->psql('postgres', "SELECT zk_lock_try('nd')");
like($err, qr/lock directory "\/zklock\/nd" of ZooKeeper lock "nd" does not let zklock delete its nodes/,
	'the error names the directory');
like($err, qr/HINT:  Grant DELETE on the lock directory/, 'and says what to do');
is(scalar(zk_ls($zk, '/zklock/nd')), 1, 'no other node was left in nd');
is(sql_result($a, "SELECT count(*) FROM zk_locks WHERE name = 'nd'"), '0', 'no slot of nd is left');

# Other locks are not concerned.
like(bg_result($s, "SELECT zk_lock_try('other')"), qr/^t$/, 'another lock is taken as usual');
is(bg_result($s, "SELECT zk_lock_release('other')"), 't', 'and released');

$kazoo->quit;
$s->quit;
done_testing();
