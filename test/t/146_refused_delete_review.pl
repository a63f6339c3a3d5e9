# The refused delete, a reviewer's open items (issue 41, point 2).
# (1) A release in a lock directory whose DELETE only an entry zklock cannot
#     evaluate grants (ip:), made while ZooKeeper is down: the release
#     waits for the session to come back and for the delete's answer, and
#     answers false with a WARNING when it is refused (the node stays,
#     "stranded").  Before the fix it answered true at once, and the node
#     stayed.
# (2) A change of zklock.auth against the verdicts read from directories'
#     ACLs: a directory granting DELETE only to carol's digest is refused
#     (42501) while zklock.auth is alice's; after a reload to carol's
#     credentials the worker reads its ACL again and a try is granted and
#     released, its node deleted.  Before the fix the refusal read for alice
#     was kept for five minutes and carol's try was refused too.  And
#     before the fix the worker crashed (SIGSEGV) on reading the ACL of an
#     existing directory with zklock.auth set: the SHA-1 of its digest id
#     registers with CurrentResourceOwner, which the worker has not.
# (3) Rows of doc/interop.md's table of ACLs: a directory without CREATE,
#     one without READ nor ADMIN, one of another identity's digest only:
#     each request fails with ZK000 naming ZNOAUTH, and nothing is made.
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::RealBin/../lib";
use ZklockTest;
use PostgreSQL::Test::Utils;
use Test::More;
use Digest::SHA qw(sha1_base64);

my $zk = zk_start(1);
# The directories first, with open parents, before zklock makes its root.
zk_create($zk, '/zklock/u', undef, '--parents');
zk_create($zk, '/zklock/d', undef, '--parents');
my $kazoo = kazoo_peer($zk);
is($kazoo->cmd('set_acl /zklock/u world:anyone:crwa,ip:10.9.9.9:crwda'), 'ok',
	"u's directory grants DELETE to one ip address only");
my $carol = 'digest:carol:' . sha1_base64('carol:pw') . '=';
is($kazoo->cmd("set_acl /zklock/d world:anyone:crwa,$carol:crwda"), 'ok',
	"d's directory grants DELETE to carol only");
zk_create($zk, "/zklock/$_") for qw(nc nra bob);
is($kazoo->cmd('set_acl /zklock/nc world:anyone:rwda'), 'ok', "nc's directory grants no CREATE");
is($kazoo->cmd('set_acl /zklock/nra world:anyone:cdw'), 'ok', "nra's directory grants neither READ nor ADMIN");
my $bob = 'digest:bob:' . sha1_base64('bob:pw') . '=';
is($kazoo->cmd("set_acl /zklock/bob $bob:cdrwa"), 'ok', "bob's directory grants everything to bob only");
$kazoo->quit;

my $a = zklock_node('a', $zk, session_timeout => '30s',
	conf => [ "lock_timeout = '3s'", "zklock.auth = 'alice:secret'" ]);
expect_in_log($a, qr/WARNING:  ZooKeeper lock "u" was given up, but ZooKeeper refused the delete of its node/, 1);
expect_in_log($a, qr/WARNING:  could not delete ZooKeeper node "\/zklock\/u\//, 1);

# (1) The release while ZooKeeper is down.
my $s = bg_session($a);
$s->query_safe("SET statement_timeout = '60s'");
like(bg_result($s, "SELECT zk_lock_acquire('u')"), qr/^\d+$/, '(1) the acquire in u is granted');
my $session = zk_status_of($a)->{session_id};
zk_stop_one($zk, 1);
ok(wait_until(sub { zk_status_of($a)->{state} eq 'suspended' }, 20, 'a suspended'), '(1) the session is suspended');
bg_start($s, "SET client_min_messages = error; SELECT 'released:' || zk_lock_release('u')");
sleep 2;
zk_start_one($zk, 1);
my ($out, $err) = bg_collect($s);
my ($released) = $out =~ /released:(\w)/;
is($released, 'f', '(1) the release made while ZooKeeper was down answers false: the delete was refused')
  or diag("$out\n$err");
is(zk_status_of($a)->{session_id}, $session, '(1) ... in the session that made the node');
ok(wait_until(sub { slurp_file($a->logfile) =~ /WARNING:  ZooKeeper lock "u" was given up, but ZooKeeper refused/ }, 10, 'warning'),
	'(1) ... with a WARNING');
is(sql_result($a, "SELECT string_agg(state, ',') FROM zk_locks WHERE name = 'u'"), 'stranded',
	'(1) zk_locks shows the node stranded');
$s->query_safe('RESET client_min_messages');

# (2) zklock.auth changed: the verdicts read for the former identity go.
is(bg_sqlstate($s, "SELECT zk_lock_try('d')"), '42501', '(2) d is refused to alice (42501)');
$a->append_conf('postgresql.conf', "zklock.auth = 'carol:pw'\n");
$a->reload;
ok(wait_until(sub { sql_result($a, 'SHOW zklock.auth') eq 'carol:pw' }, 30, 'reload'), '(2) zklock.auth reloaded');
sleep 1;
is(bg_result($s, "SELECT zk_lock_try('d')"), 't', "(2) after the reload to carol's credentials, a try in d is granted");
is(bg_result($s, "SELECT zk_lock_release('d')"), 't', '(2) and released');
ok(wait_until(sub { scalar(zk_ls($zk, '/zklock/d')) == 0 }, 10, 'd empty'), '(2) its node is deleted');

# (3) Directories that grant zklock's identity too little.
for my $dir (qw(nc nra bob))
{
	for my $sql ("SELECT zk_lock_try('$dir')", "SELECT zk_lock_acquire('$dir')")
	{
		is(sql_sqlstate($a, $sql), 'ZK000', "(3) $sql: ZK000");
		my ($ret, $o, $e) = $a->psql('postgres', $sql);
		like($e, qr/ZooKeeper refused the request for lock "$dir": not authenticated/, "(3) ... naming ZNOAUTH");
	}
	is(zk_stat($zk, "/zklock/$dir")->{numChildren}, 0, "(3) nothing was made in $dir");
}
is(sql_result($a, "SELECT count(*) FROM zk_locks WHERE name IN ('nc', 'nra', 'bob')"), '0', '(3) no slot is left');

$s->quit;
done_testing();
