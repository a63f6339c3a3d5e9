# What a bad configuration or an unreachable ZooKeeper does, and what it
# must not do:
#
#  (1) A reload with an unusable zklock.hosts is refused and changes
#      nothing: cluster A holds 'keep'; each of '', 'garbage',
#      '127.0.0.1:99999' and 'host:' in turn, written into postgresql.conf
#      and reloaded, makes the server log PostgreSQL's refusal (invalid value
#      for parameter "zklock.hosts", with zklock's detail); a new session's
#      SHOW zklock.hosts still gives the real servers; 15 s later (more than
#      the 10 s session timeout) the worker is still 'connected' with the same
#      session id and never left 'connected' in between; the lock is still
#      held (zk_locks 'held', zk_lock_check true in the holding session, its
#      node in ZooKeeper, cluster D's zk_lock_try false); the worker logged
#      no switch of servers and the client library no complaint (lines
#      "Exceeded deadline by N ms", which a loaded machine may cause, aside).
#      The lines are then removed and the configuration reloads cleanly.
#  (4) zk_lock_check needs the proof a commit needs: cluster D
#      (zklock.session_timeout = 9s) holds 'frz' and zk_lock_check is true;
#      its worker is frozen (SIGSTOP) right after a heartbeat's answer for
#      about 5 s (more than a third of the timeout, less than the timeout):
#      after 3.6 s of the freeze zk_lock_check in the holding session is
#      false, called in a transaction block and called as a statement of its
#      own (whose commit must not wait for the proof: were it still running
#      after 1.5 s, it is cancelled and the check fails); after SIGCONT it is
#      true again, and nothing was lost (same session, zk_locks 'held', lost
#      counter 0, A's zk_lock_try false, the release reports nothing).
#  (2) The client library's lines are bounded even when they vary: cluster
#      B, whose zklock.hosts lists 9 loopback ports where nothing listens,
#      runs 30 s; its log has between 1 and 21 lines "ZooKeeper
#      client:" and at most one "more lines of the ZooKeeper client library
#      were not logged" line (one a minute).  Before the fix it logged about
#      600 lines in 20 s.  The count is printed.
#  (3) With no ZooKeeper session, on B (never connected) and on A with its
#      ZooKeeper stopped (session suspended), with zklock.connect_timeout =
#      20s: zk_lock_acquire('z0', '0') and zk_lock_acquire(ARRAY['z1','z2'],
#      '0') fail with SQLSTATE ZK001 and the detail "There is no ZooKeeper
#      session, and a timeout of zero does not wait for one."; with
#      lock_timeout = 500ms, zk_lock_try('n1') fails with ZK001 and the
#      detail "No ZooKeeper session for 500 ms (lock_timeout)." (the elapsed
#      times are printed, not asserted).  Afterwards slots_used is 0 and
#      zk_locks empty, and once B is reloaded onto the real servers and A's
#      ZooKeeper is back (both connected, a heartbeat answered), no node of
#      z0, z1, z2 or n1 is in ZooKeeper: no request was queued in the client
#      library to be sent on connection.
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::RealBin/../lib";
use ZklockTest;
use Test::More;
use PostgreSQL::Test::Utils;
use PostgreSQL::Test::Cluster;
use Time::HiRes qw(time sleep);

my $REFUSED_WAIT_S = 15;     # longer than A's 10 s session timeout
my $FREEZE_CHECK_S = 3.6;    # more than a third of D's 9 s timeout
my $FREEZE_S = 5;            # less than the timeout
my $B_WINDOW_S = 30;
my $B_MAX_CLIENT_LINES = 21;
my @BAD_HOSTS = ('', 'garbage', '127.0.0.1:99999', 'host:');
my @OUTAGE_NAMES = qw(z0 z1 z2 n1);

# A frozen worker is always thawed, whatever way the test ends (this END
# runs before ZklockTest's, which stops the clusters).
my $frozen;
END { kill('CONT', $frozen) if $frozen; }

