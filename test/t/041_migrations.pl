# Guarded schema migrations with alembic (Debian's python3-alembic), run
# from the recipe the README documents, examples/alembic (alembic.ini,
# env.py and three revisions), as it is.
#
# Four deployers, two "hosts" for each of two clusters, are started at once
# and all queue for the one fleet-wide lock name of alembic.ini (the test
# holds the lock until they have all queued, so that they provably ran at
# the same time).  Then: each cluster has each revision applied exactly
# once, in order, by one backend, and is at head; in each cluster the
# deployer queued first applied the three revisions and the other, having
# waited, found nothing to do (no "Running upgrade" line) and exited 0; the
# two clusters' deploys did not overlap, and went in queue order; no node
# is left in ZooKeeper.  A deployer whose zklock_timeout runs out fails with
# 55P03 and applies nothing.  The session-scope variant
# (transaction_per_migration) serialises the same way.  Control: the same
# two deployers of one database, run at the same time without the lock
# (-x zklock=off), break the deploy, where with the lock they do not.
use strict;
use warnings FATAL => 'all';

use Cwd qw(abs_path);
use FindBin;
use lib "$FindBin::RealBin/../lib";
use PostgreSQL::Test::Utils qw(slurp_file);
use ZklockTest;
use ZklockTest::Deployer;
use Test::More;

# The recipe is outside test/: run from the repository (or a copy of all
# of it, as test/run_all.sh does).
my $recipe = abs_path("$FindBin::RealBin/../../examples/alembic");
die "examples/alembic/alembic.ini not found next to test/: run the test from the repository tree\n"
  unless defined $recipe && -f "$recipe/alembic.ini";
# The lock name every deployer takes, as alembic.ini says it.
my ($LOCK) = slurp_file("$recipe/alembic.ini") =~ /^zklock_lock\s*=\s*(\S+)\s*$/m
  or die "no zklock_lock in $recipe/alembic.ini\n";
my $HEAD_RUN = '->0001 0001->0002 0002->0003';    # the upgrades of a deploy from scratch

# Deployers are alembic processes ("python3 -m alembic": Debian ships
# the module, not the alembic command), run by ZklockTest::Deployer.

my $zk = zk_start(1);
my $a = zklock_node('a', $zk);
my $b = zklock_node('b', $zk);

# Start "python3 -m alembic -c alembic.ini -x url=... -x @x $command"
# against database $db of $node; the connection's application_name is
# $name, which the lock's node data carries to zk_lock_contenders.
sub deploy_start
{
	my ($name, $node, $db, $command, @x) = @_;
	my $url = "postgresql+psycopg2:///$db?host=" . $node->host . '&port=' . $node->port . "&application_name=$name";
	my @cmd = ('/usr/bin/python3', '-m', 'alembic', '-c', "$recipe/alembic.ini",
		map({ ('-x', $_) } "url=$url", @x), split(/ /, $command));
	return deployer_start($name, \@cmd);
}

# The application_names of the requests waiting for $LOCK, in queue order,
# as every client's lock nodes show them (read through $node's worker).
sub queue_of
{
	my ($node) = @_;
	return $node->safe_psql('postgres',
		"SELECT coalesce(string_agg(holder->>'application_name', ' ' ORDER BY position), '') "
		  . "FROM zk_lock_contenders('$LOCK') WHERE state = 'waiting'");
}

# Wait until @deployers all queue for $LOCK (behind the test's hold), or
# one of them ends first; returns the queue (a test fails if incomplete).
sub wait_queued
{
	my ($node, @deployers) = @_;
	local $Test::Builder::Level = $Test::Builder::Level + 1;
	my $queue = '';
	wait_until(
		sub {
			$queue = queue_of($node);
			return (split ' ', $queue) == @deployers || grep { deployer_ended($_) } @deployers;
		},
		60,
		'deployers ' . join(' ', map { $_->{name} } @deployers) . ' queued for the lock');
	is(join(' ', sort split ' ', $queue), join(' ', sort map { $_->{name} } @deployers),
		'waiting for the lock at once: ' . join(' ', map { $_->{name} } @deployers));
	return $queue;
}

# What migration_log of $db shows: revisions in the order they started,
# how many backends applied them, and whether each ended before the next
# started.
sub applied
{
	my ($node, $db) = @_;
	return $node->safe_psql($db,
		"SELECT string_agg(revision, ' ' ORDER BY started), count(DISTINCT pid), "
		  . "bool_and(ended IS NOT NULL AND ended <= coalesce(next, 'infinity')) "
		  . 'FROM (SELECT *, lead(started) OVER (ORDER BY started) AS next FROM migration_log) l');
}

