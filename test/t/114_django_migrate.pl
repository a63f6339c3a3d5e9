# The Django recipe (examples/django, Debian's python3-django): an app whose
# migrate command replaces Django's and holds a zklock lock in session
# scope around it (issue 47).  Django takes no lock of its own.
# Two deployers of one database race the way deployers started at once can:
# django_migrations exists, empty, and the test locks it until both are
# waiting (for the table or for the lock), then lets go.
#  (1) With the recipe: both exit 0; each migration applied once, in order,
#      by one backend; one printed "Applying shop.0001_initial... OK", the
#      other "No migrations to apply."; the lock is released.
#  (2) Control, Django's own migrate (settings without the app): both read
#      an empty django_migrations and both apply 0001; the deploy goes
#      wrong (one fails on CREATE TABLE of a table the other made).
#  (3) examples/zklock-run.sh, which the recipes of Flyway, Liquibase,
#      Rails, golang-migrate and sqitch use: two runs queued at once run
#      their commands one after the other; a run whose timeout runs out
#      exits 1 without running its command.
use strict;
use warnings FATAL => 'all';

use Cwd qw(abs_path);
use FindBin;
use lib "$FindBin::RealBin/../lib";
use PostgreSQL::Test::Utils;
use ZklockTest;
use ZklockTest::Deployer;
use Test::More;

my $src = abs_path("$FindBin::RealBin/../../examples/django");
die "examples/django not found next to test/\n" unless defined $src && -f "$src/manage.py";
system('/usr/bin/python3', '-c', 'import django') == 0
  or plan skip_all => 'python3-django is not installed (test/install-deps.sh installs it)';
# Absolute: PostgreSQL 18's tempdir is relative to the test's directory, and
# the deployers run from inside the project.
my $project = abs_path(PostgreSQL::Test::Utils::tempdir('django'));
system('cp', '-a', "$src/.", $project) == 0 or die "cp: $?";
# The control's settings: the recipe's, without the app that takes the lock.
append_to_file("$project/settings_nolock.py",
	qq{from settings import *  # noqa: F401,F403\n\nINSTALLED_APPS = ["shop"]\n});
my ($LOCK) = slurp_file("$project/settings.py") =~ /^ZKLOCK_MIGRATE_LOCK = "([^"]+)"/m or die 'no lock name';

my $zk = zk_start(1);
my $a = zklock_node('a', $zk);

sub deploy_start
{
	my ($name, $db, $settings) = @_;
	return deployer_start(
		$name,
		[ '/usr/bin/python3', "$project/manage.py", 'migrate', '--noinput' ],
		dir => $project,
		env => {
			PGHOST => $a->host,
			PGPORT => $a->port,
			PGDATABASE => $db,
			PGAPPNAME => $name,
			DJANGO_SETTINGS_MODULE => $settings
		});
}

