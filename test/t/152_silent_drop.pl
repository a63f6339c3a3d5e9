# A connection the client library drops without a word is reattached on
# the same session, and nothing held is lost.
#
# When a send fails inside a request's call (the server reset the
# connection during the worker's pass), the single-threaded library closes
# its socket and says nothing: no session event, no completion.  Cluster A
# runs with test/tools/send_fault.c preloaded, which fails the worker's
# next send to ZooKeeper on demand, as a reset does (a session of 30 s, so
# that a second drop comes within a third of it).  A holds "held" in a
# backend, made under zklock.auth alice:one; zklock.auth is then reloaded
# to bob:two, so the session has two credentials and "held"'s directory
# answers only to the first.  The fault is armed and another backend
# acquires "second", whose create (or the heartbeat before it) is the send
# that fails.  Checked:
#  - the log says the connection was dropped and the worker reattaches to
#    the same session; the fault was used;
#  - A is connected again with the same session id, nothing was lost
#    (lost and early_losses stay 0), and "held" is still held by its
#    backend (zk_lock_check, zk_locks, the same node in ZooKeeper);
#  - "second" is granted, with exactly one node in its directory (the
#    lost create was not sent twice);
#  - cluster B cannot take "held";
#  - a second drop right after the reconnection (its reattachment waits a
#    while before it connects): an acquire made across it is granted (the
#    requests of the passes between wait in the new handle's queue; they
#    are not refused for want of a handle), and the session is the same;
#  - the release of "held" deletes its node: the reattached handle was
#    given alice:one again, not only the current bob:two (without it the
#    delete is refused and the node stays, stranded);
#  - the same for "kept", made under alice:one too and released after the
#    worker alone was terminated: the next worker, which reattaches to
#    the session, finds both credentials in shared memory.
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::RealBin/../lib";
use ZklockTest;
use Test::More;
use PostgreSQL::Test::Utils;
use File::Spec;

my $zk = zk_start(1);
# Absolute: the server's processes run in their data directories.
my $dir = File::Spec->rel2abs(PostgreSQL::Test::Utils::tempdir('send_fault'));
my $shim = "$dir/send_fault.so";
my $src = "$FindBin::RealBin/../tools/send_fault.c";
system('cc', '-shared', '-fPIC', '-O2', '-Wall', '-o', $shim, $src, '-ldl') == 0
  or BAIL_OUT("could not build $src");
my $armed = "$dir/drop-now";

my $a;
{
	local $ENV{LD_PRELOAD} = $shim;
	local $ENV{ZKL_SEND_FAULT_FILE} = $armed;
	local $ENV{ZKL_SEND_FAULT_PORT} = $zk->{ports}[0];
	$a = zklock_node('a', $zk, root => '/sd', session_timeout => '30s',
		conf => "zklock.auth = 'alice:one'");
}
my $b = zklock_node('b', $zk, root => '/sd', conf => "zklock.auth = 'alice:one'");

wait_until(sub { zk_status_of($a)->{state} eq 'connected' }, 30, 'A connected');
my $before = zk_status_of($a);

my $s = bg_session($a);
my $s_pid = $s->query_safe('SELECT pg_backend_pid()');
is($s->query_safe("SELECT zk_lock_acquire('held', '10s') > 0"), 't', 'A holds held');
my $node = held_znode($a, $s_pid, 'held');
ok($node ne '' && defined zk_stat($zk, $node), "held's node is in ZooKeeper ($node)");
is($s->query_safe("SELECT zk_lock_acquire('kept', '10s') > 0"), 't', 'A holds kept');
my $kept = held_znode($a, $s_pid, 'kept');

# A second credential for the session; new nodes are made under both.
$a->append_conf('postgresql.conf', "zklock.auth = 'bob:two'\n");
$a->reload;
wait_until(sub { $a->safe_psql('postgres', 'SHOW zklock.auth') eq 'bob:two' }, 10, 'the reload');
is($a->safe_psql('postgres', "SELECT zk_lock_try('warm') AND zk_lock_release('warm')"), 't',
	'A locks under the reloaded credentials');

my $log_from = -s $a->logfile;
open(my $fh, '>', $armed) or die "could not arm the fault: $!";
close($fh);
my $s2 = bg_session($a);
is($s2->query_safe("SELECT zk_lock_acquire('second', '20s') > 0"), 't',
	'an acquire made while the connection drops is granted');
