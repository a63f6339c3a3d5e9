# Moving to a new PostgreSQL major with zklock in use: pg_upgrade from 15
# to 18, and pg_dump of 15 restored into 18.  Runs in the suite of 18 (the
# target's test modules drive both servers) when run_all.sh names the old
# installation, a 15 with zklock installed (ZKLOCK_UPGRADE_FROM, its
# pg_config; run_all.sh installs zklock there first); in any other suite
# it is skipped as a whole (README, "Supported PostgreSQL majors").
# The 15 cluster has zklock 1.2 moved to schema "locks" (ALTER EXTENSION
# ... SET SCHEMA), EXECUTE on zk_lock_acquire and zk_lock_release granted
# to role app and zk_fence's revoked from role other after a grant, fence
# values for two resources and a table fenced by zk_fence_trigger, and has
# held a lock whose token was fenced.
#  (1) pg_upgrade: afterwards the extension, its version, its schema, the
#      ACLs of its functions (as a whole, and app's and other's rights one
#      by one), the fence values and the fenced table are all there;
#  (2) the upgraded cluster's worker opens a ZooKeeper session of its own
#      (not the old cluster's: a data directory carries no session over),
#      a lock is granted at once, its token is above every token the old
#      cluster got, the fence takes it and still refuses the old one;
#  (3) the same from pg_dump (18's, as one should) of the 15 database
#      restored into a fresh 18 cluster.
use strict;
use warnings FATAL => 'all';

use File::Basename qw(dirname);
use FindBin;
use lib "$FindBin::RealBin/../lib";
use ZklockTest;
use PostgreSQL::Test::Utils;
use Test::More;