sub state_of { $_[0]->safe_psql('postgres', 'SELECT state FROM zk_status()') }

sub write_file
{
	my ($path, $text) = @_;
	open(my $fh, '>', $path) or die "could not write $path: $!";
	print $fh $text;
	close $fh or die "could not write $path: $!";
	return;
}

# Lines of the client library in a log excerpt.
sub client_lines { return grep { /ZooKeeper client:/ } split /\n/, $_[0] }

# Wait until a heartbeat of $node's worker is answered after now.
sub wait_heartbeat
{
	my ($node, $what) = @_;
	local $Test::Builder::Level = $Test::Builder::Level + 1;
	my $lc0 = $node->safe_psql('postgres', 'SELECT coalesce(last_contact::text, \'\') FROM zk_status()');
	return wait_until(
		sub { $node->safe_psql('postgres', 'SELECT coalesce(last_contact::text, \'\') FROM zk_status()') ne $lc0 },
		30, $what);
}

my $zk = zk_start(1);
my $a = zklock_node('a', $zk);
my $d = zklock_node('d', $zk, session_timeout => '9s');
wait_until(sub { state_of($a) eq 'connected' }, 60, "A's worker is connected");
wait_until(sub { state_of($d) eq 'connected' }, 60, "D's worker is connected");

# ---------------------------------------------------------------------------
# (1) A reload with an unusable zklock.hosts is refused.
# ---------------------------------------------------------------------------

my $holder = bg_session($a);
my $holder_pid = $holder->query_safe('SELECT pg_backend_pid()');
is($holder->query_safe("SELECT zk_lock_acquire('keep', '20s') > 0"), 't', "(1) A's backend $holder_pid holds keep");
my $keep_znode = held_znode($a, $holder_pid, 'keep');
my $st0 = zk_status_of($a);
is($st0->{state}, 'connected', '(1) A is connected before the reloads');
like($st0->{session_id}, qr/\S/, "(1) A's session id is $st0->{session_id}");

my $conf_path = $a->data_dir . '/postgresql.conf';
my $orig_conf = slurp_file($conf_path);

for my $bad (@BAD_HOSTS)
{
	my $label = "(1) zklock.hosts = '$bad'";
	my $offset = -s $a->logfile;
	write_file($conf_path, $orig_conf . "zklock.hosts = '$bad'\n");
	$a->reload;
	my $t_reload = time;
	my $log = '';
	wait_until(
		sub {
			$log = slurp_file($a->logfile, $offset);
			$log =~ /configuration file ".*" contains errors/;
		},
		30,
		"A's postmaster to process the reload with zklock.hosts = '$bad'");
	like($log,
		qr/invalid value for parameter "zklock\.hosts": "\Q$bad\E"\n(?:.*\n)?.*DETAIL:  zklock\.hosts must be a comma-separated list of host:port pairs/,
		"$label: the log shows PostgreSQL's refusal with zklock's detail");
	is($a->safe_psql('postgres', 'SHOW zklock.hosts'), $zk->{connect},
		"$label: a new session still shows the old value");
	is($a->safe_psql('postgres', "SELECT error FROM pg_file_settings WHERE name = 'zklock.hosts' AND setting = '$bad'"),
		'setting could not be applied', "$label: pg_file_settings marks the line as not applied");

	# Wait past the session timeout, watching the worker's state.
	my (%states, %sessions);
	wait_until(
		sub {
			my $st = zk_status_of($a);
			$states{ $st->{state} }++;
			$sessions{ $st->{session_id} }++;
			time - $t_reload >= $REFUSED_WAIT_S;
		},
		$REFUSED_WAIT_S + 60,
		"$REFUSED_WAIT_S s to pass after the reload");
	my $st = zk_status_of($a);
	is($st->{state}, 'connected', sprintf('%s: A is connected %.0f s after the reload', $label, time - $t_reload));
	is($st->{session_id}, $st0->{session_id}, "$label: with the same session ($st->{session_id})");
	is(join(',', sort keys %states), 'connected', "$label: zk_status never showed another state in between")
	  or diag("states seen: " . join(', ', map { "$_ x$states{$_}" } sort keys %states));
	is(join(',', sort keys %sessions), $st0->{session_id}, "$label: nor another session id");
	is(lock_state($a, $holder_pid, 'keep'), 'held', "$label: zk_locks shows keep held");
	is($holder->query_safe("SELECT zk_lock_check('keep')"), 't', "$label: zk_lock_check('keep') is true in the holding session");
	ok(grep({ $_ eq zk_base($keep_znode) } zk_ls($zk, '/zklock/keep')), "$label: the holder's node $keep_znode is in ZooKeeper");
	is(sql_result($d, "SELECT zk_lock_try('keep')"), 'f', "$label: cluster D cannot take keep");
	$log = slurp_file($a->logfile, $offset);
	my @lines = client_lines($log);
	my @complaints = grep { !/Exceeded deadline by/ } @lines;
	is(scalar(@complaints), 0, "$label: no line of the ZooKeeper client library (" . scalar(@lines) . ' in all)')
	  or diag(join("\n", @lines));
	unlike($log, qr/moving to ZooKeeper servers/,
		"$label: the worker did not try to switch servers");
	diag(sprintf('%s: %d "ZooKeeper client:" lines in %.0f s; states seen: %s', $label, scalar(@lines),
		time - $t_reload, join(', ', map { "$_ x$states{$_}" } sort keys %states)));
}

