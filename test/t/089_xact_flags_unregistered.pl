# What zklock remembers of a transaction is forgotten when it ends, even in
# a backend that has used no lock yet (review of issue 40): the transaction
# callback returns at once while the backend's table of locks does not
# exist, and the marks it clears there (this transaction is a COMMIT
# PREPARED or ROLLBACK PREPARED, which must not fail for a loss after the
# fact) must not outlive their transaction:
#  (1) a fresh session runs ROLLBACK PREPARED of a transaction that does
#      not exist (42704); then BEGIN; zk_lock_acquire_xact; INSERT; the node
#      is deleted; COMMIT fails with ZK002 and the row is not committed.
#  (2) The same after a COMMIT PREPARED that succeeds.
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
my $a = zklock_node('a', $zk, conf => ["zklock.on_lock_lost = 'error'", 'max_prepared_transactions = 5']);
$a->safe_psql('postgres', 'CREATE TABLE work (tag text)');

sub after_prepared
{
	my ($finish, $name, $tag, $what) = @_;
	my $s = bg_session($a);
	$s->query_safe('\set VERBOSITY verbose');
	my $pid = $s->query_safe('SELECT pg_backend_pid()');
	my ($state, $err) = bg_sqlstate($s, $finish);
	note("$what: $finish: $state");
	is(bg_result($s, "BEGIN; SELECT zk_lock_acquire_xact('$name', '10s') > 0"), 't', "$what: the session holds $name");
	$s->query_safe("INSERT INTO work VALUES ('$tag')");
	lose_lock($zk, $a, $pid, $name, $what);
	($state, $err) = bg_sqlstate($s, 'COMMIT');
	is($state, 'ZK002', "$what: COMMIT fails with ZK002") or diag($err);
	is(committed($a, $tag), '0', "$what: the row is not committed");
	$s->quit;
	return;
}

after_prepared("ROLLBACK PREPARED 'none'", 'E', 'after-failed-rollback-prepared', '(1)');

$a->safe_psql('postgres', "BEGIN; INSERT INTO work VALUES ('prepared'); PREPARE TRANSACTION 'p'");
after_prepared("COMMIT PREPARED 'p'", 'F', 'after-commit-prepared', '(2)');
is(committed($a, 'prepared'), '1', '(2) the prepared transaction was committed');

done_testing();
