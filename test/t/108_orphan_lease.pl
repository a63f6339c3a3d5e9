# A worker restart between a semaphore lease's create and its answer leaves
# no orphan lease (issue 44, point 3).
#  b1 holds semaphore s (1 permit).  b2 asks for it: it takes the
#  semaphore's mutex and creates its lease; the relay (ZklockTest::Wire)
#  lets the create reach ZooKeeper, drops its answer and closes the
#  connection, and refuses new ones.  The worker is restarted (SIGTERM: the
#  next one reattaches to the same session), then b2 is cancelled, and the
#  relay lets the worker in again.  Before, the adopted slot deleted only
#  its mutex node: b2's lease stayed, owned by the cluster's live session,
#  and once b1 released, zk_semaphore_try('s', 1) was false with no holder
#  anywhere.  Now a slot given up after a restart looks for a lease with
#  its uuid (sync, then a listing of leases/) and deletes it: no lease is
#  left and the permit is free.
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::RealBin/../lib";
use ZklockTest;
use ZklockTest::Wire;
use PostgreSQL::Test::Utils;
use Test::More;

my $zk = zk_start(1);
my $w = zk_wire($zk);
# A long timeout: the session must live, and not be given up, through the
# restart (doc/failures.md).
my $a = zklock_node('a', $zk, session_timeout => '30s', hosts => $w->{connect});

my $b1 = bg_session($a);
is($b1->query_safe("SELECT zk_semaphore_acquire('s', 1, '10s') > 0"), 't', 'b1 holds s');
is(scalar(zk_ls($zk, '/zklock/s/leases')), 1, 'one lease: b1\'s');

# b2's lease create reaches ZooKeeper; its answer does not reach the worker.
$w->refuse;
$w->lose_answer([ $ZK_OP{create2}, $ZK_OP{create} ], qr{/zklock/s/leases/});
my $b2 = bg_session($a);
my $b2_pid = $b2->query_safe('SELECT pg_backend_pid()');
bg_start($b2, "SELECT 'granted', zk_semaphore_acquire('s', 1, '60s') > 0");
ok(wait_until(sub { defined $w->fired }, 20, 'the lease create passed'), 'b2\'s lease create reached ZooKeeper');
ok(wait_until(sub { zk_ls($zk, '/zklock/s/leases') == 2 }, 10, 'two leases'), 'ZooKeeper has b2\'s lease');

# The worker restarts meanwhile; then b2 is cancelled.
my $wpid = worker_pid($a);
is($a->safe_psql('postgres', "SELECT pg_terminate_backend($wpid)"), 't', 'the worker is terminated');
ok(wait_until(sub { my $p = worker_pid($a); $p && $p ne $wpid }, 30, 'a new worker'), 'a new worker runs');
is($a->safe_psql('postgres', "SELECT pg_cancel_backend($b2_pid)"), 't', 'b2 is cancelled');
my ($out, $err) = bg_collect($b2);
like($err, qr/canceling statement|ZK0|55P03/, 'b2\'s acquire ended') or diag("out: $out\nerr: $err");

$w->admit;
ok(wait_until(sub { zk_status_of($a)->{state} eq 'connected' }, 30, 'connected'), 'the worker is connected again');
ok(wait_until(sub { zk_ls($zk, '/zklock/s/leases') == 1 }, 15, 'b2\'s lease gone'), 'b2\'s lease is deleted')
  or diag('leases: ' . join(', ', zk_ls($zk, '/zklock/s/leases')));
ok(wait_until(sub { !zk_ls($zk, '/zklock/s/locks') }, 15, 'no mutex node'), 'b2\'s mutex node is deleted');

is($b1->query_safe("SELECT zk_semaphore_release('s')"), 't', 'b1 releases s');
ok(wait_until(sub { !zk_ls($zk, '/zklock/s/leases') }, 15, 'no lease'), 'no lease is left');
is($a->safe_psql('postgres', "SELECT zk_semaphore_try('s', 1)"), 't', 'the permit is free');
is($a->safe_psql('postgres', 'SELECT count(*) FROM zk_locks'), '0', 'zk_locks is empty');

$b1->quit;
$b2->quit;
done_testing();