# Remove the bad line again; the configuration reloads cleanly.
my $offset = -s $a->logfile;
write_file($conf_path, $orig_conf);
$a->reload;
is($a->safe_psql('postgres', 'SELECT count(*) FROM pg_file_settings WHERE error IS NOT NULL'), '0',
	'(1) postgresql.conf restored: pg_file_settings reports no error');
# The reload is asynchronous: give the postmaster and the worker time to act.
wait_heartbeat($a, "a heartbeat of A's worker after the clean reload");
sleep(1);
my $log = slurp_file($a->logfile, $offset);
unlike($log, qr/invalid value for parameter|contains errors/, '(1) the clean reload logs no error');
is($a->safe_psql('postgres', 'SHOW zklock.hosts'), $zk->{connect}, '(1) zklock.hosts is the real connect string');
my $st1 = zk_status_of($a);
is("$st1->{state} $st1->{session_id}", "connected $st0->{session_id}", '(1) A is still connected in the same session');
is($holder->query_safe("SELECT zk_lock_check('keep')"), 't', '(1) and still holds keep');
$holder->quit;
wait_until(sub { zk_status_of($a)->{slots_used} eq '0' && !zk_ls($zk, '/zklock/keep') }, 30,
	'keep to be released by its exited holder');

# ---------------------------------------------------------------------------
# (4) zk_lock_check is false without fresh proof of the session.
# ---------------------------------------------------------------------------

my $dst0 = zk_status_of($d);
is($dst0->{negotiated_timeout}, '9000', '(4) D negotiated a 9 s session timeout (proof counts for 3 s)');
my $fh = bg_session($d);
my $fh_pid = $fh->query_safe('SELECT pg_backend_pid()');
is($fh->query_safe("SELECT zk_lock_acquire('frz', '20s') > 0"), 't', "(4) D's backend $fh_pid holds frz");
my $frz_znode = held_znode($d, $fh_pid, 'frz');
is($fh->query_safe("SELECT zk_lock_check('frz')"), 't', '(4) zk_lock_check(\'frz\') is true before the freeze');
my $d_worker = worker_pid($d);
like($d_worker, qr/^\d+$/, "(4) D's worker found (pid $d_worker)");

