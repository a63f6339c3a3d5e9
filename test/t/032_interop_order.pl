# Order and identity of lock nodes, seen from ZooKeeper (zkutil) and from
# the other clients, on one ZooKeeper server and cluster A:
#  (1) Lock sets are taken in bytewise order of the names, not in the
#      database's collation: in a database with the ICU collation en-US
#      (where '_x' < 'a' < 'B' < 'é' < 'f' < 'Z'), zk_lock_acquire(ARRAY['f',
#      'é', 'a', 'B', '_x', 'Z']) creates its nodes in the order of the
#      names under COLLATE "C" ('B' < 'Z' < '_x' < 'a' < 'f' < 'é'): the
#      returned tokens (node czxids) rise in that order.  And with 'f' held
#      by another session, the set holds exactly the names before 'f' in
#      byte order and waits for 'f', with no request for 'é' yet.
#  (2) Fencing tokens: each zklock token (exclusive, shared, and each of a
#      set) equals the czxid of its node as zkutil reads it; and zklock,
#      Curator's InterProcessMutex and kazoo's Lock, taking the same lock one
#      after another, get rising tokens (czxids of their nodes): zklock <
#      Curator < kazoo < zklock.
#  (3) The lock directory is a container node: ZooKeeper removes it once it
#      is empty, zklock sending only the delete of its node (a persistent
#      node emptied the same way stays, and so does the root /zklock), and
#      zklock creates it again for the next acquire.  (zkutil's stat cannot
#      tell a container: ZooKeeper reports ephemeralOwner 0 for them.)
#      ZooKeeper looks for empty containers every
#      znode.container.checkIntervalMs (default 60 s): this test starts its
#      server with 1 s (zkserver.sh's ZK_SYSTEM_PROPERTIES).
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::RealBin/../lib";
use ZklockTest;
use Test::More;
use PostgreSQL::Test::Utils;
use Time::HiRes qw(time sleep);

# czxid of the only child of $dir, as zkutil reads it.
sub child_czxid
{
	my ($zk, $dir) = @_;
	my @kids = zk_ls($zk, $dir);
	return "(children: @kids)" unless @kids == 1;
	return zk_stat($zk, "$dir/$kids[0]")->{czxid};
}

# ZooKeeper with a 1 s container check interval.
my $zk = do { local $ENV{ZK_SYSTEM_PROPERTIES} = 'znode.container.checkIntervalMs=1000'; zk_start(1) };
my $a = zklock_node('a', $zk);

###########################################################################
# (1) Bytewise order of lock sets.
###########################################################################

my ($ret, $out, $err) = $a->psql('postgres',
	"CREATE DATABASE icu TEMPLATE template0 ENCODING 'UTF8' LOCALE 'C.UTF-8' LOCALE_PROVIDER icu ICU_LOCALE 'en-US'");
