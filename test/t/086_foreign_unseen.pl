# Foreign writes that no plan's range table names (review of issue 40):
# zklock learns of a foreign table from the range table of the plan being
# started, but a row routed to a foreign partition (INSERT into the
# partitioned table), TRUNCATE of a foreign table and COPY into one reach
# postgres_fdw without it.  Each is a session's first use of postgres_fdw,
# which registers its commit callback then, in front of zklock's:
#  (1) BEGIN; zk_lock_acquire_xact; INSERT routed to a foreign partition;
#      the node is deleted; COMMIT fails with ZK002 and the foreign row is
#      not committed (zklock's check came first).
#  (2) TRUNCATE of a foreign table, the same: the remote rows stay.
#  (3) COPY into a foreign table, the same: no remote row lands.
#  (4) A routed INSERT is the transaction's only write (no local
#      transaction id): with the worker frozen past the proof's margin, it
#      fails with ZK002 and the foreign row is not committed.
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
my $a = zklock_node('a', $zk, session_timeout => '4s', conf => ["zklock.on_lock_lost = 'error'"]);
$a->safe_psql('postgres', 'CREATE TABLE work (tag text)');
fdw_loop($a, 'remote');
$a->safe_psql('remote', 'CREATE TABLE work (k int, tag text)');
$a->safe_psql('remote', "CREATE TABLE kept (tag text); INSERT INTO kept VALUES ('kept')");
$a->safe_psql(
	'postgres', qq{
CREATE FOREIGN TABLE remote_work (k int, tag text) SERVER loop OPTIONS (table_name 'work');
CREATE FOREIGN TABLE remote_kept (tag text) SERVER loop OPTIONS (table_name 'kept');
CREATE TABLE parted (k int, tag text) PARTITION BY LIST (k);
CREATE TABLE parted_local PARTITION OF parted FOR VALUES IN (1);
CREATE FOREIGN TABLE parted_remote PARTITION OF parted FOR VALUES IN (2) SERVER loop OPTIONS (table_name 'work');
});

sub remote_count
{
	my ($sql) = @_;
	return $a->safe_psql('remote', $sql);
}

# A new session: its first use of postgres_fdw comes after the acquire.
sub fresh_holder
{
	my ($name, $what) = @_;
	my $s = bg_session($a);
	$s->query_safe('\set VERBOSITY verbose');
	my $pid = $s->query_safe('SELECT pg_backend_pid()');
	is(bg_result($s, "BEGIN; SELECT zk_lock_acquire_xact('$name', '10s') > 0"), 't', "$what: holds $name");
	return ($s, $pid);
}

# ---------------------------------------------------------------------
# (1) A row routed to a foreign partition.
# ---------------------------------------------------------------------
my ($s, $pid) = fresh_holder('R', '(1)');
$s->query_safe("INSERT INTO work VALUES ('routed-local')");
$s->query_safe("INSERT INTO parted VALUES (2, 'routed')");
lose_lock($zk, $a, $pid, 'R', '(1)');
my ($state, $err) = bg_sqlstate($s, 'COMMIT');
is($state, 'ZK002', '(1) COMMIT fails with ZK002') or diag($err);
is(committed($a, 'routed-local'), '0', '(1) the local row is not committed');
is(remote_count("SELECT count(*) FROM work WHERE tag = 'routed'"),
	'0', '(1) nor the row routed to the foreign partition');
$s->quit;

# ---------------------------------------------------------------------
# (2) TRUNCATE of a foreign table.
# ---------------------------------------------------------------------
($s, $pid) = fresh_holder('T', '(2)');
$s->query_safe("INSERT INTO work VALUES ('truncate-local')");
$s->query_safe('TRUNCATE remote_kept');
lose_lock($zk, $a, $pid, 'T', '(2)');
($state, $err) = bg_sqlstate($s, 'COMMIT');
is($state, 'ZK002', '(2) COMMIT fails with ZK002') or diag($err);
is(remote_count('SELECT count(*) FROM kept'), '1', '(2) the remote rows are not truncated');
$s->quit;

# ---------------------------------------------------------------------
# (3) COPY into a foreign table.
# ---------------------------------------------------------------------
($s, $pid) = fresh_holder('C', '(3)');
$s->query_safe("INSERT INTO work VALUES ('copy-local')");
$s->query_safe("COPY remote_work (tag) FROM PROGRAM 'echo copied'");
lose_lock($zk, $a, $pid, 'C', '(3)');
($state, $err) = bg_sqlstate($s, 'COMMIT');
is($state, 'ZK002', '(3) COMMIT fails with ZK002') or diag($err);
is(remote_count("SELECT count(*) FROM work WHERE tag = 'copied'"), '0', '(3) the copied row does not land');
$s->quit;

# ---------------------------------------------------------------------
# (4) A routed INSERT as the transaction's only write.
# ---------------------------------------------------------------------
my $p = bg_session($a);
$p->query_safe('\set VERBOSITY verbose');
# postgres_fdw in use in this session already: only the proof is at stake.
$p->query_safe('SELECT count(*) FROM remote_work');
is(bg_result($p, "SELECT zk_lock_acquire('G', '10s') > 0"), 't', '(4) P holds G in session scope');
my $worker = worker_pid($a);
ok(kill('STOP', $worker), "(4) SIGSTOP to the worker ($worker)");
END { kill('CONT', $worker) if $worker; }
# Past a third of the 4 s session timeout, the last answer proves nothing.
sleep(2);
($state, $err) = bg_sqlstate($p, "INSERT INTO parted VALUES (2, 'routed-only')");
kill('CONT', $worker);
$worker = 0;
is($state, 'ZK002', '(4) a routed-only INSERT fails with ZK002 without the proof') or diag($err);
is(remote_count("SELECT count(*) FROM work WHERE tag = 'routed-only'"), '0', '(4) the routed row is not committed');
# The frozen worker let the session expire: the release may report G lost.
bg_sqlstate($p, "SELECT zk_lock_release('G')");
$p->quit;
done_testing();