# Freeze right after a heartbeat's answer, so the session is never at risk.
wait_heartbeat($d, "a heartbeat of D's worker is answered");
$frozen = $d_worker;
my $t_stop = time;
ok(kill('STOP', $d_worker), "(4) SIGSTOP to D's worker");
wait_until(sub { proc_state($d_worker) eq 'T' }, 5, 'the worker is stopped');
sleep($FREEZE_CHECK_S - (time - $t_stop)) if time - $t_stop < $FREEZE_CHECK_S;
# In a transaction block: the function's own answer (ROLLBACK needs no proof).
my $t_check = time;
my $check_frozen = $fh->query_safe("BEGIN; SELECT zk_lock_check('frz')");
my $age = $d->safe_psql('postgres',
	'SELECT round(extract(epoch FROM clock_timestamp() - last_contact)::numeric, 1) FROM zk_status()');
$fh->query_safe('ROLLBACK');
# As a statement of its own, the usual way to call it: its implicit
# transaction commits.  Should that commit wait for the proof it cannot get
# while the worker is frozen, the statement is cancelled after 1.5 s, so
# that the freeze stays shorter than the session timeout.
my $t_auto = time;
bg_start($fh, "SELECT 'autocommit', zk_lock_check('frz')");
my $activity_sql = "SELECT state || '/' || coalesce(wait_event_type, '') || '/' || coalesce(wait_event, '') "
  . "|| '/' || query FROM pg_stat_activity WHERE pid = $fh_pid";
my $seen = '';
wait_until(
	sub {
		$seen = $d->safe_psql('postgres', $activity_sql);
		($seen =~ /^idle.*'autocommit'/) || time - $t_auto > 1.5;
	},
	10,
	'the autocommit check to return or 1.5 s to pass');
my $cancelled = 0;
if ($seen !~ /^idle.*'autocommit'/)
{
	$cancelled = 1;
	$d->safe_psql('postgres', "SELECT pg_cancel_backend($fh_pid)");
	wait_until(sub { $d->safe_psql('postgres', $activity_sql) =~ /^idle.*'autocommit'/ }, 10,
		'the cancelled autocommit check to end');
}
my $auto_time = time - $t_auto;
my $state_during = proc_state($d_worker);
# Nothing more in the holding session until the thaw: each statement's
# commit would wait for the proof.
sleep($FREEZE_S - (time - $t_stop)) if time - $t_stop < $FREEZE_S;
my $t_cont = time;
kill('CONT', $d_worker);
$frozen = undef;
my ($auto_out, $auto_err) = bg_collect($fh);
is($state_during, 'T', sprintf('(4) the worker was still frozen after the checks (%.1f s into the freeze)', $t_auto + $auto_time - $t_stop));
is($check_frozen, 'f',
	sprintf('(4) zk_lock_check(\'frz\') is false %.1f s into the freeze (last answered heartbeat %s s old, proof lasts 3 s)',
		$t_check - $t_stop, $age));
my ($auto_value) = $auto_out =~ /^autocommit\|([tf])$/m;
is($auto_value // '(none)', 'f',
	"(4) as a statement of its own, SELECT zk_lock_check('frz') also returns false during the freeze, "
	  . 'without its commit waiting for the proof it lacks')
  or diag(sprintf("the autocommit check %s after %.1f s (pg_stat_activity: %s); its output: %s; its error: %s",
	  $cancelled ? 'was still running and was cancelled' : 'ended', $auto_time, $seen, $auto_out, $auto_err));
