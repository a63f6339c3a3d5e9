# A hold is tied to the ZooKeeper session that granted it: a proof of a
# later session proves nothing about it.
#
# The commit check looks at each lock's "lost" flag and at whether the
# session is proven alive.  Were these two looks at two moments with
# nothing tying them, a session that expires and is replaced between them
# would pass: the lock read "not lost" before the expiry, and the new
# session is proven.  The test makes that interleaving happen:
#  - H holds P in session scope (zklock.session_timeout = 4s,
#    zklock.on_lock_lost = error, so no cancel interferes) and has inserted
#    a row in an open transaction.
#  - gdb stops H in zkl_session_proven, called by its COMMIT's check (on
#    3dfa240 after the lost flags were read and found clear).
#  - H's worker is frozen (SIGSTOP) until ZooKeeper has expired its session
#    (P's node is gone from ZooKeeper), then thawed: it sees the expiry,
#    marks P lost, and opens a new session (zk_status shows another
#    session_id, connected).
#  - gdb lets H go on.  Its COMMIT must fail with ZK002 ("was lost", the
#    detail naming the session that granted P), and the row must not be
#    committed.  On 3dfa240 the COMMIT succeeds and the row is committed.
# Skipped when gdb is missing or this machine does not allow ptrace.
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::RealBin/../lib";
use ZklockTest;
use Test::More;
use PostgreSQL::Test::Utils;
use IPC::Run;

# A frozen worker is always thawed, and gdb always ended, whatever way the
# test ends (this END runs before ZklockTest's, which stops the clusters).
my $frozen;
my $gdb;
END
{
	kill('CONT', $frozen) if $frozen;
	$gdb->kill_kill if $gdb;
}

my $zk = zk_start(1);
my $a = zklock_node('a', $zk, session_timeout => '4s', conf => ["zklock.on_lock_lost = 'error'"]);
$a->safe_psql('postgres', 'CREATE TABLE work (tag text)');
wait_until(sub { zk_status_of($a)->{state} eq 'connected' }, 30, "A's worker is connected");

my $h = bg_session($a);
$h->query_safe('\set VERBOSITY verbose');
my $h_pid = $h->query_safe('SELECT pg_backend_pid()');
is($h->query_safe("SELECT zk_lock_acquire('P', '10s') > 0"), 't', 'H holds P in session scope');
my $old_session = zk_status_of($a)->{session_id};
like($old_session, qr/^0x[0-9a-f]+$/, "A's ZooKeeper session is $old_session");
my $p_node = held_znode($a, $h_pid, 'P');
ok(grep({ $_ eq zk_base($p_node) } zk_ls($zk, '/zklock/P')), "ZooKeeper has H's node $p_node");
$h->query_safe("BEGIN; INSERT INTO work VALUES ('under-old-session')");

SKIP:
{
	skip('gdb is not installed (test/install-deps.sh installs it), so no backend can be stopped mid-commit', 8)
	  if !grep { -x "$_/gdb" } split /:/, $ENV{PATH} // '';

	# gdb reads its commands from a pipe: it stops H at the breakpoint and
	# waits there for the next command.  PostgreSQL's signals (latches,
	# ProcSignal, cancels) go through unseen.
	my ($gdb_in, $gdb_out) = ('', '');
	my $gdb_timer = IPC::Run::timer($PostgreSQL::Test::Utils::timeout_default);
	$gdb = IPC::Run::start(
		[ 'gdb', '-nx', '-q', '-iex', 'set debuginfod enabled off', '-p', $h_pid ],
		'<', \$gdb_in, '>', \$gdb_out, '2>&1', $gdb_timer);
	$gdb_in .= "set pagination off\nset confirm off\n"
	  . "handle SIGUSR1 SIGUSR2 SIGURG SIGINT SIGTERM SIGALRM SIGPIPE SIGCHLD nostop noprint pass\n"
	  . "break zkl_session_proven\necho gdb-armed\\n\ncontinue\n";
	pump_until($gdb, $gdb_timer, \$gdb_out, qr/gdb-armed|ptrace: Operation not permitted|Could not attach/);
	if ($gdb_out !~ /gdb-armed/ || $gdb_out =~ /ptrace: Operation not permitted|Could not attach/)
	{
		$gdb->kill_kill;
		$gdb = undef;
		$h->quit;
		skip("this machine does not allow ptrace of our own processes: $gdb_out", 8);
	}
	like($gdb_out, qr/Breakpoint 1 at/, "gdb attached to H ($h_pid) with a breakpoint at zkl_session_proven")
	  or diag($gdb_out);

	# COMMIT; H stops in its check.
	$h->query_until(qr/committing\n/, "\\echo committing\nCOMMIT;\n");
	pump_until($gdb, $gdb_timer, \$gdb_out, qr/Breakpoint 1, .*zkl_session_proven/);
	like($gdb_out, qr/Breakpoint 1, .*zkl_session_proven/, "H's COMMIT stopped in zkl_session_proven")
	  or diag($gdb_out);

	# The session expires at ZooKeeper while the worker is frozen, and is
	# replaced once it thaws.
	my $worker = worker_pid($a);
	$frozen = $worker;
	ok(kill('STOP', $worker), "SIGSTOP to A's worker ($worker)");
	wait_until(sub { !zk_ls($zk, '/zklock/P') }, 60, 'ZooKeeper to expire the session and delete P\'s node');
	is(join(',', zk_ls($zk, '/zklock/P')), '', 'ZooKeeper expired the session: P\'s node is gone');
	kill('CONT', $worker);
	$frozen = undef;
	wait_until(
		sub {
			my $s = zk_status_of($a);
			$s->{state} eq 'connected' && $s->{session_id} ne $old_session;
		},
		60, 'A\'s worker to open a new session');
	my $new_session = zk_status_of($a)->{session_id};
	isnt($new_session, $old_session, "A's worker is connected in a new session $new_session");
	wait_until(sub { lock_state($a, $h_pid, 'P') eq 'lost' }, 10, 'P turns lost');

	# H goes on with its check: the new session is proven, P is not its.
	$gdb_in .= "detach\nquit\n";
	$gdb->finish;
	$gdb = undef;
	my ($out, $err) = bg_collect($h);
	like($err, qr/ZK002: ZooKeeper lock "P" was lost/, 'H\'s COMMIT fails with ZK002')
	  or diag("stdout: $out\nstderr: $err");
	like($err, qr/granted in ZooKeeper session \Q$old_session\E, which has ended/,
		'... whose detail names the session that granted the lock')
	  or diag("stderr: $err");
	is(committed($a, 'under-old-session'), '0', 'the row is not committed');
}

$h->quit;
wait_until(sub { !zk_ls($zk, '/zklock/P') }, 10, 'the lock directory empties');
is(join(',', zk_ls($zk, '/zklock/P')), '', 'no node is left');

done_testing();
