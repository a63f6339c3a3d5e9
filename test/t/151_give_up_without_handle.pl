# A session is given up on time even when the worker has no handle to it.
#
# Cluster A holds a lock in a session of 6 s.  zklock.hosts is reloaded
# onto a list that passes the setting's check but does not resolve
# ("[::1]x:2181": rejected by the resolver without a query): the worker
# restarts for the new servers, as for any move, and its client library
# cannot make a handle at all.  The predecessor's proof still ages on the
# one clock of every process, and at two thirds of the timeout the session
# must be given up, with every hold declared lost, although no handle
# exists: ZooKeeper may expire the session from the timeout on and give
# the lock to another client.  Before, the check stood down whenever no
# handle was open, so a worker that could not make one kept its holders
# believing in their locks past the session's end.  Checked: the log says
# the session was given up, an early loss is counted, the backend's lock
# shows as lost, and a second cluster on the real servers takes it
# once ZooKeeper has expired the session.
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::RealBin/../lib";
use ZklockTest;
use Test::More;
use PostgreSQL::Test::Utils;

my $zk = zk_start(1);
my $a = zklock_node('a', $zk, session_timeout => '6s');
my $b = zklock_node('b', $zk);

wait_until(sub { zk_status_of($a)->{state} eq 'connected' }, 30, 'A connected');
is(zk_status_of($a)->{negotiated_timeout}, '6000', 'A negotiated 6 s');

my $s = bg_session($a);
my $s_pid = $s->query_safe('SELECT pg_backend_pid()');
is($s->query_safe("SELECT zk_lock_acquire('orphaned', '10s') > 0"), 't', 'A holds orphaned');

my $log_from = -s $a->logfile;
my $unresolvable = '[::1]x:2181';
$a->append_conf('postgresql.conf', "zklock.hosts = '$unresolvable'\n");
$a->reload;

ok( wait_until(
		sub { slurp_file($a->logfile, $log_from) =~ /giving up ZooKeeper session/ }, 30,
		'A to give its session up'),
	'the session is given up although the worker has no handle');
my $log = slurp_file($a->logfile, $log_from);
like($log, qr/could not start a ZooKeeper session/, 'the restarted worker could make no handle');
ok( wait_until(
		sub { $a->safe_psql('postgres', 'SELECT early_losses FROM zk_status()') >= 1 }, 10,
		'the early loss to be counted'),
	'an early loss is counted');
is($a->safe_psql('postgres', "SELECT string_agg(state, ',') FROM zk_locks WHERE pid = $s_pid"),
	'lost', 'the backend\'s lock shows as lost');

# ZooKeeper expires the session (nothing reaches it any more): B gets the lock.
is($b->safe_psql('postgres', "SELECT zk_lock_acquire('orphaned', '30s') > 0"), 't',
	'B takes the lock once ZooKeeper has expired the session');

$s->quit;
done_testing();
