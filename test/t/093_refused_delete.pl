# A lock directory whose ACL refuses zklock's deletes (issue 41, point 2).
# Another tool made the directory first, with world:anyone:crwa: anyone may
# create, read and write its children, nobody may delete them.  A node
# zklock made there would stay until the cluster's ZooKeeper session ends,
# and hold the lock meanwhile.  The worker reads the directory's ACL before
# its first create there (getACL) and refuses every request, the first
# included, this session's and others', a try or an acquire, before its
# create, with a clear error (42501, naming the directory, with a hint):
# no node is ever made there.  Before the first fix the first hold's node
# was stranded, the same session's acquire waited behind it until
# lock_timeout and each try left another node; before the second, the
# first node was still stranded and only later requests were refused.
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::RealBin/../lib";
use ZklockTest;
use PostgreSQL::Test::Utils;
use Test::More;

my $zk = zk_start(1);
my $a = zklock_node('a', $zk, conf => [ "lock_timeout = '3s'" ]);

zk_create($zk, '/zklock/nd', undef, '--parents');
my $kazoo = kazoo_peer($zk);
is($kazoo->cmd('set_acl /zklock/nd world:anyone:crwa'), 'ok', "nd's directory refuses DELETE");

my $s = bg_session($a);
for my $sql ("SELECT zk_lock_acquire('nd')", "SELECT zk_lock_try('nd')", "SELECT zk_lock_acquire('nd')", "SELECT zk_lock_try_shared('nd')")
{
	is(bg_sqlstate($s, $sql), '42501', "$sql in the same session: refused before its create (42501)");
	is(sql_sqlstate($a, $sql), '42501', "$sql in another session: refused too");
}
my ($ret, $out, $err) = $a->psql('postgres', "SELECT zk_lock_try('nd')");
like($err, qr/lock directory "\/zklock\/nd" of ZooKeeper lock "nd" does not let zklock delete its nodes/,
	'the error names the directory');
like($err, qr/HINT:  Grant DELETE on the lock directory/, 'and says what to do');
unlike(slurp_file($a->logfile), qr/could not delete ZooKeeper node/, 'no delete was ever refused');
is(scalar(zk_ls($zk, '/zklock/nd')), 0, 'no node was ever made in nd');
is(sql_result($a, "SELECT count(*) FROM zk_locks WHERE name = 'nd'"), '0', 'no slot of nd is left');

# Other locks are not concerned.
like(bg_result($s, "SELECT zk_lock_try('other')"), qr/^t$/, 'another lock is taken as usual');
is(bg_result($s, "SELECT zk_lock_release('other')"), 't', 'and released');

$kazoo->quit;
$s->quit;
done_testing();