SKIP:
{
	skip "no ICU database: $err", 9 if $ret != 0;
	$a->safe_psql('icu', 'CREATE EXTENSION zklock');
	my $names = "ARRAY['f', chr(233), 'a', 'B', '_x', 'Z']";
	my $c_order = $a->safe_psql('icu',
		"SELECT string_agg(i::text, ',' ORDER BY n COLLATE \"C\") FROM unnest($names) WITH ORDINALITY AS u(n, i)");
	my $db_order = $a->safe_psql('icu',
		"SELECT string_agg(i::text, ',' ORDER BY n) FROM unnest($names) WITH ORDINALITY AS u(n, i)");
	is($c_order, '4,6,5,3,1,2', '(1) byte order of the names: B, Z, _x, a, f, é');
	isnt($db_order, $c_order, "(1) the database's collation orders them otherwise ($db_order): the test is meaningful");

	my $s = bg_session($a, dbname => 'icu');
	my $pid = $s->query_safe('SELECT pg_backend_pid()');
	my $tok_order = $s->query_safe(
		"WITH t AS (SELECT zk_lock_acquire($names, '10s') AS toks) "
		  . "SELECT string_agg(i::text, ',' ORDER BY tok) FROM t, unnest(t.toks) WITH ORDINALITY AS u(tok, i)");
	is($tok_order, $c_order, '(1) the set was taken in byte order: its tokens (czxids) rise in that order');
	my @rows = split /\n/, $a->safe_psql('icu', "SELECT znode || ' ' || fencing_token FROM zk_locks WHERE pid = $pid ORDER BY fencing_token");
	is(scalar(@rows), 6, '(1) six holds');
	my @bad = grep { my ($p, $t) = split / /; ((zk_stat($zk, $p) // {})->{czxid} // '') ne $t } @rows;
	is("@bad", '', '(2) each token of the set is the czxid of its node (zkutil)');
	$s->query_safe('SELECT zk_lock_release_all()');

	# The same seen by what is held while 'f' is busy.
	my $h = bg_session($a, dbname => 'icu');
	is($h->query_safe("SELECT zk_lock_acquire('f', '5s') > 0"), 't', '(1) another session holds f');
	bg_start($s, "SELECT 'set', zk_lock_acquire($names, '30s') IS NOT NULL");
	wait_until(
		sub {
			$a->safe_psql('icu', "SELECT count(*) FROM zk_locks WHERE pid = $pid AND name = 'f' AND state = 'waiting'") eq '1';
		},
		15,
		'the set waits for f');
	is($a->safe_psql('icu',
			"SELECT string_agg(name || ':' || state, ' ' ORDER BY name COLLATE \"C\") FROM zk_locks WHERE pid = $pid"),
		'B:held Z:held _x:held a:held f:waiting',
		'(1) waiting for f, the set holds B, Z, _x and a, and has not asked for é yet');
	is(zk_nchildren($zk, '/zklock/%C3%A9'), 0, '(1) ... no node under /zklock/%C3%A9');
	$h->query_safe("SELECT zk_lock_release('f')");
	my ($sout, $serr) = bg_collect($s);
	like($sout, qr/^set\|t$/m, '(1) the set completes once f is free') or diag($serr);
	$s->query_safe('SELECT zk_lock_release_all()');
	$_->quit for ($s, $h);
}

###########################################################################
# (2) Fencing tokens across clients.
###########################################################################

my $dir = '/zklock/tok';
my $s = bg_session($a);
my $pid = $s->query_safe('SELECT pg_backend_pid()');
my $t1 = $s->query_safe("SELECT zk_lock_acquire('tok', '10s')");
my $z1 = $a->safe_psql('postgres', "SELECT znode FROM zk_locks WHERE pid = $pid AND name = 'tok'");
is($t1, zk_stat($zk, $z1)->{czxid}, "(2) zklock's token ($t1) is the czxid of its node");
$s->query_safe("SELECT zk_lock_release('tok')");
zk_wait_empty($zk, $dir, 'after zklock');

my $curator = curator_peer($zk);
is($curator->cmd("mutex_try $dir"), 'true', '(2) Curator takes the lock');
my $c2 = child_czxid($zk, $dir);
is($curator->cmd("mutex_release $dir"), 'ok', '(2) Curator releases it');
$curator->quit;
zk_wait_empty($zk, $dir, 'after Curator');

my $kazoo = kazoo_peer($zk);
is($kazoo->cmd("lock_try $dir"), 'true', '(2) kazoo takes the lock');
my $k3 = child_czxid($zk, $dir);
is($kazoo->cmd("lock_release $dir"), 'ok', '(2) kazoo releases it');
$kazoo->quit;
zk_wait_empty($zk, $dir, 'after kazoo');

my $t4 = $s->query_safe("SELECT zk_lock_acquire('tok', '10s')");
my $z4 = $a->safe_psql('postgres', "SELECT znode FROM zk_locks WHERE pid = $pid AND name = 'tok'");
is($t4, zk_stat($zk, $z4)->{czxid}, "(2) zklock's next token ($t4) is the czxid of its node");
ok($c2 =~ /^\d+$/ && $k3 =~ /^\d+$/ && $t1 < $c2 && $c2 < $k3 && $k3 < $t4,
	"(2) tokens rise across clients: zklock $t1 < Curator $c2 < kazoo $k3 < zklock $t4");
my $t5 = $s->query_safe("SELECT zk_lock_acquire_shared('tok', '10s')");
my $z5 = $a->safe_psql('postgres', "SELECT znode FROM zk_locks WHERE pid = $pid AND name = 'tok' AND mode = 'shared'");
is($t5, zk_stat($zk, $z5)->{czxid}, "(2) a shared hold's token ($t5) is the czxid of its node");
cmp_ok($t5, '>', $t4, '(2) ... later than the exclusive one');
$s->query_safe('SELECT zk_lock_release_all()');
zk_wait_empty($zk, $dir, 'at the end of (2)');

###########################################################################
# (3) The lock directory is a container.
###########################################################################

# A control: a persistent node that had a child and is empty again is not
# removed.
zk_create($zk, '/ctl', undef);
zk_create($zk, '/ctl/child', undef);
zk_delete($zk, '/ctl/child');
is($s->query_safe("SELECT zk_lock_acquire('cont', '10s') > 0"), 't', '(3) A holds cont');
ok(defined zk_stat($zk, '/zklock/cont'), '(3) its directory /zklock/cont exists');
my $req0 = zk_status_of($a)->{zk_requests};
$s->query_safe("SELECT zk_lock_release('cont')");
ok(wait_until(sub { !defined zk_stat($zk, '/zklock/cont') }, 30, 'the empty container removed'),
	'(3) once empty, ZooKeeper removes the directory: it is a container node');
is(zk_status_of($a)->{zk_requests} - $req0, 1, '(3) ... zklock itself sent one request, the delete of its node');
sleep 2.5;    # more than two container checks
ok(defined zk_stat($zk, '/ctl'), '(3) ... whereas an empty persistent node stays');
ok(defined zk_stat($zk, '/zklock'), '(3) ... as does the root /zklock');
is($s->query_safe("SELECT zk_lock_acquire('cont', '10s') > 0"), 't', '(3) A takes cont again');
is(zk_nchildren($zk, '/zklock/cont'), 1, '(3) ... in a new directory');
$s->query_safe("SELECT zk_lock_release('cont')");
$s->quit;

is($a->safe_psql('postgres', 'SELECT count(*) FROM zk_locks'), '0', 'A holds nothing at the end');

done_testing();
