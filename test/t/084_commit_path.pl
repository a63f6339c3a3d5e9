# Nothing commits after a loss, whatever else the transaction touches, and
# nothing of zklock's takes a lock from a transaction that is committing
# (issue 40, points 1 to 4):
#  (1) postgres_fdw commits its remote transaction in its own pre-commit
#      callback, registered at its first connection, after zklock's:
#      zklock's check must come first.  BEGIN; zk_lock_acquire_xact; a local
#      and a foreign row; the node is deleted; COMMIT fails with ZK002 and
#      neither row is committed.
#  (2) A transaction whose only writes are foreign has no local
#      transaction id, and still needs the proof: with the worker frozen
#      past the proof's margin, an INSERT into the foreign table by a lock
#      holder fails with ZK002 and the remote row is not committed.
#  (3) The NOTIFY queue's lock, which another notifying transaction holds
#      until its own commit ends (here a synchronous standby that is not
#      there), is taken before the proof, not after it: the holder's COMMIT
#      waits for it first, the worker is frozen meanwhile, and once the
#      lock is free the commit needs a fresh proof, which does not come:
#      ZK002, the row not committed.
#  (4) A hold limit (zklock.max_hold_time) and a revocation under
#      zklock.on_revoke = cancel wait while the holder's COMMIT is stalled
#      in synchronous replication, past its check: no other session is
#      granted the lock before that COMMIT ends, and the log says the
#      take-away waited.  And a transaction-scope lock goes after the
#      commit, not at the check: a waiter is not granted while the
#      holder's COMMIT is stalled, and then sees its row.
# zklock.on_lock_lost = error: losses reach the sessions through their
# statements only.
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::RealBin/../lib";
use ZklockTest;
use Test::More;
use PostgreSQL::Test::Utils;

my $zk = zk_start(1);
my $a = zklock_node(
	'a', $zk,
	session_timeout => '4s',
	# A walsender slot, or no commit ever waits for a synchronous standby.
	init => { allows_streaming => 1 },
	conf => [
		"zklock.on_lock_lost = 'error'",
		# Commits wait for a standby only where a session asks for it.
		"synchronous_standby_names = 'nobody'",
		"synchronous_commit = 'local'",
	]);
$a->safe_psql('postgres', 'CREATE TABLE work (tag text)');
fdw_loop($a, 'remote');
$a->safe_psql('remote', 'CREATE TABLE work (tag text)');
$a->safe_psql('postgres', "CREATE FOREIGN TABLE remote_work (tag text) SERVER loop OPTIONS (table_name 'work')");

sub remote_committed
{
	my ($tag) = @_;
	return $a->safe_psql('remote', "SELECT count(*) FROM work WHERE tag = '$tag'");
}

my $p = bg_session($a);
$p->query_safe('\set VERBOSITY verbose');
my $p_pid = $p->query_safe('SELECT pg_backend_pid()');

# The worker is stopped past the proof's margin, with the library's
# freeze_worker, and resumed with its thaw_worker.
my $frozen = 0;

sub freeze_past_proof
{
	my ($what) = @_;
	$frozen = worker_pid($a);
	freeze_worker($frozen);
	pass("$what: the worker ($frozen) is stopped");
	# Past a third of the 4 s session timeout, the last answer proves nothing.
	sleep(2);
	return;
}

sub thaw
{
	thaw_worker($frozen) if $frozen;
	$frozen = 0;
	return;
}

# ---------------------------------------------------------------------
# (1) postgres_fdw with a known loss.
# ---------------------------------------------------------------------
is(bg_result($p, "BEGIN; SELECT zk_lock_acquire_xact('F', '10s') > 0"), 't', '(1) P holds F in transaction scope');
$p->query_safe("INSERT INTO work VALUES ('fdw-local')");
$p->query_safe("INSERT INTO remote_work VALUES ('fdw-remote')");
lose_lock($zk, $a, $p_pid, 'F', '(1)');
my ($state, $err) = bg_sqlstate($p, 'COMMIT');
is($state, 'ZK002', '(1) COMMIT fails with ZK002') or diag($err);
is(committed($a, 'fdw-local'), '0', '(1) the local row is not committed');
is(remote_committed('fdw-remote'), '0', '(1) nor the foreign row: zklock checked before postgres_fdw committed');

