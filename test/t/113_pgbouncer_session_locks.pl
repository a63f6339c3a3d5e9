# What session-scope locks do behind pgbouncer in transaction mode (issue
# 47), as doc/integrations.md's table says: they belong to the server
# connection, not to the client, exactly as advisory locks do.  One
# pgbouncer, pool_mode = transaction, pool_size = 1 (every client gets the
# same server connection between its transactions).
#  (1) Client 1 takes zk_lock_acquire('pgb-deploy') and pg_advisory_lock(47);
#      client 2's zk_lock_try and pg_try_advisory_lock then both return
#      true: both clients believe they hold the lock.  zk_locks shows one
#      hold, of one backend.
#  (2) Client 1 disconnects holding them: the lock stays held (pgbouncer
#      runs no reset between transaction-mode clients), zk_lock_contenders
#      still names client 1 (its application_name) as the holder, and
#      client 3 "gets" the lock with zk_lock_try and can release it.
#  (3) What to use instead: transaction-scope locks.  With pool_size = 2,
#      client 1 holds zk_lock_acquire_xact in its transaction and client 2's
#      zk_lock_try_xact in its own transaction returns false; client 1's
#      commit releases it, and client 2's next try succeeds.
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::RealBin/../lib";
use ZklockTest;
use ZklockTest::Pgbouncer;
use Test::More;
use PostgreSQL::Test::Utils;

plan skip_all => "$ZklockTest::Pgbouncer::pgbouncer is not installed (test/install-deps.sh installs it)"
  unless -x $ZklockTest::Pgbouncer::pgbouncer;

my $zk = zk_start(1);
my $a = zklock_node('a', $zk);

my $pgb = pgbouncer_start('a', $a, pool_mode => 'transaction', default_pool_size => 1);

sub client
{
	my ($name) = @_;
	my $s = $pgb->bg_session;
	$s->query_safe("SET application_name = '$name'");
	return $s;
}

# ---------------------------------------------------------------------
# (1) Two clients, one server connection.
# ---------------------------------------------------------------------
my $c1 = client('client-1');
is($c1->query_safe("SELECT zk_lock_acquire('pgb-deploy', '10s') > 0"), 't', '(1) client 1 acquires pgb-deploy in session scope');
is($c1->query_safe('SELECT pg_advisory_lock(47)'), '', '(1) and advisory lock 47');
my $backend1 = $c1->query_safe('SELECT pg_backend_pid()');

my $c2 = client('client-2');
is($c2->query_safe('SELECT pg_backend_pid()'), $backend1, '(1) client 2 is served by the same backend');
is($c2->query_safe("SELECT zk_lock_try('pgb-deploy')"), 't',
	'(1) client 2\'s zk_lock_try returns true: both clients believe they hold pgb-deploy');
is($c2->query_safe('SELECT pg_try_advisory_lock(47)'), 't', '(1) as pg_try_advisory_lock does for the advisory lock');
is( $a->safe_psql('postgres', "SELECT count(*), min(pid) FROM zk_locks WHERE name = 'pgb-deploy' AND state = 'held'"),
	"1|$backend1",
	'(1) zk_locks shows one hold, of that backend: one lock, taken twice (reentrant)');

# ---------------------------------------------------------------------
# (2) Client 1 goes away holding it.
# ---------------------------------------------------------------------
$c1->quit;
$c2->quit;
my $c3 = client('client-3');
is($c3->query_safe('SELECT pg_backend_pid()'), $backend1, '(2) client 3 is served by the same backend');
is($a->safe_psql('postgres', "SELECT count(*) FROM zk_locks WHERE name = 'pgb-deploy' AND state = 'held'"),
	'1', '(2) the clients are gone: the lock is still held by the server connection');
is( $a->safe_psql('postgres',
		"SELECT holder->>'application_name' FROM zk_lock_contenders('pgb-deploy') WHERE state = 'held'"),
	'client-1',
	'(2) zk_lock_contenders still names client 1 as the holder');
is($c3->query_safe("SELECT zk_lock_try('pgb-deploy')"), 't', '(2) client 3 "gets" the lock with zk_lock_try');
is( $c3->query_safe(
		"SELECT zk_lock_release('pgb-deploy'), zk_lock_release('pgb-deploy'), zk_lock_release('pgb-deploy')"),
	't|t|t',
	'(2) and releases it, the three acquires of three clients');
is($c3->query_safe('SELECT pg_advisory_unlock_all()'), '', '(2) (the advisory lock likewise)');
is($a->safe_psql('postgres', "SELECT count(*) FROM zk_locks WHERE name = 'pgb-deploy'"), '0', '(2) now it is free');
$c3->quit;

# ---------------------------------------------------------------------
# (3) Transaction scope, with two server connections.
# ---------------------------------------------------------------------
$pgb->set(default_pool_size => 2);
$c1 = client('client-1');
$c2 = client('client-2');
$c1->query_safe("BEGIN; SELECT zk_lock_acquire_xact('pgb-xact', '10s')");
$c2->query_safe('BEGIN');
is($c2->query_safe("SELECT zk_lock_try_xact('pgb-xact')"), 'f',
	'(3) transaction scope: client 2\'s try in its transaction fails while client 1 holds the lock');
$c2->query_safe('COMMIT');
$c1->query_safe('COMMIT');
$c2->query_safe('BEGIN');
is($c2->query_safe("SELECT zk_lock_try_xact('pgb-xact')"), 't', '(3) client 1 committed: client 2 gets it');
$c2->query_safe('COMMIT');
is($a->safe_psql('postgres', 'SELECT count(*) FROM zk_locks'), '0', '(3) nothing held once both committed');
$c1->quit;
$c2->quit;
$pgb->stop;

done_testing();