sub race
{
	my ($db, $settings) = @_;
	$a->safe_psql('postgres', "CREATE DATABASE $db");
	$a->safe_psql($db, 'CREATE EXTENSION zklock');
	$a->safe_psql($db,
		'CREATE TABLE django_migrations (id serial PRIMARY KEY, app varchar(255) NOT NULL, '
		  . 'name varchar(255) NOT NULL, applied timestamptz NOT NULL)');
	my $hold = bg_session($a, dbname => $db);
	$hold->query_safe('BEGIN; LOCK TABLE django_migrations IN ACCESS EXCLUSIVE MODE');
	my @d = map { deploy_start("$db-$_", $db, $settings) } 1, 2;
	wait_until(
		sub {
			$a->safe_psql('postgres',
				"SELECT count(*) FROM pg_stat_activity WHERE application_name LIKE '$db-_' "
				  . "AND wait_event_type IN ('Lock', 'Extension')") eq '2';
		},
		60,
		"$db: both deployers waiting");
	$hold->query_safe('COMMIT');
	$hold->quit;
	deployer_finish($_) for @d;
	return @d;
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
# (1) The recipe.
# ---------------------------------------------------------------------
my @d = race('app1', 'settings');
is(join(' ', map { $_->{rc} } @d), '0 0', '(1) with zklock: both deployers exit 0');
is(scalar(grep { $_->{out} =~ /Applying shop\.0001_initial\.\.\. OK/ && $_->{out} =~ /Applying shop\.0002_account_email\.\.\. OK/ } @d),
	1, '(1) one applied both migrations');
is(scalar(grep { $_->{out} =~ /No migrations to apply\./ } @d), 1, '(1) the other, having waited, applied none');
is(applied('app1'), '0001 0002|1|t', '(1) each migration applied once, in order, by one backend');
is($a->safe_psql('app1', "SELECT string_agg(name, ' ' ORDER BY id) FROM django_migrations WHERE app = 'shop'"),
	'0001_initial 0002_account_email', '(1) django_migrations records each once');
is($a->safe_psql('postgres', 'SELECT count(*) FROM zk_locks'), '0', '(1) the lock is released');
is($a->safe_psql('postgres', "SELECT count(*) FROM zk_lock_stats WHERE name = '$LOCK' AND waited > 0"),
	'1', "(1) the second deployer waited for $LOCK");

# ---------------------------------------------------------------------
# (2) Control: Django's own migrate.
# ---------------------------------------------------------------------
@d = race('app2', 'settings_nolock');
is(scalar(grep { $_->{out} =~ /Applying shop\.0001_initial/ } @d), 2, '(2) without zklock: both deployers start applying 0001');
ok((grep { $_->{rc} != 0 } @d), '(2) without zklock: a deployer fails');
like(join('', map { $_->{err} } @d), qr/already exists|duplicate key value/, '(2) on a table the other had just created (or was creating)');

# ---------------------------------------------------------------------
# (3) examples/zklock-run.sh, the wrapper of the other tools' recipes:
# two runs at once take turns; a run whose timeout runs out does not run
# its command.
# ---------------------------------------------------------------------
my $wrapper = abs_path("$FindBin::RealBin/../../examples/zklock-run.sh");
my $log = "$project/runs.log";
sub wrap_start
{
	my ($name, $timeout) = @_;
	return deployer_start(
		$name,
		[ 'bash', $wrapper, 'tool-deploy', $timeout, '--', 'bash', '-c',
			"echo \"$name start \$(date +%s.%N)\" >>'$log'; sleep 1; echo \"$name end \$(date +%s.%N)\" >>'$log'" ],
		env => { PGHOST => $a->host, PGPORT => $a->port, PGDATABASE => 'postgres', PGAPPNAME => $name },
		timeout => 60);
}
my $gate = bg_session($a);
$gate->query_safe("SELECT zk_lock_acquire('tool-deploy')");
my @w = map { wrap_start("run-$_", '30s') } 1, 2;
wait_until(
	sub { $a->safe_psql('postgres', "SELECT count(*) FROM zk_lock_contenders('tool-deploy') WHERE state = 'waiting'") eq '2' },
	30, 'both wrapped runs waiting');
my $late = deployer_finish(wrap_start('run-late', '1s'));
is($late->{rc}, 1, '(3) zklock-run.sh: a run whose timeout runs out exits 1');
like($late->{err}, qr/could not obtain ZooKeeper lock "tool-deploy"/, '(3) with psql\'s error');
$gate->query_safe("SELECT zk_lock_release('tool-deploy')");
deployer_finish($_) for @w;
is(join(' ', map { $_->{rc} } @w), '0 0', '(3) the two runs exit 0');
my @ev = map { [split ' '] } split /\n/, slurp_file($log);
is(join(' ', map { $_->[1] } @ev), 'start end start end', '(3) their commands ran one after the other, not overlapping');
is(scalar(grep { $_->[0] eq 'run-late' } @ev), 0, '(3) the late run\'s command never ran');
# zk_lock_release returns before ZooKeeper answers the delete; until then
# zk_locks shows the slot as releasing.
ok(wait_until(sub { $a->safe_psql('postgres', 'SELECT count(*) FROM zk_locks') eq '0' }, 30,
		'zk_locks to be empty'),
	'(3) nothing left held once the last release is answered');
$gate->quit;

done_testing();