# The same in a new session, whose first foreign statement comes after the
# acquire (postgres_fdw registers its callback then).
my $p2 = bg_session($a);
my $p2_pid = $p2->query_safe('SELECT pg_backend_pid()');
is(bg_result($p2, "BEGIN; SELECT zk_lock_acquire_xact('F2', '10s') > 0"), 't', '(1) P2 holds F2');
$p2->query_safe("INSERT INTO remote_work VALUES ('fdw-first-use')");
lose_lock($zk, $a, $p2_pid, 'F2', '(1)');
($state, $err) = bg_sqlstate($p2, 'COMMIT');
is($state, 'ZK002', '(1) P2\'s COMMIT fails with ZK002') or diag($err);
is(remote_committed('fdw-first-use'), '0', '(1) ... and its foreign row is not committed');
$p2->quit;

# Without a loss the foreign row commits.
is(bg_sqlstate($p, "BEGIN; SELECT zk_lock_acquire_xact('F', '10s'); INSERT INTO remote_work VALUES ('fdw-ok'); COMMIT"),
	'ok', '(1) with the lock held, the foreign write commits');
is(remote_committed('fdw-ok'), '1', '(1) ... and lands');

# ---------------------------------------------------------------------
# (2) A transaction whose only write is foreign.
# ---------------------------------------------------------------------
is(bg_result($p, "SELECT zk_lock_acquire('G', '10s') > 0"), 't', '(2) P holds G in session scope');
freeze_past_proof('(2)');
($state, $err) = bg_sqlstate($p, "INSERT INTO remote_work VALUES ('fdw-only')");
is($state, 'ZK002', '(2) a foreign-only INSERT fails with ZK002 without the proof') or diag($err);
like($err, qr/could not confirm the ZooKeeper session before commit/, '(2) ... for want of proof');
thaw();
is(remote_committed('fdw-only'), '0', '(2) the foreign row is not committed');
# The frozen worker let the session expire: the release may report G lost.
bg_sqlstate($p, "SELECT zk_lock_release('G')");

# ---------------------------------------------------------------------
# (3) The NOTIFY queue's lock is taken before the proof.
# ---------------------------------------------------------------------
my $q = bg_session($a);
my $q_pid = $q->query_safe('SELECT pg_backend_pid()');
$q->query_safe('SET synchronous_commit = on');
bg_start($q, "BEGIN; INSERT INTO work VALUES ('q'); NOTIFY other; COMMIT");
ok(wait_until(sub { $a->safe_psql('postgres', "SELECT wait_event FROM pg_stat_activity WHERE pid = $q_pid") eq 'SyncRep' },
		15, 'Q waits for the standby'), '(3) Q\'s COMMIT waits for a standby, holding the NOTIFY queue\'s lock');
is(bg_result($p, "SELECT zk_lock_acquire('N', '10s') > 0"), 't', '(3) P holds N');
bg_start($p, "BEGIN; INSERT INTO work VALUES ('notify-cut'); NOTIFY ch, 'p'; COMMIT");
ok(wait_until(sub { $a->safe_psql('postgres', "SELECT wait_event_type FROM pg_stat_activity WHERE pid = $p_pid") eq 'Lock' },
		15, 'P waits for the NOTIFY lock'), '(3) P\'s COMMIT waits for the NOTIFY queue\'s lock');
freeze_past_proof('(3)');
$a->safe_psql('postgres', "SELECT pg_cancel_backend($q_pid)");
my ($out);
($out, $err) = bg_collect($p);
thaw();
is(sqlstate_of($err), 'ZK002', '(3) once the lock is free, P\'s COMMIT needs a fresh proof and fails') or diag($err);
is(committed($a, 'notify-cut'), '0', '(3) P\'s row is not committed');
bg_collect($q);
# The frozen worker let the session expire: the release may report N lost.
bg_sqlstate($p, "SELECT zk_lock_release('N')");
ok(wait_until(sub { zk_status_of($a)->{state} eq 'connected' }, 30, 'a new session'), '(3) the worker has a session again');

