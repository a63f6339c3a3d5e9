# The NOTIFY queue's lock taken before the proof (review of issue 40): the
# lock is one for the whole cluster, and PostgreSQL itself takes it only in
# PreCommit_Notify, after every pre-commit callback, for as short a time as
# it can.  Taken by zklock's callback, in front of the others and before a
# wait for proof:
#  (1) postgres_fdw to a database of the same cluster whose table notifies
#      in a trigger: a lock holder's BEGIN; INSERT into the foreign table;
#      NOTIFY; COMMIT must end.  With the lock taken before postgres_fdw
#      commits its remote transaction, the remote COMMIT waits for the
#      NOTIFY lock this backend holds while this backend waits for the
#      remote COMMIT: a deadlock no detector sees, for ever.
#  (2) A lock holder's NOTIFYing COMMIT that waits for proof (the worker
#      frozen) must not make every other notifying commit of the cluster
#      wait with it: a session that holds no lock NOTIFYs meanwhile, and is
#      not left waiting on the lock behind the proof's wait.
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
my $a = zklock_node('a', $zk, session_timeout => '6s', conf => ["zklock.on_lock_lost = 'error'"]);
$a->safe_psql('postgres', 'CREATE TABLE work (tag text)');
fdw_loop($a, 'remote');
$a->safe_psql(
	'remote', q{
CREATE TABLE work (tag text);
CREATE FUNCTION tell() RETURNS trigger LANGUAGE plpgsql AS $$BEGIN PERFORM pg_notify('remote', NEW.tag); RETURN NEW; END$$;
CREATE TRIGGER tell AFTER INSERT ON work FOR EACH ROW EXECUTE FUNCTION tell();
});
$a->safe_psql('postgres', "CREATE FOREIGN TABLE remote_work (tag text) SERVER loop OPTIONS (table_name 'work')");

sub activity
{
	my ($pid, $col) = @_;
	return $a->safe_psql('postgres', "SELECT coalesce($col, '') FROM pg_stat_activity WHERE pid = $pid");
}

# ---------------------------------------------------------------------
# (1) postgres_fdw to the same cluster, a NOTIFY on both sides.
# ---------------------------------------------------------------------
my $p = bg_session($a);
$p->query_safe('\set VERBOSITY verbose');
my $p_pid = $p->query_safe('SELECT pg_backend_pid()');
bg_start($p,
	"BEGIN; SELECT zk_lock_acquire_xact('D', '10s') > 0; INSERT INTO remote_work VALUES ('both'); NOTIFY here; COMMIT"
);
my $ended = wait_until(sub { activity($p_pid, 'state') eq 'idle' }, 20, 'P\'s COMMIT ends');
ok($ended, '(1) the COMMIT of a transaction that notifies on both sides of postgres_fdw ends');
if (!$ended)
{
	diag('P waits on ' . activity($p_pid, 'wait_event') . '; remote: '
		  . $a->safe_psql('postgres',
			"SELECT string_agg(wait_event_type || '/' || wait_event, ', ') FROM pg_stat_activity WHERE datname = 'remote'"));
	$a->safe_psql('postgres', "SELECT pg_cancel_backend($p_pid)");
}
my ($out, $err) = bg_collect($p);
is(sqlstate_of($err), 'ok', '(1) ... and commits') or diag($err);
is($a->safe_psql('remote', "SELECT count(*) FROM work WHERE tag = 'both'"), '1', '(1) the remote row is committed');

# ---------------------------------------------------------------------
# (2) A wait for proof under the NOTIFY lock.
# ---------------------------------------------------------------------
is(bg_result($p, "SELECT zk_lock_acquire('N', '10s') > 0"), 't', '(2) P holds N');
my $q = bg_session($a);
my $q_pid = $q->query_safe('SELECT pg_backend_pid()');
my $worker = worker_pid($a);
ok(kill('STOP', $worker), "(2) SIGSTOP to the worker ($worker)");
END { kill('CONT', $worker) if $worker; }
# Past a third of the 6 s session timeout, the last answer proves nothing.
sleep(3);
bg_start($p, "BEGIN; INSERT INTO work VALUES ('notify-wait'); NOTIFY ch; COMMIT");
ok( wait_until(
		sub { activity($p_pid, 'wait_event') eq zklock_wait_event($a, 'ZklockCommit') },
		15, 'P waits for proof'),
	'(2) P\'s COMMIT waits for proof');
bg_start($q, "NOTIFY other");
my $q_state = '';
wait_until(
	sub {
		$q_state = activity($q_pid, 'state') . '/' . activity($q_pid, 'wait_event_type');
		$q_state eq 'idle/Client' || $q_state =~ /Lock$/;
	},
	10,
	'Q finishes or waits on a lock');
my $p_waits = activity($p_pid, 'wait_event') eq zklock_wait_event($a, 'ZklockCommit');
ok(!($q_state =~ /Lock$/ && $p_waits),
	'(2) a session without zklock NOTIFYs while P waits for proof, not behind it')
  or diag("Q: $q_state");
kill('CONT', $worker);
$worker = 0;
($out, $err) = bg_collect($q);
is(sqlstate_of($err), 'ok', '(2) Q\'s NOTIFY commits') or diag($err);
# P's COMMIT ends either way: proven once the worker runs again, or not.
bg_collect($p);
bg_sqlstate($p, "SELECT zk_lock_release('N')");

$q->quit;
$p->quit;
done_testing();