sub version_of
{
	my ($node, $db) = @_;
	return $node->safe_psql($db, 'SELECT coalesce(string_agg(version_num, \' \'), \'\') FROM alembic_version');
}

# doc/integrations.md shows the recipe's files: each piece of its
# alembic.ini and env.py blocks (pieces are separated by "..." lines) is in
# the file run here.
{
	my $readme = slurp_file("$recipe/../../doc/integrations.md");
	my ($section) = $readme =~ /^## Migrations: alembic\n(.*?)^## /ms;
	my %block;
	@block{qw(ini python)} = map { ($section // '') =~ /^```$_\n(.*?)^```/ms ? $1 : '' } qw(ini python);
	for my $f (['ini', "$recipe/alembic.ini"], ['python', "$recipe/migrations/env.py"])
	{
		my ($lang, $file) = @$f;
		my $text = slurp_file($file);
		my @pieces = grep { /\S/ } split /^(?:#\s*)?\.\.\..*\n/m, $block{$lang};
		my @missing = grep { index($text, $_) < 0 } @pieces;
		ok(@pieces && !@missing, "doc/integrations.md's $lang block is the recipe's " . ($file =~ s{.*/examples/}{examples/}r))
		  or diag("not in $file:\n" . join("\n--\n", @missing));
	}
}

my $gate = bg_session($a);

# --- A deployer that gives up: zklock_timeout runs out while another
# holds the lock.
$gate->query_safe("SELECT zk_lock_acquire('$LOCK')");
my $late = deployer_finish(deploy_start('deploy-timeout', $a, 'postgres', 'upgrade head', 'zklock_timeout=1s'));
isnt($late->{rc}, 0, 'a deployer whose zklock_timeout runs out fails');
like($late->{err}, qr/LockNotAvailable\) could not obtain ZooKeeper lock "\Q$LOCK\E"/,
	'... with lock_not_available (55P03), naming the lock');
is($late->{upgrades}, '', '... having run no upgrade');
is($a->safe_psql('postgres', "SELECT to_regclass('alembic_version') IS NULL"), 't', '... nor created alembic_version');

# --- Four deployers at once, two per cluster, one fleet-wide lock name.
my @deployers = map { deploy_start("deploy-$_->[0]", $_->[1], 'postgres', 'upgrade head') }
  (['a1', $a], ['b1', $b], ['a2', $a], ['b2', $b]);
my @queue = split ' ', wait_queued($a, @deployers);
$gate->query_safe("SELECT zk_lock_release('$LOCK')");
deployer_finish($_) for @deployers;

is(join(' ', map { $_->{rc} } @deployers), '0 0 0 0', 'every deployer exits 0');
my %deployer = map { $_->{name} => $_ } @deployers;
my %window;    # cluster => [first revision's start, last revision's end]
for my $c (['a', $a], ['b', $b])
{
	my ($cl, $node) = @$c;
	my $CL = uc $cl;
	is(applied($node, 'postgres'), '0001 0002 0003|1|t',
		"$CL: each revision applied once, in order, one after the other, by one backend");
	is(version_of($node, 'postgres'), '0003', "$CL: alembic_version is head");
	# The two deployers of this cluster, in the order they queued.
	my ($first, $second) = map { $deployer{$_} } grep { /^deploy-$cl/ } @queue;
	is($first->{upgrades}, $HEAD_RUN, "$CL: the deployer queued first ($first->{name}) ran the three upgrades");
	is($second->{upgrades}, '', "$CL: the other ($second->{name}) waited, then ran none");
	$window{$cl} = [ split /\|/, $node->safe_psql('postgres', 'SELECT min(started), max(ended) FROM migration_log') ];
}
# Both clusters' timestamps come from this machine's clock.
my ($before, $after) = $queue[0] =~ /^deploy-a/ ? ('a', 'b') : ('b', 'a');
is( $a->safe_psql('postgres',
		"SELECT '$window{$before}[1]'::timestamptz <= '$window{$after}[0]'::timestamptz, "
		  . "'$window{$after}[1]'::timestamptz <= '$window{$before}[0]'::timestamptz"),
	't|f',
	'the two clusters\' deploys did not overlap; the cluster queued first (' . uc($before) . ') deployed first');
note("deploy windows: A $window{a}[0] to $window{a}[1], B $window{b}[0] to $window{b}[1]");
wait_until(sub { !zk_ls($zk, "/zklock/$LOCK") }, 30, 'no lock node left in ZooKeeper')
  and pass('no lock node left in ZooKeeper');
is($_->safe_psql('postgres', 'SELECT count(*) FROM zk_locks'), '0', uc($_->name) . ': zk_locks is empty')
  for $a, $b;

# --- transaction_per_migration: the lock is taken in session scope, around
# the run.  Two deployers of one database queue behind the test's hold, in
# a known order.
$b->safe_psql('postgres', 'CREATE DATABASE tpm');
$b->safe_psql('tpm', 'CREATE EXTENSION zklock');
$gate->query_safe("SELECT zk_lock_acquire('$LOCK')");
my @tpm;
for my $i (1, 2)
{
	push @tpm, deploy_start("tpm-$i", $b, 'tpm', 'upgrade head', 'transaction_per_migration=true');
	wait_queued($a, @tpm);
}
is($b->safe_psql('postgres', "SELECT string_agg(DISTINCT scope, ' ') FROM zk_locks WHERE name = '$LOCK'"),
	'session', 'with transaction_per_migration the deployers wait for a session-scope lock');
$gate->query_safe("SELECT zk_lock_release('$LOCK')");
deployer_finish($_) for @tpm;
is(join(' ', map { $_->{rc} } @tpm), '0 0', 'both exit 0');
is($tpm[0]{upgrades}, $HEAD_RUN, 'the first ran the three upgrades');
is($tpm[1]{upgrades}, '', 'the second, having waited, ran none');
is(applied($b, 'tpm'), '0001 0002 0003|1|t', 'each revision applied once, in order, by one backend');
is(version_of($b, 'tpm'), '0003', 'alembic_version is head');
wait_until(sub { !zk_ls($zk, "/zklock/$LOCK") && $b->safe_psql('postgres', 'SELECT count(*) FROM zk_locks') eq '0' },
	30, 'the session-scope lock released')
  and pass('the session-scope lock is released after the run');

# --- Control: two deployers of one database race, with the lock and
# without it (-x zklock=off).  The database is stamped at base
# (alembic_version exists, empty) and the test locks that table, so that
# without zklock both deployers read the version before either applies a
# revision, as deployers started at once can; then it lets them go.  With
# zklock the first waits for the table holding the lock, the second for
# the lock.
sub race
{
	my ($db, @x) = @_;
	$a->safe_psql('postgres', "CREATE DATABASE $db");
	$a->safe_psql($db, 'CREATE EXTENSION zklock');
	my $stamp = deployer_finish(deploy_start("$db-stamp", $a, $db, 'stamp base', @x));
	is($stamp->{rc}, 0, "$db: database stamped at base");
	my $hold = bg_session($a, dbname => $db);
	$hold->query_safe('BEGIN; LOCK TABLE alembic_version IN ACCESS EXCLUSIVE MODE');
	my @d = map { deploy_start("$db-$_", $a, $db, 'upgrade head', @x) } 1, 2;
	wait_until(
		sub {
			$a->safe_psql('postgres',
				"SELECT count(*) FROM pg_stat_activity WHERE application_name LIKE '$db-_' "
				  . "AND wait_event_type IN ('Lock', 'Extension')") eq '2'
			  || grep { deployer_ended($_) } @d;
		},
		60,
		"$db: both deployers waiting");
	$hold->query_safe('COMMIT');
	$hold->quit;
	deployer_finish($_) for @d;
	my ($revs) = split /\|/, applied($a, $db);
	note("$db: exit codes @{[ map { $_->{rc} } @d ]}, upgrades run: "
		  . join('; ', map { "$_->{name}: $_->{upgrades}" } @d) . ", revisions committed: $revs");
	return ($revs, @d);
}

my ($revs, @on) = race('race_zklock');
is(join(' ', map { $_->{rc} } @on), '0 0', 'with zklock: both deployers exit 0');
is(join(' ', sort map { $_->{upgrades} || 'none' } @on), "$HEAD_RUN none", 'with zklock: one ran the three upgrades, the other none');
is(applied($a, 'race_zklock'), '0001 0002 0003|1|t', 'with zklock: each revision applied once, in order, by one backend');

my @off;
($revs, @off) = race('race_nolock', 'zklock=off');
is(scalar(grep { $_->{upgrades} =~ /^->0001/ } @off), 2, 'without zklock: both deployers start applying 0001');
ok((grep { $_->{rc} != 0 } @off) || $revs ne '0001 0002 0003',
	'without zklock: the deploy goes wrong (a deployer fails, or a revision is applied twice)');

$gate->quit;
done_testing();
