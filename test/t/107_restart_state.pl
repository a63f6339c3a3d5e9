# After a worker restart, shared memory tells the truth from the new
# worker's first instruction (issue 44, point 1).
#  zklock.hosts is reloaded to a server that does not answer: the worker
#  restarts to reattach there, and its library reports no state at all for
#  a handle that never connects.  Before, zk_status() went on saying
#  'connected' with the old session, zk_locks 'held', and zk_lock_try and
#  zk_lock_acquire without a lock_timeout waited without bound (here until
#  the statement_timeout, 57014).  Now the restarted worker says
#  'suspended' at once (its predecessor's session is known), the hold shows
#  'suspended', both calls fail with ZK001 after zklock.connect_timeout, and
#  two thirds of the session timeout after the last proof the hold is given
#  up (lost).  With the hosts back, the worker connects again.
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::RealBin/../lib";
use ZklockTest;
use PostgreSQL::Test::Utils;
use PostgreSQL::Test::Cluster;
use Test::More;

my $zk = zk_start(1);
my $a = zklock_node('a', $zk, session_timeout => '6s', conf => ["zklock.connect_timeout = '2s'"]);

my $h = bg_session($a);
my $h_pid = $h->query_safe('SELECT pg_backend_pid()');
is($h->query_safe("SELECT zk_lock_acquire('H', '10s') > 0"), 't', 'a session holds H');
is(zk_status_of($a)->{state}, 'connected', 'connected');
my $wpid = worker_pid($a);

# A port nobody listens on.
my $dead = PostgreSQL::Test::Cluster::get_free_port();
$a->safe_psql('postgres', "ALTER SYSTEM SET zklock.hosts = '127.0.0.1:$dead'; SELECT pg_reload_conf()");
ok(wait_until(sub { my $p = worker_pid($a); $p && $p ne $wpid }, 30, 'a new worker'), 'the worker restarted');
ok(wait_until(sub { zk_status_of($a)->{state} ne 'connected' }, 5, 'not connected'),
	'the restarted worker does not say connected');
is(zk_status_of($a)->{state}, 'suspended', '... it says suspended: the session is known');
is(lock_state($a, $h_pid, 'H'), 'suspended', 'zk_locks shows the hold suspended, not held');

my $bounded = "SET statement_timeout = '20s';\n";
is(sql_sqlstate($a, $bounded . "SELECT zk_lock_try('X')"), 'ZK001', 'zk_lock_try fails with ZK001 after connect_timeout');
is(sql_sqlstate($a, $bounded . "SELECT zk_lock_acquire('Y')"), 'ZK001',
	'zk_lock_acquire without a timeout fails with ZK001 after connect_timeout');

ok(wait_until(sub { lock_state($a, $h_pid, 'H') eq 'lost' }, 20, 'H lost'),
	'the hold is given up before ZooKeeper could expire the session');

# The hosts back: connected again, with a new session.
$a->safe_psql('postgres', "ALTER SYSTEM RESET zklock.hosts; SELECT pg_reload_conf()");
ok(wait_until(sub { zk_status_of($a)->{state} eq 'connected' }, 30, 'connected again'), 'connected again');
my ($state) = bg_sqlstate($h, "SELECT zk_lock_release('H')");
is($state, 'ZK002', 'the holder is told of its loss');
is($h->query_safe("SELECT zk_lock_try('H')"), 't', 'and can take H again');
$h->quit;

done_testing();