diag(sprintf('(4) D\'s worker frozen %.1f s; zk_lock_check false %.1f s into it (last contact %s s old); '
	  . 'the autocommit check took %.1f s%s', $t_cont - $t_stop, $t_check - $t_stop, $age, $auto_time,
	  $cancelled ? " and was cancelled (pg_stat_activity: $seen; error: " . ($auto_err =~ s/\s+$//r) . ')' : ''));

my $check_back = '';
wait_until(sub { ($check_back = $fh->query_safe("SELECT zk_lock_check('frz')")) eq 't' }, 30,
	"zk_lock_check('frz') to be true again after SIGCONT");
is($check_back, 't', sprintf('(4) zk_lock_check(\'frz\') is true again after SIGCONT (%.1f s after it)', time - $t_cont));
my $dst1 = zk_status_of($d);
is("$dst1->{state} $dst1->{session_id}", "connected $dst0->{session_id}", '(4) D kept its session');
is($dst1->{lost}, $dst0->{lost}, "(4) D's lost counter is unchanged ($dst1->{lost})");
is(lock_state($d, $fh_pid, 'frz'), 'held', '(4) zk_locks shows frz held');
ok(grep({ $_ eq zk_base($frz_znode) } zk_ls($zk, '/zklock/frz')), "(4) the holder's node $frz_znode is in ZooKeeper");
is(sql_result($a, "SELECT zk_lock_try('frz')"), 'f', '(4) cluster A cannot take frz');
my ($fout, $ffailed) = $fh->query("SELECT zk_lock_release('frz')");
is($fout, 't', '(4) the holder releases frz without an error (no loss to report)') or diag($fh->{stderr});
$fh->quit;

# ---------------------------------------------------------------------------
# (2) and (3) on B: nine unreachable ports.
# ---------------------------------------------------------------------------

# Ports reserved for this test run and where nothing listens.
my @dead_ports = map { PostgreSQL::Test::Cluster::get_free_port() } 1 .. 9;
my $dead_hosts = join(',', map { "127.0.0.1:$_" } @dead_ports);
my $b = zklock_node('b', $zk, hosts => $dead_hosts, start => 0);
my $t_b0 = time;
$b->start;
$b->safe_psql('postgres', 'CREATE EXTENSION zklock');
isnt(state_of($b), 'connected', "(3) B (zklock.hosts = $dead_hosts) has no session");

# Run $sql (after \set VERBOSITY verbose and connect_timeout = 20s) in a
# fresh session of $node: (stderr, elapsed seconds).
sub verbose_error
{
	my ($node, $sql) = @_;
	my $t0 = time;
	my ($ret, $out, $err) = $node->psql('postgres',
		"\\set VERBOSITY verbose\nSET zklock.connect_timeout = '20s';\n$sql");
	return ($ret == 0 ? "(no error; output: $out)" : $err, time - $t0);
}

sub no_session_checks
{
	my ($node, $label) = @_;
	isnt(state_of($node), 'connected', "$label: the worker has no session (" . state_of($node) . ')');

	# [ SQL, lock name pattern, what is shown, detail pattern, what the detail says ]
	my $zero_detail = qr/DETAIL:  There is no ZooKeeper session, and a timeout of zero does not wait for one\./;
	for my $case (
		[ "SELECT zk_lock_acquire('z0', '0');", 'z0', "zk_lock_acquire('z0', '0')",
			$zero_detail, 'saying a timeout of zero does not wait for a session' ],
		[ "SELECT zk_lock_acquire(ARRAY['z1','z2'], '0');", 'z[12]', "zk_lock_acquire(ARRAY['z1','z2'], '0')",
			$zero_detail, 'saying a timeout of zero does not wait for a session' ],
		[ "SET lock_timeout = '500ms';\nSELECT zk_lock_try('n1');", 'n1', "with lock_timeout = 500ms, zk_lock_try('n1')",
			qr/DETAIL:  No ZooKeeper session for 500 ms \(lock_timeout\)\./,
			'after lock_timeout, not zklock.connect_timeout' ])
	{
		my ($sql, $lock, $shown, $detail, $says) = @$case;
		my ($err, $el) = verbose_error($node, $sql);
		like($err, qr/ERROR:  ZK001: could not obtain ZooKeeper lock "$lock": ZooKeeper is not reachable/,
			"$label: $shown fails with SQLSTATE ZK001");
		like($err, $detail, "$label: ... $says");
		diag(sprintf('%s: %s failed after %.2f s (connect_timeout 20 s)', $label, $shown, $el));
	}

	wait_until(sub { zk_status_of($node)->{slots_used} eq '0' }, 30, "$label: slots_used to return to 0");
	is(zk_status_of($node)->{slots_used}, '0', "$label: slots_used is 0 afterwards");
	is($node->safe_psql('postgres', 'SELECT count(*) FROM zk_locks'), '0', "$label: zk_locks is empty");
	return;
}

no_session_checks($b, '(3) B, never connected');

# (2) B's log over its first 30 s.
sleep($B_WINDOW_S - (time - $t_b0)) if time - $t_b0 < $B_WINDOW_S;
my $b_window = time - $t_b0;
isnt(state_of($b), 'connected', '(2) B still has no session at the end of the window');
my $b_log = slurp_file($b->logfile);
my @b_lines = client_lines($b_log);
my @b_more = grep { /more lines of the ZooKeeper client library were not logged/ } split /\n/, $b_log;
cmp_ok(scalar(@b_lines), '>=', 1, '(2) the client library\'s complaints reach B\'s log');
cmp_ok(scalar(@b_lines), '<=', $B_MAX_CLIENT_LINES,
	sprintf('(2) B logged %d "ZooKeeper client:" lines in %.0f s (at most %d)',
		scalar(@b_lines), $b_window, $B_MAX_CLIENT_LINES));
cmp_ok(scalar(@b_more), '<=', 1 + int($b_window / 60),
	sprintf('(2) ... and %d "more lines ... were not logged" lines (at most one a minute)', scalar(@b_more)));
my %ports_named = map { $_ => 1 } grep { my $p = $_; grep { /:$p\b/ } @b_lines } @dead_ports;
diag(sprintf('(2) B, 9 unreachable ports, %.0f s: %d "ZooKeeper client:" lines, %d "not logged" lines; '
	  . '%d of the 9 ports named in them', $b_window, scalar(@b_lines), scalar(@b_more), scalar(keys %ports_named)));
diag("(2) $_") for @b_lines, @b_more;

# B onto the real servers: it connects, and nothing of the failed requests
# reaches ZooKeeper.
$offset = -s $b->logfile;
$b->append_conf('postgresql.conf', "zklock.hosts = '$zk->{connect}'\n");
$b->reload;
wait_until(sub { slurp_file($b->logfile, $offset) =~ /moving to ZooKeeper servers/ }, 30,
	'B\'s worker to take the new servers');
wait_until(sub { state_of($b) eq 'connected' }, 60, 'B to connect to the real servers');
is(state_of($b), 'connected', '(3) B, reloaded onto the real servers, is connected');
wait_heartbeat($b, "a heartbeat of B's worker is answered");
is(join(',', map { my $n = $_; map { "$n/$_" } zk_ls($zk, "/zklock/$n") } @OUTAGE_NAMES), '',
	'(3) B connected: no node of z0, z1, z2 or n1 in ZooKeeper');
is(zk_status_of($b)->{slots_used}, '0', '(3) B\'s slots_used is still 0');
$b->stop;

# ---------------------------------------------------------------------------
# (3) on A: its ZooKeeper stopped.
# ---------------------------------------------------------------------------

$d->stop;    # only A matters here
zk_stop($zk);
wait_until(sub { state_of($a) ne 'connected' }, 60, "A's worker notices ZooKeeper is gone");
no_session_checks($a, '(3) A, ZooKeeper stopped');
zk_start_all($zk);
wait_until(sub { state_of($a) eq 'connected' }, 90, 'A to reconnect once ZooKeeper is back');
is(state_of($a), 'connected', '(3) A is connected again once ZooKeeper is back');
wait_heartbeat($a, "a heartbeat of A's worker is answered");
is(join(',', map { my $n = $_; map { "$n/$_" } zk_ls($zk, "/zklock/$n") } @OUTAGE_NAMES), '',
	'(3) ZooKeeper back: no node of z0, z1, z2 or n1 in ZooKeeper');
is(zk_status_of($a)->{slots_used}, '0', '(3) A\'s slots_used is still 0');
is(sql_result($a, "SELECT zk_lock_try('z0')"), 't', '(3) A takes z0 now');

done_testing();
