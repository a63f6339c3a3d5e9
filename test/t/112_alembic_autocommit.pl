# The alembic recipe (examples/alembic) with a revision that uses
# op.get_context().autocommit_block(), as CREATE INDEX CONCURRENTLY needs
# (issue 47).  The recipe is copied with two more revisions: 0004 creates an
# index concurrently in an autocommit block, then records whether this
# session still holds the deploy lock; 0005 records the same.
#  (1) zklock_scope = session (the recipe's default): two deployers of one
#      database queued at once behind the test's hold.  Each revision is
#      applied once, by one backend, one after the other; the lock was held
#      after the autocommit block and in 0005.  (With the lock in
#      transaction scope, as the recipe had it, the commit on entering the
#      block gave the lock away.)  With zklock_wait = queue (the default)
#      the deployer waiting in the queue fails with 40P01: CREATE INDEX
#      CONCURRENTLY waits for its transaction, which waits for the lock;
#      with zklock_wait = poll both exit 0, the second having applied
#      nothing.
#  (2) zklock_scope = transaction: the recipe's check fails the deploy in
#      0004, naming the lock and the revision; 0004's version and 0005 are
#      not applied, nothing ran after the block without the lock.
use strict;
use warnings FATAL => 'all';

use Cwd qw(abs_path);
use FindBin;
use lib "$FindBin::RealBin/../lib";
use PostgreSQL::Test::Utils;
use ZklockTest;
use ZklockTest::Deployer;
use Test::More;

my $src = abs_path("$FindBin::RealBin/../../examples/alembic");
die "examples/alembic not found next to test/\n" unless defined $src && -f "$src/alembic.ini";
my $recipe = PostgreSQL::Test::Utils::tempdir('alembic');
system('cp', '-a', "$src/.", $recipe) == 0 or die "cp: $?";
my ($LOCK) = slurp_file("$recipe/alembic.ini") =~ /^zklock_lock\s*=\s*(\S+)\s*$/m or die 'no zklock_lock';

# The two revisions, in alembic's template's form.
for my $r ([ '0004', '0003' ], [ '0005', '0004' ])
{
	my ($rev, $down) = @$r;
	my $body =
	  $rev eq '0004'
	  ? qq{    op.execute("INSERT INTO migration_log VALUES ('0004', pg_backend_pid(), clock_timestamp())")
    with op.get_context().autocommit_block():
        op.execute("CREATE INDEX CONCURRENTLY account_name ON account (name)")
    op.execute("CREATE TABLE lock_seen (revision text, pid integer, held boolean)")
    op.execute("INSERT INTO lock_seen VALUES ('0004', pg_backend_pid(), zk_lock_token('$LOCK') IS NOT NULL)")
    op.execute("SELECT pg_sleep(0.5)")
    op.execute("UPDATE migration_log SET ended = clock_timestamp() WHERE revision = '0004' AND pid = pg_backend_pid() AND ended IS NULL")
}
	  : qq{    op.execute("INSERT INTO migration_log VALUES ('0005', pg_backend_pid(), clock_timestamp())")
    op.execute("INSERT INTO lock_seen VALUES ('0005', pg_backend_pid(), zk_lock_token('$LOCK') IS NOT NULL)")
    op.execute("UPDATE migration_log SET ended = clock_timestamp() WHERE revision = '0005' AND pid = pg_backend_pid() AND ended IS NULL")
};
	append_to_file(
		"$recipe/migrations/versions/${rev}_autocommit.py", qq{"""revision $rev of zklock's test 112"""
from alembic import op

revision = "$rev"
down_revision = "$down"
branch_labels = None
depends_on = None


def upgrade() -> None:
$body

def downgrade() -> None:
    pass
});
}

my $zk = zk_start(1);
my $a = zklock_node('a', $zk);

sub deploy_start
{
	my ($name, $db, @x) = @_;
	my $url = "postgresql+psycopg2:///$db?host=" . $a->host . '&port=' . $a->port . "&application_name=$name";
	my @cmd = ('/usr/bin/python3', '-m', 'alembic', '-c', "$recipe/alembic.ini",
		map({ ('-x', $_) } "url=$url", @x), 'upgrade', 'head');
	return deployer_start($name, \@cmd);
}

sub applied
{
	my ($db) = @_;
	return $a->safe_psql($db,
		"SELECT string_agg(revision, ' ' ORDER BY started), count(DISTINCT pid), "
		  . "bool_and(ended IS NOT NULL AND ended <= coalesce(next, 'infinity')) "
		  . 'FROM (SELECT *, lead(started) OVER (ORDER BY started) AS next FROM migration_log) l');
}

# ---------------------------------------------------------------------
# (1) Session scope: two deployers at once, in each way of waiting.
# ---------------------------------------------------------------------
my $gate = bg_session($a);

