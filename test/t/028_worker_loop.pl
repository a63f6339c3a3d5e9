# The worker's loop: it sleeps until something happens, brings the ZooKeeper
# client library's messages to the server log without flooding it, reaps the
# slots of backends that vanished without giving them back, and a commit
# waiting for fresh proof of the session is woken by the answer.
#  (1) No fixed tick: with zklock.session_timeout = 30s (a heartbeat every
#      5 s) and nothing to do, the worker makes fewer than 20 voluntary
#      context switches in 6 s (/proc/<pid>/status).  A 100 ms tick would
#      make 60 or more.  The worker has one thread: the client library
#      runs in its loop (src/worker/zk_io.c), with no thread of its own.
#  (2) ZooKeeper stopped for about 20 s while the cluster runs: the library's
#      complaints reach the log as "ZooKeeper client: ..." lines, at
#      least one and at most 10 in the outage, although the library retries
#      the connection many times; and the worker keeps to the library's
#      pace between attempts: it uses less than a tenth of a core over the
#      outage (a loop that each logged attempt woke at once would use all
#      of one).  Afterwards the worker is connected again.
#  (3) The reaper: a backend holding 'reap-me' loses its local lock table
#      (gdb sets backend/locks.c's zkl_locks to NULL, as only a bug could) and then
#      ends normally: its exit hook gives nothing back, and the slot stays
#      'held' for a pid that no longer exists.  Within 30 s (the worker looks
#      at most every 10 s, at a periodic heartbeat: every second with
#      zklock.session_timeout = 6s) the worker gives the slot up: no zk_locks
#      row for the pid, slots_used 0, no node left in ZooKeeper, another
#      cluster takes the lock, and the log says "gave up 1 lock slots
#      ...".  Skipped when this machine does not allow ptrace.
#  (4) A commit that must wait for fresh proof is woken by the answer: with
#      the worker frozen (SIGSTOP, shorter than the session timeout) until
#      the last proof has aged, a backend holding a transaction lock
#      commits; pg_stat_activity shows it waiting (Extension/ZklockCommit;
#      Extension/Extension before PostgreSQL 17), it
#      makes fewer than 20 voluntary context switches in 2 s of the wait
#      (polling every 10 ms would make about 200), and after SIGCONT the
#      commit succeeds and logs "commit waited N ms".
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::RealBin/../lib";
use ZklockTest;
use Test::More;
use PostgreSQL::Test::Utils;
use IPC::Run;
use List::Util qw(max);
use POSIX ();
use Time::HiRes qw(time sleep);

# The counts of context switches are bounded per second of the window as
# measured (a loaded machine may stretch a sleep): a rate, not a time.
my $IDLE_WINDOW_S = 6;
my $IDLE_MAX_SWITCHES = 20;	# in $IDLE_WINDOW_S, so about 3 a second
my $OUTAGE_S = 20;
my $OUTAGE_MAX_LINES = 10;
my $OUTAGE_MAX_CPU = 0.1;
my $REAP_WITHIN_S = 30;
my $COMMIT_SAMPLE_S = 2;
my $COMMIT_MAX_SWITCHES = 20;	# in $COMMIT_SAMPLE_S: 10 a second

# A frozen worker is always thawed, whatever way the test ends (this END
# runs before ZklockTest's, which stops the clusters).
my $frozen;
END { kill('CONT', $frozen) if $frozen; }

# Voluntary context switches of task $pid (for a process: its main thread).
sub vcsw
{
	my ($pid) = @_;
	open(my $fh, '<', "/proc/$pid/status") or return undef;
	my $status = do { local $/; <$fh> };
	close $fh;
	return $status =~ /^voluntary_ctxt_switches:\s+(\d+)/m ? $1 : undef;
}

# CPU seconds (user and system) used by process $pid so far; undef if unreadable.
sub cpu_seconds
{
	my ($pid) = @_;
	open(my $fh, '<', "/proc/$pid/stat") or return undef;
	my $stat = do { local $/; <$fh> };
	close $fh;
	my @f = split ' ', substr($stat, rindex($stat, ')') + 2);
	return ($f[11] + $f[12]) / POSIX::sysconf(POSIX::_SC_CLK_TCK());
}

# The tasks of process $pid other than its main thread.
sub other_tasks
{
	my ($pid) = @_;
	return grep { $_ != $pid } map { m{/(\d+)$} ? $1 : () } glob("/proc/$pid/task/*");
}

sub state_of { $_[0]->safe_psql('postgres', 'SELECT state FROM zk_status()') }

my $zk = zk_start(1);
my $a = zklock_node('a', $zk, session_timeout => '30s');
is(zk_status_of($a)->{negotiated_timeout}, '30000', 'A negotiated a 30 s session timeout (a heartbeat every 5 s)');