# ---------------------------------------------------------------------
# (4) No take-away from a committing transaction.
# ---------------------------------------------------------------------
sub stalled_commit
{
	my ($s, $pid, $name, $tag, $what) = @_;
	bg_start($s, "BEGIN; SELECT zk_lock_acquire_xact('$name', '10s') > 0; INSERT INTO work VALUES ('$tag'); COMMIT");
	ok(wait_until(sub { $a->safe_psql('postgres', "SELECT wait_event FROM pg_stat_activity WHERE pid = $pid") eq 'SyncRep' },
			15, "$what: the commit waits for the standby"), "$what: the holder's COMMIT waits for a standby, past its check");
	return;
}

$p->query_safe("SET synchronous_commit = on; SET zklock.max_hold_time = '1s'");
my $log_pos = -s $a->logfile;
stalled_commit($p, $p_pid, 'H', 'hold-limit', '(4)');
# The limit passes, and the worker's checks of held locks run several times.
sleep(4);
is(sql_result($a, "SELECT zk_lock_try('H')"), 'f', '(4) past the hold limit, no other session gets H while the COMMIT lasts');
ok(wait_until(sub { slurp_file($a->logfile, $log_pos) =~ /"H" of backend $p_pid is not taken away while its transaction commits/ },
		10, 'the deferral is logged'), '(4) the log says the hold limit waits for the commit');
$a->safe_psql('postgres', "SELECT pg_cancel_backend($p_pid)");
($out, $err) = bg_collect($p);
like($err, qr/canceling wait for synchronous replication/, '(4) the commit ends (its wait for the standby cancelled)');
is(committed($a, 'hold-limit'), '1', '(4) ... committed');
ok(wait_until(sub { sql_result($a, "SELECT zk_lock_try('H')") eq 't' }, 15, 'H free'), '(4) then H is free');
$p->query_safe("RESET zklock.max_hold_time");

# A revocation under on_revoke = cancel.
$p->query_safe("SET zklock.on_revoke = 'cancel'");
stalled_commit($p, $p_pid, 'V', 'revoked', '(4)');
is(sql_result($a, "SELECT zk_lock_revoke('V')"), '1', '(4) V is revoked');
sleep(3);
is(sql_result($a, "SELECT zk_lock_try('V')"), 'f', '(4) no other session gets V while the COMMIT lasts');
$a->safe_psql('postgres', "SELECT pg_cancel_backend($p_pid)");
($out, $err) = bg_collect($p);
is(committed($a, 'revoked'), '1', '(4) the commit ends, committed');
ok(wait_until(sub { sql_result($a, "SELECT zk_lock_try('V')") eq 't' }, 15, 'V free'), '(4) then V is free');

# A transaction-scope lock is given back after the commit, not at the
# check: a waiter of the same cluster is not granted while the holder's
# COMMIT is stalled past its check, and once granted it sees the row.
$p->query_safe("RESET zklock.on_revoke");
$a->safe_psql('postgres', 'CREATE TABLE guarded (v int)');
stalled_commit($p, $p_pid, 'O', 'ordered', '(4)');
my $reader = queue_waiter($a, $zk, 'O', '60s');
sleep(2);
is(lock_state($a, $reader->{pid}, 'O'), 'waiting', '(4) a waiter is not granted O while the holder\'s COMMIT is stalled');
$a->safe_psql('postgres', "SELECT pg_cancel_backend($p_pid)");
bg_collect($p);
my ($at, $rout) = waiter_grant($reader);
ok(defined $at, '(4) the waiter is granted O once the COMMIT ends') or diag($rout);
is(bg_result($reader->{s}, "SELECT count(*) FROM work WHERE tag = 'ordered'"), '1', '(4) ... and sees the committed row');
$reader->{s}->quit;

$q->quit;
$p->quit;
done_testing();
