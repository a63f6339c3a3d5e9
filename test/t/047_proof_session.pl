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
#    detail naming the session that granted P; the server log shows the
#    COMMIT as the statement that failed), and the row must not be
#    committed.  On 3dfa240 the COMMIT succeeds and the row is committed.
# zk_lock_check, "held and proven as a commit needs it", reads the hold and
# then the proof too: meanwhile K, holding Q, was stopped by gdb in the same
# place while running zk_lock_check('Q').  Let go after the replacement, it
# must answer false (on 3dfa240: true, for a lock its session no longer has).
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
my @gdbs;
END
{
	kill('CONT', $frozen) if $frozen;
	$_->{run}->kill_kill for grep { $_->{run} } @gdbs;
}

# gdb attached to backend $pid, reading its commands from a pipe, with a
# breakpoint at zkl_session_proven; the backend runs on until it gets
# there.  PostgreSQL's signals (latches, ProcSignal, cancels) go through
# unseen.  Returns undef, with the reason in $@, when gdb cannot attach.
sub gdb_arm
{
	my ($pid) = @_;
	my $g = { pid => $pid, in => '', out => '', timer => IPC::Run::timer($PostgreSQL::Test::Utils::timeout_default) };
	$g->{run} = IPC::Run::start(
		[ 'gdb', '-nx', '-q', '-iex', 'set debuginfod enabled off', '-p', $pid ],
		'<', \$g->{in}, '>', \$g->{out}, '2>&1', $g->{timer});
	push @gdbs, $g;
	$g->{in} .= "set pagination off\nset confirm off\n"
	  . "handle SIGUSR1 SIGUSR2 SIGURG SIGINT SIGTERM SIGALRM SIGPIPE SIGCHLD nostop noprint pass\n"
	  . "break zkl_session_proven\necho gdb-armed\\n\ncontinue\n";
	pump_until($g->{run}, $g->{timer}, \$g->{out}, qr/gdb-armed|ptrace: Operation not permitted|Could not attach/);
	return $g if $g->{out} =~ /gdb-armed/ && $g->{out} !~ /ptrace: Operation not permitted|Could not attach/;
	$@ = $g->{out};
	$g->{run}->kill_kill;
	$g->{run} = undef;
	return undef;
}

# Wait until the backend stopped at the breakpoint; true if it did.
sub gdb_stopped
{
	my ($g) = @_;
	pump_until($g->{run}, $g->{timer}, \$g->{out}, qr/Breakpoint 1, .*zkl_session_proven/);
	return $g->{out} =~ /Breakpoint 1, .*zkl_session_proven/;
}

# Let the backend go on, without gdb.
sub gdb_release
{
	my ($g) = @_;
	$g->{in} .= "detach\nquit\n";
	$g->{run}->finish;
	$g->{run} = undef;
	return;
}

my $zk = zk_start(1);
my $a = zklock_node('a', $zk, session_timeout => '4s', conf => ["zklock.on_lock_lost = 'error'"]);
$a->safe_psql('postgres', 'CREATE TABLE work (tag text)');
wait_until(sub { zk_status_of($a)->{state} eq 'connected' }, 30, "A's worker is connected");

my $h = bg_session($a);
$h->query_safe('\set VERBOSITY verbose');
my $h_pid = $h->query_safe('SELECT pg_backend_pid()');
is($h->query_safe("SELECT zk_lock_acquire('P', '10s') > 0"), 't', 'H holds P in session scope');
my $k = bg_session($a);
my $k_pid = $k->query_safe('SELECT pg_backend_pid()');
is($k->query_safe("SELECT zk_lock_acquire('Q', '10s') > 0"), 't', 'K holds Q in session scope');
is($k->query_safe("SELECT zk_lock_check('Q')"), 't', 'zk_lock_check(Q) is true in the session that granted Q');
my $old_session = zk_status_of($a)->{session_id};
like($old_session, qr/^0x[0-9a-f]+$/, "A's ZooKeeper session is $old_session");
my $p_node = held_znode($a, $h_pid, 'P');
ok(grep({ $_ eq zk_base($p_node) } zk_ls($zk, '/zklock/P')), "ZooKeeper has H's node $p_node");
$h->query_safe("BEGIN; INSERT INTO work VALUES ('under-old-session')");

SKIP:
{
	skip('gdb is not installed (test/install-deps.sh installs it), so no backend can be stopped mid-commit', 11)
	  if !grep { -x "$_/gdb" } split /:/, $ENV{PATH} // '';
	my $gh = gdb_arm($h_pid);
	my $gk = $gh && gdb_arm($k_pid);
	skip("this machine does not allow ptrace of our own processes: $@", 11) if !$gk;
	ok($gh && $gk, "gdb attached to H ($h_pid) and K ($k_pid) with a breakpoint at zkl_session_proven");

	# H commits, K checks Q; both stop in zkl_session_proven.
	my $log_offset = -s $a->logfile;
	$h->query_until(qr/committing\n/, "\\echo committing\nCOMMIT;\n");
	ok(gdb_stopped($gh), "H's COMMIT stopped in zkl_session_proven") or diag($gh->{out});
	# In a transaction block, so that the answer is printed before any
	# commit could report the loss.
	bg_start($k, "BEGIN; SELECT 'check=' || zk_lock_check('Q')");
	ok(gdb_stopped($gk), "K's zk_lock_check stopped in zkl_session_proven") or diag($gk->{out});

	# The session expires at ZooKeeper while the worker is frozen, and is
	# replaced once it thaws.
	my $worker = worker_pid($a);
	$frozen = $worker;
	ok(kill('STOP', $worker), "SIGSTOP to A's worker ($worker)");
	wait_until(sub { !zk_ls($zk, '/zklock/P') }, 60, 'ZooKeeper to expire the session and delete P\'s node');
	is(join(',', zk_ls($zk, '/zklock/P'), zk_ls($zk, '/zklock/Q')), '',
		'ZooKeeper expired the session: the nodes of P and Q are gone');
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

	# Both go on: the new session is proven, P and Q are not its.
	gdb_release($gh);
	gdb_release($gk);
	my ($out, $err) = bg_collect($h);
	like($err, qr/ZK002: ZooKeeper lock "P" was lost/, 'H fails with ZK002')
	  or diag("stdout: $out\nstderr: $err");
	like($err, qr/granted in ZooKeeper session \Q$old_session\E, which has ended/,
		'... whose detail names the session that granted the lock')
	  or diag("stderr: $err");
	my ($failed_stmt) = slurp_file($a->logfile, $log_offset) =~
	  /\[$h_pid\][^\n]*ERROR:  ZooKeeper lock "P" was lost.*?STATEMENT:  ([^\n]*)/s;
	is($failed_stmt // 'none', 'COMMIT;', '... and the statement that failed is the COMMIT');
	is(committed($a, 'under-old-session'), '0', 'the row is not committed');
	my ($k_out) = bg_collect($k);
	like($k_out, qr/^check=false$/m, 'zk_lock_check(Q) is false for a hold of the session that ended');
}

$h->quit;
$k->quit;
wait_until(sub { !zk_ls($zk, '/zklock/P') && !zk_ls($zk, '/zklock/Q') }, 10, 'the lock directories empty');
is(join(',', zk_ls($zk, '/zklock/P'), zk_ls($zk, '/zklock/Q')), '', 'no node is left');

done_testing();