my $old_config = $ENV{ZKLOCK_UPGRADE_FROM} // '';
my ($new_major) = $ENV{PG_CONFIG} ? `$ENV{PG_CONFIG} --version` =~ /PostgreSQL (\d+)/ : ();
plan skip_all => 'runs in the suite of PostgreSQL 18 with ZKLOCK_UPGRADE_FROM naming a 15'
  unless $old_config && -x $old_config && ($new_major // 0) >= 18;
my $old_bindir = `$old_config --bindir`;
chomp $old_bindir;
my $new_bindir = `$ENV{PG_CONFIG} --bindir`;
chomp $new_bindir;

my $zk = zk_start(1);

# The SQLSTATE $sql ends with on $node ('ok' when none).
sub sqlstate_on
{
	my ($node, $sql) = @_;
	my ($ret, $out, $err) = $node->psql('postgres', "\\set VERBOSITY verbose\n$sql");
	my $st = sqlstate_of($err);
	return $st eq 'ok' && $ret != 0 ? "failed: $err" : $st;
}

# zk_status() of $node, from the schema the extension was moved to.
sub status_of
{
	my ($node) = @_;
	my $out = $node->safe_psql('postgres', 'SELECT * FROM locks.zk_status()', extra_params => ['-x']);
	return { map { split /\|/, $_, 2 } split /\n/, $out };
}

# What must come through a move: the extension's version and schema, the
# ACLs of its functions, the fence values and the fenced table.
my $STATE_SQL = q{
	SELECT e.extversion || ' ' || n.nspname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace
	  WHERE e.extname = 'zklock';
	SELECT string_agg(p.oid::regprocedure::text || ' ' || coalesce(p.proacl::text, '-'), E'\n'
	    ORDER BY p.oid::regprocedure::text)
	  FROM pg_proc p JOIN pg_depend d ON d.classid = 'pg_proc'::regclass AND d.objid = p.oid
	  JOIN pg_extension e ON d.refobjid = e.oid AND d.deptype = 'e' WHERE e.extname = 'zklock';
	SELECT has_function_privilege('app', 'locks.zk_lock_acquire(text, interval)', 'EXECUTE'),
	       has_function_privilege('app', 'locks.zk_fence(text, bigint)', 'EXECUTE'),
	       has_function_privilege('other', 'locks.zk_fence(text, bigint)', 'EXECUTE');
	SELECT string_agg(resource || '=' || token, ' ' ORDER BY resource) FROM locks.zk_fence_tokens;
	SELECT string_agg(id || ':' || token, ' ' ORDER BY id) FROM docs;
};

# The 15 cluster, in use; returns it and the highest token it was given.
sub old_cluster
{
	my ($name) = @_;
	my $old = zklock_node($name, $zk, install_path => dirname($old_bindir), extension => 0,
		conf => "zklock.root = '/zklock-$name'");
	$old->safe_psql('postgres', q{
		CREATE ROLE app;
		CREATE ROLE other;
		CREATE EXTENSION zklock VERSION '1.2';
		CREATE SCHEMA locks;
		ALTER EXTENSION zklock SET SCHEMA locks;
		GRANT USAGE ON SCHEMA locks TO app, other;
		GRANT EXECUTE ON FUNCTION locks.zk_lock_acquire(text, interval), locks.zk_lock_release(text) TO app;
		GRANT EXECUTE ON FUNCTION locks.zk_fence(text, bigint) TO other;
		REVOKE EXECUTE ON FUNCTION locks.zk_fence(text, bigint) FROM other;
		SELECT locks.zk_fence('invoices', 7);
		CREATE TABLE docs (id int PRIMARY KEY, token bigint);
		CREATE TRIGGER docs_fence BEFORE INSERT OR UPDATE ON docs
			FOR EACH ROW EXECUTE FUNCTION locks.zk_fence_trigger('docs', 'token');
	});
	my $token = $old->safe_psql('postgres', q{
		SELECT locks.zk_lock_acquire('upgrade.lock') AS t \gset
		SELECT locks.zk_fence('orders', :t);
		INSERT INTO docs VALUES (1, :t);
		SELECT locks.zk_lock_release('upgrade.lock');
		SELECT :t;
	});
	($token) = $token =~ /(\d+)\s*\z/;
	return ($old, $token);
}

# (2) on $new, whose data came from $old (session $old_session, highest
# token $old_token).
sub check_moved
{
	my ($how, $new, $old_state, $old_session, $old_token) = @_;
	is($new->safe_psql('postgres', $STATE_SQL), $old_state,
		"($how) extension version and schema, function ACLs, fence values and fenced rows are the old cluster's");
	like($old_state, qr/^1\.2 locks\n.*\nt\|f\|f\ndocs=\d+ invoices=7 orders=\d+\n1:\d+$/s,
		"($how) ... which are zklock 1.2 in locks, app's and other's rights, the fences and the row");
	my $session = '';
	wait_until(sub { ($session = status_of($new)->{state} // '') eq 'connected' }, 30,
		"($how) the new cluster's worker is connected");
	my $new_session = status_of($new)->{session_id};
	isnt($new_session, $old_session, "($how) with a ZooKeeper session of its own ($new_session)");
	my $token = $new->safe_psql('postgres', "SET lock_timeout = '5s'; SELECT locks.zk_lock_acquire('upgrade.lock')");
	($token) = $token =~ /(\d+)\s*\z/;
	ok(defined $token && $token > $old_token, "($how) a lock is granted at once, token $token > $old_token");
	is(sqlstate_on($new, "SELECT locks.zk_fence('orders', $token)"), 'ok', "($how) the fence takes the new token");
	is(sqlstate_on($new, "SELECT locks.zk_fence('orders', $old_token)"), 'ZK003',
		"($how) ... and refuses the old cluster's");
	is(sqlstate_on($new, "INSERT INTO docs VALUES (2, $old_token - 1)"), 'ZK003',
		"($how) the fenced table refuses a stale writer");
	return;
}

# Debian 12's 15 (from 15.20) gives every column of every table an
# attribute option pg_attver that the 18 built here (18.6, the newest on
# the Debian mirror, older than 15.20) does not know yet: pg_upgrade and a
# restore of pg_dump's output then fail in PostgreSQL itself, on the first
# table, whatever the extension.  Where the 18 under test refuses the
# option ($unknown), the 15 cluster's columns lose it before the move, the
# only change made to it; a later 18 moves them as they are.
my $unknown_attoption;
sub strip_attver
{
	my ($node) = @_;
	return unless $unknown_attoption;
	$node->safe_psql('postgres', q{
		UPDATE pg_attribute
		   SET attoptions = (SELECT nullif(array_agg(o), '{}') FROM unnest(attoptions) o WHERE o NOT LIKE 'pg_attver=%')
		 WHERE attoptions::text LIKE '%pg_attver=%';
	});
	return;
}

# (1), (2): pg_upgrade.
# initdb of 18 turns data checksums on unless told; the old cluster has none.
my $new = zklock_node('new18', $zk, start => 0, conf => "zklock.root = '/zklock-old15'",
	init => { no_data_checksums => 1 });
$new->start;
my ($probe) = $new->psql('postgres', 'CREATE TEMP TABLE probe (a int); ALTER TABLE probe ALTER COLUMN a SET (pg_attver = 1)');
$unknown_attoption = $probe != 0;
$new->stop;
note('the 18 under test does not know the attribute option pg_attver: the 15 clusters lose it before the move')
  if $unknown_attoption;

my ($old, $old_token) = old_cluster('old15');
my $old_state = $old->safe_psql('postgres', $STATE_SQL);
my $old_session = status_of($old)->{session_id};
strip_attver($old);
$old->stop;

$new->command_ok(
	[
		'pg_upgrade', '--no-sync',
		'-d', $old->data_dir, '-D', $new->data_dir,
		'-b', $old_bindir, '-B', $new_bindir,
		'-s', $new->host, '-p', $old->port, '-P', $new->port,
	],
	'(1) pg_upgrade from 15 to 18 with zklock in use');
$new->start;
check_moved('1, 2', $new, $old_state, $old_session, $old_token);
$new->stop;

# (3) pg_dump of 15, restored into 18.
my ($src, $src_token) = old_cluster('src15');
my $src_state = $src->safe_psql('postgres', $STATE_SQL);
my $src_session = status_of($src)->{session_id};
strip_attver($src);
my $dump = $src->basedir . '/src15.dump';
command_ok([ "$new_bindir/pg_dump", '-Fc', '-h', $src->host, '-p', $src->port, '-f', $dump, 'postgres' ],
	'(3) pg_dump (18) of the 15 database');
# A dump does not say which version of an extension it was taken at, and
# the fence rows of 1.2 do not fit 1.3's table: the extension is created
# first at the dump's version, in its schema (README, "Operations"), and
# the restore leaves out the schema it made.
my $dst = zklock_node('dst18', $zk, extension => 0, conf => "zklock.root = '/zklock-src15'");
$dst->safe_psql('postgres',
	"CREATE ROLE app; CREATE ROLE other; CREATE SCHEMA locks; CREATE EXTENSION zklock VERSION '1.2' SCHEMA locks;");
my $list = $src->basedir . '/src15.list';
my ($toc) = run_command([ "$new_bindir/pg_restore", '-l', $dump ]);
PostgreSQL::Test::Utils::append_to_file($list, join('', grep { !/ SCHEMA - locks / } split /^/, $toc));
$dst->command_ok([ 'pg_restore', '--exit-on-error', '-L', $list, '-d', 'postgres', $dump ], '(3) pg_restore into 18');
check_moved('3', $dst, $src_state, $src_session, $src_token);

done_testing();
