# One identity of a contender in every reader (issue 27, point 6): a
# zklock node belongs to the backend named by its ZooKeeper session (the
# node's ephemeralOwner) and the pid of its description, as deadlock
# detection has it.  A clone of a machine keeps the system identifier, the
# host name, the port and even a pid of the original; its worker has a
# session of its own.  Here a kazoo client, in its own session, queues in
# lock ci with a node whose description is exactly that of the holder's
# (what a clone's backend of the same pid would write): zk_lock_contenders
# shows the holder held and the clone's node waiting, zk_lock_verify
# confirms the holder's token and not the clone's.  Before, both showed as
# held and both tokens verified (the description alone made them one
# backend, whose own nodes never wait on each other).
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::RealBin/../lib";
use ZklockTest;
use Test::More;

my $zk = zk_start(1);
my $a = zklock_node('a', $zk);

my $s = bg_session($a);
my $pid = $s->query_safe('SELECT pg_backend_pid()');
my $token = $s->query_safe("SELECT zk_lock_acquire('ci')");
my $znode = held_znode($a, $pid, 'ci');
like($znode, qr{^/zklock/ci/_c_.*-lock-\d{10}$}, 'a session holds ci');
my $desc = zk_get($zk, $znode);
like($desc, qr/"pid":$pid\b/, "its node's description names its pid");

my $kz = peer_start('kazoo writer', [ '/usr/bin/python3', "$FindBin::RealBin/../peers/kazoo_writer.py" ]);
is($kz->cmd("connect $zk->{connect}"), 'ok', 'the kazoo client connects');
my $clone = $kz->cmd("create /zklock/ci/_c_11111111-1111-1111-1111-111111111111-lock- $desc");
like($clone, qr{^/zklock/ci/_c_1111.*-lock-\d{10}$}, "a node with the holder's very description queues in another session");
my $clone_czxid = $kz->cmd("czxid $clone");

is($a->safe_psql('postgres', "SELECT string_agg(state || ':' || czxid, ',' ORDER BY position) FROM zk_lock_contenders('ci')"),
	"held:$token,waiting:$clone_czxid", 'zk_lock_contenders: the holder holds, the clone\'s node waits');
is($a->safe_psql('postgres', "SELECT zk_lock_verify('ci', $token)"), 't', "zk_lock_verify confirms the holder's token");
is($a->safe_psql('postgres', "SELECT zk_lock_verify('ci', $clone_czxid)"), 'f', "... and not the clone's");
is($a->safe_psql('postgres', "SELECT state FROM zk_locks WHERE pid = $pid AND name = 'ci'"), 'held',
	'the worker keeps the hold');

is($kz->cmd("delete $clone"), 'ok', "the clone's node goes");
$kz->quit;
$s->query_safe("SELECT zk_lock_release('ci')");
$s->quit;
ok(wait_until(sub { !zk_ls($zk, '/zklock/ci') }, 30, 'ci to empty'), 'no node is left');

done_testing();