ok(!-e $armed, 'the fault was used: a send to ZooKeeper failed');
is(zk_stat($zk, '/sd/second')->{numChildren}, '1',
	"second's directory has one node: the lost create was not made twice");
is($s2->query_safe("SELECT zk_lock_release('second')"), 't', 'second is released');
$s2->quit;

my $id = $before->{session_id};
ok( wait_until(
		sub { slurp_file($a->logfile, $log_from) =~ /dropped the connection to .* when a send failed; reattaching to session \Q$id\E/ },
		20, 'the drop to be logged'),
	'the log says the connection was dropped and the same session is reattached');
ok(wait_until(sub { zk_status_of($a)->{state} eq 'connected' }, 30, 'A connected again'),
	'A is connected again');
my $after = zk_status_of($a);
is($after->{session_id}, $before->{session_id}, '... on the same session');
is($after->{lost} . '/' . $after->{early_losses}, '0/0', 'nothing was lost');
is($s->query_safe("SELECT zk_lock_check('held')"), 't', 'held is still held (zk_lock_check)');
is($a->safe_psql('postgres', "SELECT state FROM zk_locks WHERE pid = $s_pid AND name = 'held'"),
	'held', '... and zk_locks says so');
is(held_znode($a, $s_pid, 'held'), $node, '... by the same node');
ok(defined zk_stat($zk, $node), '... which is still in ZooKeeper');
is($b->safe_psql('postgres', "SELECT zk_lock_try('held')"), 'f', 'B cannot take held');

# A second drop, soon after the first: its reattachment waits.
$log_from = -s $a->logfile;
open($fh, '>', $armed) or die "could not arm the fault: $!";
close($fh);
my $s3 = bg_session($a);
$s3->query_safe('\set VERBOSITY verbose');
my ($third, $third_failed) = $s3->query("SELECT zk_lock_acquire('third', '20s') > 0");
is($third_failed ? sqlstate_of($s3->{stderr}) : $third, 't',
	'an acquire made across a second, quick drop is granted')
  or diag($s3->{stderr});
ok(!-e $armed, '... the second fault was used');
ok( wait_until(
		sub { slurp_file($a->logfile, $log_from) =~ /dropped the connection to .* reattaching to session \Q$id\E/ },
		20, 'the second drop to be logged'),
	'the second drop is logged, on the same session');
unlike(slurp_file($a->logfile, $log_from), qr/refused a request/,
	'no request was refused for want of a handle');
ok(wait_until(sub { zk_status_of($a)->{state} eq 'connected' }, 30, 'A connected again'),
	'A is connected again after the second drop');
is(zk_status_of($a)->{session_id}, $before->{session_id}, '... on the same session');
is($s3->query_safe("SELECT zk_lock_release('third')"), 't', 'third is released');
$s3->quit;

# The release needs DELETE on held's directory, which only alice:one has.
is($s->query_safe("SELECT zk_lock_release('held')"), 't', 'A releases held');
ok(wait_until(sub { !defined zk_stat($zk, $node) }, 15, "held's node to go"),
	"held's node is deleted: the reattached handle has the session's first credential too")
  or diag($a->safe_psql('postgres', 'SELECT name, state, znode FROM zk_locks'));
is($b->safe_psql('postgres', "SELECT zk_lock_try('held') AND zk_lock_release('held')"), 't',
	'B takes held after the release');

# The worker alone is terminated: the next one reattaches to the session.
my $old_worker = worker_pid($a);
$a->safe_psql('postgres', "SELECT pg_terminate_backend($old_worker)");
ok( wait_until(
		sub {
			my $w = worker_pid($a);
			$w && $w != $old_worker && zk_status_of($a)->{state} eq 'connected';
		},
		30, 'the next worker to connect'),
	'the next worker is connected');
is(zk_status_of($a)->{session_id}, $before->{session_id}, '... on the same session');
is($s->query_safe("SELECT zk_lock_release('kept')"), 't', 'A releases kept');
ok(wait_until(sub { !defined zk_stat($zk, $kept) }, 15, "kept's node to go"),
	"kept's node is deleted: the next worker gave the session's first credential too")
  or diag($a->safe_psql('postgres', 'SELECT name, state, znode FROM zk_locks'));

$s->quit;
done_testing();