# ---------------------------------------------------------------------------
# (1) An idle, connected worker sleeps.
# ---------------------------------------------------------------------------

wait_until(sub { state_of($a) eq 'connected' }, 30, "A's worker is connected");
my $a_worker = worker_pid($a);
like($a_worker, qr/^\d+$/, "(1) A's worker found (pid $a_worker)");
# Let start-up settle (the first heartbeats, the extension's creation).
sleep(1);
my $v0 = vcsw($a_worker);
my $t0 = time;
sleep($IDLE_WINDOW_S);
my $v1 = vcsw($a_worker);
my $window = time - $t0;
ok(defined $v0 && defined $v1, "(1) the worker's voluntary_ctxt_switches can be read");
my $idle_switches = ($v1 // 0) - ($v0 // 0);
cmp_ok($idle_switches, '<', $IDLE_MAX_SWITCHES * max(1, $window / $IDLE_WINDOW_S),
	sprintf('(1) the idle worker made %d voluntary context switches in %.1f s '
		  . '(a 100 ms tick makes 60 or more)', $idle_switches, $window));
is(scalar(other_tasks($a_worker)), 0, '(1) the worker has one thread: the client library runs in its loop');
diag(sprintf('(1) idle worker, session timeout 30 s: %d voluntary context switches in %.1f s',
	$idle_switches, $window));

# ---------------------------------------------------------------------------
# (3) The reaper gives up the slots of a backend that vanished.
# ---------------------------------------------------------------------------

my $r = zklock_node('r', $zk, session_timeout => '6s');
is(zk_status_of($r)->{negotiated_timeout}, '6000', '(3) R negotiated a 6 s session timeout (a heartbeat every second)');
wait_until(sub { state_of($r) eq 'connected' }, 30, "R's worker is connected");

my $victim = bg_session($r);
my $victim_pid = $victim->query_safe('SELECT pg_backend_pid()');
is($victim->query_safe("SELECT zk_lock_acquire('reap-me', '10s') > 0"), 't',
	"(3) R's backend $victim_pid holds reap-me in session scope");
my $reap_znode = held_znode($r, $victim_pid, 'reap-me');
ok($reap_znode ne '' && grep({ $_ eq zk_base($reap_znode) } zk_ls($zk, '/zklock/reap-me')),
	"(3) its node $reap_znode is in ZooKeeper");
is(sql_result($a, "SELECT zk_lock_try('reap-me')"), 'f', '(3) A cannot take reap-me while R holds it');

SKIP:
{
	if (!grep { -x "$_/gdb" } split /:/, $ENV{PATH} // '')
	{
		$victim->quit;
		skip('gdb is not installed (test/install-deps.sh does not install it), so no backend can be made '
			  . 'to lose its local lock table', 10);
	}
	# gdb in batch mode: it attaches, writes, detaches and exits.
	my @gdb = ('gdb', '-batch', '-nx', '-iex', 'set debuginfod enabled off', '-p', $victim_pid,
		'-ex', 'set var zkl_locks = 0', '-ex', 'print zkl_locks', '-ex', 'detach');
	my ($gdb_out, $gdb_err) = ('', '');
	my $ran = eval {
		IPC::Run::run(\@gdb, '<', \undef, '>', \$gdb_out, '2>', \$gdb_err, IPC::Run::timeout(120));
		1;
	};
	my $gdb_all = ($gdb_out // '') . ($gdb_err // '') . ($ran ? '' : "\n$@");
	if ($gdb_out !~ /^\$1 = /m
		&& $gdb_all =~ /ptrace: Operation not permitted|Could not attach to process/)
	{
		$victim->quit;
		skip("this machine does not allow ptrace of our own processes, so no backend can be made to lose its "
			  . "local lock table: $gdb_all", 10);
	}
	ok($gdb_out =~ /^\$1 = \(HTAB \*\) 0x0$/m,
		"(3) gdb set zkl_locks of backend $victim_pid to NULL")
	  or diag("gdb: @gdb\n$gdb_out\n$gdb_err");

	my $log_offset = -s $r->logfile;
	$victim->quit;
	wait_until(sub { !kill(0, $victim_pid) }, 30, "backend $victim_pid to exit");
	my $t_gone = time;
	my $gone_pid_re = qr/gave up 1 lock slots of backends that exited without giving them back \(last pid $victim_pid\)/;

	# The exit hook found no local table: the slot outlived its backend.
	# (Should the reaper have been quicker than this look, its log line
	# shows the slot was stranded all the same.)
	my $stranded = $r->safe_psql('postgres',
		"SELECT coalesce((SELECT state FROM zk_locks WHERE pid = $victim_pid AND name = 'reap-me'), 'none') "
		  . "|| ' ' || (SELECT slots_used FROM zk_status())");
	ok($stranded eq 'held 1' || slurp_file($r->logfile, $log_offset) =~ $gone_pid_re,
		"(3) after backend $victim_pid exited, its slot is still 'held' in zk_locks (state and slots_used: $stranded)");

	my $reaped = wait_until(
		sub {
			$r->safe_psql('postgres',
				"SELECT NOT EXISTS (SELECT 1 FROM zk_locks WHERE pid = $victim_pid) AND "
				  . "(SELECT slots_used FROM zk_status()) = 0") eq 't'
			  && !zk_ls($zk, '/zklock/reap-me');
		},
		$REAP_WITHIN_S,
		"R's worker to give up the slot of exited backend $victim_pid");
	my $reap_after = time - $t_gone;
	is($r->safe_psql('postgres', "SELECT count(*) FROM zk_locks WHERE pid = $victim_pid"), '0',
		"(3) zk_locks has no row for pid $victim_pid any more");
	is(zk_status_of($r)->{slots_used}, '0', '(3) R\'s slots_used is 0');
	is(join(',', zk_ls($zk, '/zklock/reap-me')), '', '(3) no node is left under /zklock/reap-me')
	  or diag_locks('after the reap', $zk, ['reap-me'], $r, $a);
	is(sql_result($a, "SELECT zk_lock_try('reap-me')"), 't', '(3) A takes reap-me now');
	my $log = slurp_file($r->logfile, $log_offset);
	like($log, $gone_pid_re, '(3) the log says the worker gave up 1 slot of the exited backend');
	unlike($log, qr/gave up \d+ lock slots.*\n(?s:.*)gave up \d+ lock slots/,
		'(3) ... once');
	cmp_ok($reap_after, '<', $REAP_WITHIN_S, sprintf('(3) ... %.1f s after the backend exited', $reap_after));
	ok(!grep({ $_ eq zk_base($reap_znode) } zk_ls($zk, '/zklock/reap-me')), '(3) the stranded node is gone');
	diag(sprintf('(3) slot of exited backend %d given up %.1f s after it exited (session timeout 6 s, reaper at most every 10 s)',
		$victim_pid, $reap_after));
	diag("(3) $_") for grep { /gave up/ } split /\n/, $log;
}

# ---------------------------------------------------------------------------
# (4) A commit waiting for proof is woken by the answer.
# ---------------------------------------------------------------------------

my $c = zklock_node('c', $zk, session_timeout => '15s');
is(zk_status_of($c)->{negotiated_timeout}, '15000',
	'(4) C negotiated a 15 s session timeout (proof counts for 5 s, a heartbeat every 2.5 s)');
wait_until(sub { state_of($c) eq 'connected' }, 30, "C's worker is connected");
$c->safe_psql('postgres', 'CREATE TABLE work (tag text)');
my $h = bg_session($c);
$h->query_safe('\set VERBOSITY verbose');
my $h_pid = $h->query_safe('SELECT pg_backend_pid()');
is($h->query_safe("BEGIN; SELECT zk_lock_acquire_xact('commit-wait', '10s') > 0; INSERT INTO work VALUES ('w')"),
	't', "(4) backend $h_pid holds commit-wait in an open transaction with a row inserted");
my $c_worker = worker_pid($c);
like($c_worker, qr/^\d+$/, "(4) C's worker found (pid $c_worker)");

# Freeze right after a heartbeat's answer, so that the freeze needed for
# the proof to age stays well inside the session timeout.
my $lc0 = $c->safe_psql('postgres', 'SELECT last_contact FROM zk_status()');
wait_until(sub { $c->safe_psql('postgres', 'SELECT last_contact FROM zk_status()') ne $lc0 }, 15,
	"a heartbeat of C's worker is answered");
$frozen = $c_worker;
my $t_stop = time;
ok(kill('STOP', $c_worker), "(4) SIGSTOP to C's worker");
wait_until(sub { proc_state($c_worker) eq 'T' }, 5, 'the worker is stopped');
# The proof is stale once last_contact is older than a third of the timeout.
wait_until(
	sub {
		$c->safe_psql('postgres',
			'SELECT clock_timestamp() - last_contact > make_interval(secs => negotiated_timeout / 3000.0 + 0.3) FROM zk_status()')
		  eq 't';
	},
	15,
	'the last proof of the session to age');

my $log_offset = -s $c->logfile;
my $t_commit = time;
$h->query_until(qr/committing\n/, "\\echo committing\nCOMMIT;\n");
my $activity_sql = "SELECT wait_event_type || '/' || wait_event || '/' || state || '/' || query "
  . "FROM pg_stat_activity WHERE pid = $h_pid";
my $seen = '';
wait_until(sub { ($seen = $c->safe_psql('postgres', $activity_sql)) =~ m{^Extension/}; }, 10,
	'the COMMIT to wait in pg_stat_activity');
my $commit_wait = zklock_wait_event($c, 'ZklockCommit');
is($seen, "Extension/$commit_wait/active/COMMIT;",
	"(4) pg_stat_activity shows the COMMIT waiting: wait_event_type Extension, wait_event $commit_wait");
my $b0 = vcsw($h_pid);
my $s0 = time;
sleep($COMMIT_SAMPLE_S);
my $b1 = vcsw($h_pid);
my $sample = time - $s0;
my $still = $c->safe_psql('postgres', $activity_sql);
my $worker_state = proc_state($c_worker);
my $t_cont = time;
kill('CONT', $c_worker);
$frozen = undef;
my $freeze = $t_cont - $t_stop;

is($worker_state, 'T', sprintf('(4) the worker stayed frozen through the sample (%.1f s frozen in all)', $freeze));
is($still, "Extension/$commit_wait/active/COMMIT;", '(4) the COMMIT was still waiting at the end of the sample');
ok(defined $b0 && defined $b1, "(4) the committing backend's voluntary_ctxt_switches can be read");
my $commit_switches = ($b1 // 0) - ($b0 // 0);
cmp_ok($commit_switches, '<', $COMMIT_MAX_SWITCHES * max(1, $sample / $COMMIT_SAMPLE_S),
	sprintf('(4) the waiting backend made %d voluntary context switches in %.1f s (polling every 10 ms makes about 200)',
		$commit_switches, $sample));

my ($out, $err) = bg_collect($h);
my $t_done = time;
unlike($err, qr/ERROR/, '(4) the COMMIT succeeds after the thaw') or diag("COMMIT: $err");
is(committed($c, 'w'), '1', '(4) the row is committed');
my $clog = slurp_file($c->logfile, $log_offset);
my ($waited_ms) = $clog =~ /commit waited (\d+) ms for the ZooKeeper session to be confirmed/;
ok(defined $waited_ms, '(4) the log says "commit waited N ms"') or diag("C's log:\n$clog");
$h->quit;
diag(sprintf('(4) worker frozen %.1f s; the COMMIT waited %s ms by its log (sent %.1f s before the thaw, '
	  . 'returned within %.2f s after it); %d voluntary context switches of the waiting backend in %.1f s',
	$freeze, $waited_ms // '?', $t_cont - $t_commit, $t_done - $t_cont, $commit_switches, $sample));

# ---------------------------------------------------------------------------
# (2) The library's messages during an outage.
# ---------------------------------------------------------------------------

# Only A matters here; the others would only log the outage.
$r->stop;
$c->stop;

my $a_log_offset = -s $a->logfile;
my $m0 = vcsw($a_worker);
my $c0 = cpu_seconds($a_worker);
my $t_down = time;
zk_stop($zk);
wait_until(sub { state_of($a) ne 'connected' }, 30, "A's worker notices ZooKeeper is gone");
isnt(state_of($a), 'connected', '(2) A\'s worker is disconnected while ZooKeeper is down');
sleep($OUTAGE_S - (time - $t_down)) if time - $t_down < $OUTAGE_S;
my $m1 = vcsw($a_worker);
my $c1 = cpu_seconds($a_worker);
my $outage = time - $t_down;
my $outage_log = slurp_file($a->logfile, $a_log_offset);
zk_start_all($zk);
wait_until(sub { state_of($a) eq 'connected' }, 60, "A's worker reconnects once ZooKeeper is back");
is(state_of($a), 'connected', '(2) A\'s worker is connected again after the outage');

my @client_lines = grep { /ZooKeeper client:/ } split /\n/, $outage_log;
cmp_ok(scalar(@client_lines), '>=', 1, '(2) the library\'s messages reach the log during the outage');
cmp_ok(scalar(@client_lines), '<=', $OUTAGE_MAX_LINES,
	sprintf('(2) ... in at most %d lines over %.0f s (%d)', $OUTAGE_MAX_LINES, $outage, scalar(@client_lines)));
ok(defined $c0 && defined $c1, "(2) the worker's CPU time can be read");
cmp_ok((($c1 // 0) - ($c0 // 0)) / $outage, '<', $OUTAGE_MAX_CPU,
	sprintf('(2) the worker used %.2f s of CPU in the %.0f s outage (less than a tenth of a core)',
		($c1 // 0) - ($c0 // 0), $outage));
diag(sprintf('(2) ZooKeeper down %.1f s: %d "ZooKeeper client:" lines in the log; the worker woke %d times',
	$outage, scalar(@client_lines), ($m1 // 0) - ($m0 // 0)));
diag("(2) $_") for @client_lines;

done_testing();