# Two deployers of database $db started behind the test's hold of the lock;
# $ready says when both are waiting.  Returns them once they ended.
sub race
{
	my ($db, $ready, @x) = @_;
	$a->safe_psql('postgres', "CREATE DATABASE $db");
	$a->safe_psql($db, 'CREATE EXTENSION zklock');
	$gate->query_safe("SELECT zk_lock_acquire('$LOCK')");
	my @d = map { deploy_start("$db-$_", $db, @x) } 1, 2;
	wait_until(sub { $ready->(@d) }, 60, "both deployers of $db waiting");
	$gate->query_safe("SELECT zk_lock_release('$LOCK')");
	deployer_finish($_) for @d;
	# The one that applied revisions first.
	return ((grep { $_->{upgrades} ne '' } @d), (grep { $_->{upgrades} eq '' } @d));
}

sub checks
{
	my ($db, $what) = @_;
	is(applied($db), '0001 0002 0003 0004 0005|1|t', "$what: each revision applied once, in order, by one backend");
	is($a->safe_psql($db, "SELECT string_agg(revision || '=' || held, ' ' ORDER BY revision) FROM lock_seen"),
		'0004=true 0005=true', "$what: the lock was held after the autocommit block and in the revision after it");
	is($a->safe_psql($db, "SELECT indisvalid FROM pg_index WHERE indexrelid = 'account_name'::regclass"),
		't', "$what: the index built concurrently is valid");
	is($a->safe_psql($db, 'SELECT version_num FROM alembic_version'), '0005', "$what: alembic_version is head");
	wait_until(sub { $a->safe_psql('postgres', 'SELECT count(*) FROM zk_locks') eq '0' }, 30, 'the lock released')
	  and pass("$what: the session-scope lock is released after the run");
}

my $ALL = '->0001 0001->0002 0002->0003 0003->0004 0004->0005';

# zklock_wait = queue (the default): the second deployer waits in
# zk_lock_acquire, in a transaction; CREATE INDEX CONCURRENTLY waits for
# that transaction, which waits for the lock: a deadlock, whose victim is
# the waiting deployer.
my ($first, $second) = race('app1',
	sub { $a->safe_psql('postgres', "SELECT count(*) FROM zk_lock_contenders('$LOCK') WHERE state = 'waiting'") eq '2' });
is($first->{rc}, 0, '(1) queue: the first deployer exits 0');
is($first->{upgrades}, $ALL, '(1) queue: having applied the five revisions');
isnt($second->{rc}, 0, '(1) queue: the deployer waiting in the queue fails');
like($second->{err}, qr/DeadlockDetected/, '(1) queue: with 40P01, a deadlock with CREATE INDEX CONCURRENTLY');
is($second->{upgrades}, '', '(1) queue: having applied nothing');
checks('app1', '(1) queue');

# zklock_wait = poll: the second deployer tries every half second, holding
# no snapshot in between: both exit 0.
($first, $second) = race(
	'app2',
	sub {
		# Both configured alembic's context, the step before the lock.
		deployer_ended($_) for @_;
		return 2 == grep { $_->{err} =~ /Will assume transactional DDL/ } @_;
	},
	'zklock_wait=poll');
is(join(' ', $first->{rc}, $second->{rc}), '0 0', '(1) poll: both deployers exit 0');
is($first->{upgrades}, $ALL, '(1) poll: one applied the five revisions');
is($second->{upgrades}, '', '(1) poll: the other, having waited, none');
checks('app2', '(1) poll');

# ---------------------------------------------------------------------
# (2) Transaction scope: the recipe's check stops the deploy.
# ---------------------------------------------------------------------
$a->safe_psql('postgres', 'CREATE DATABASE app3');
$a->safe_psql('app3', 'CREATE EXTENSION zklock');
my $t = deployer_finish(deploy_start('deploy-xact', 'app3', 'zklock_scope=transaction'));
isnt($t->{rc}, 0, '(2) transaction scope: the deploy fails');
like($t->{err}, qr/zklock: the lock '\Q$LOCK\E' was released during revision 0004: .*autocommit_block/,
	'(2) saying the lock was released during revision 0004 by an autocommit block');
is($a->safe_psql('app3', 'SELECT version_num FROM alembic_version'), '0003',
	'(2) alembic_version stays at 0003: 0004\'s version was rolled back');
is($a->safe_psql('app3', "SELECT to_regclass('lock_seen') IS NULL"), 't',
	'(2) what 0004 did after the block was rolled back');
unlike($t->{upgrades}, qr/0004->0005/, '(2) 0005 never ran');
# A hold given up as its backend exits shows as releasing in zk_locks until
# ZooKeeper answers the delete.
ok(wait_until(sub { $a->safe_psql('postgres', 'SELECT count(*) FROM zk_locks') eq '0' }, 30,
		'zk_locks to be empty'),
	'(2) nothing left held once the deletes are answered');

$gate->quit;
done_testing();
