# zklock 1.0 to the newest version (1.5) with a hold in place: database
# "old" is created at version 1.0, a session takes a lock, ALTER EXTENSION
# zklock UPDATE runs (from another session, while the hold lasts): the hold
# is still there, in zk_locks and in ZooKeeper, and the holder releases it
# normally; 1.1's functions work in the upgraded database.  The upgraded
# database and one created at 1.5 at once (postgres) have the same member
# objects (by pg_describe_object over pg_depend's 'e' entries), the same
# function definitions (pg_get_functiondef), the same privileges on them
# and initial privileges (pg_init_privs, which pg_dump goes by), and the
# same fencing tables, marked for pg_dump alike.  Then 1.1 to 1.5, where
# zk_status() is created again with six more columns: a role
# granted it in a database created at 1.1 can still call it after the
# update and sees the new columns, and the grant is the only difference
# from a fresh 1.5.  Last, 1.2 to 1.5 with fences in place: under 1.2 (the
# new library serving it) a role granted zk_fence still records any token
# as 1.2 did; after the update the 1.2 fences still refuse older tokens
# (zk_fence's, kept for the role, and the trigger's, kept for its table),
# and the role's unproven token is refused (ZK004).
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::RealBin/../lib";
use ZklockTest;
use Test::More;
use PostgreSQL::Test::Utils;

my $zk = zk_start(1);
my $a = zklock_node('a', $zk);    # zklock created in postgres: the fresh 1.5

is($a->safe_psql('postgres', "SELECT default_version FROM pg_available_extensions WHERE name = 'zklock'"), '1.5',
	'the default version is 1.5');
$a->safe_psql('postgres', 'CREATE DATABASE old');
$a->safe_psql('old', "CREATE EXTENSION zklock VERSION '1.0'");
is($a->safe_psql('old', "SELECT extversion FROM pg_extension WHERE extname = 'zklock'"), '1.0', 'old: zklock 1.0');
is($a->safe_psql('postgres', "SELECT extversion FROM pg_extension WHERE extname = 'zklock'"), '1.5', 'postgres: zklock 1.5');
is($a->safe_psql('old', "SELECT count(*) FROM pg_proc WHERE proname IN ('zk_fence', 'zk_lock_verify', 'zk_lock_revoke')"),
	'0', "old: none of 1.1's functions yet");

# A hold taken under 1.0.
my $h = bg_session($a, dbname => 'old');
my $h_pid = $h->query_safe('SELECT pg_backend_pid()');
my $token = $h->query_safe("SELECT zk_lock_acquire('up', '10s')");
like($token, qr/^\d+$/, 'old: a session holds lock up under 1.0');
my $znode = held_znode($a, $h_pid, 'up');

is(sql_result($a, "\\c old\nALTER EXTENSION zklock UPDATE"), '', 'ALTER EXTENSION zklock UPDATE succeeds while the hold lasts');
is($a->safe_psql('old', "SELECT extversion FROM pg_extension WHERE extname = 'zklock'"), '1.5', 'old: now zklock 1.5');

# The hold survived.
is($a->safe_psql('old', "SELECT state || ' ' || fencing_token FROM zk_locks WHERE pid = $h_pid AND name = 'up'"),
	"held $token", 'the hold is still there after the update (zk_locks)');
is(join(',', zk_ls($zk, '/zklock/up')), zk_base($znode), '... and its node in ZooKeeper');
is($h->query_safe("SELECT zk_lock_token('up') = $token AND zk_lock_check('up')"), 't',
	"... and its session still knows it (zk_lock_token, zk_lock_check)");
is($a->safe_psql('old', "SELECT zk_lock_verify('up', $token)"), 't', "old: 1.1's zk_lock_verify sees the hold");
is($a->safe_psql('old', "SELECT zk_lock_revoke('up')"), '1', "old: 1.1's zk_lock_revoke asks the holder");
wait_until(sub { lock_state($a, $h_pid, 'up') eq 'revoke requested' }, 15, 'the holder to be asked');
is($h->query_safe("SELECT zk_lock_release('up')"), 't', 'the holder releases normally');
zk_wait_empty($zk, '/zklock/up', 'after the release');
is($a->safe_psql('old', "SELECT zk_lock_verify('up', $token)"), 'f', 'old: zk_lock_verify: the released token holds no more');
$h->quit;

# The upgraded database has what a fresh 1.5 has.
my $members = q{
SELECT pg_describe_object(classid, objid, objsubid)
  FROM pg_depend
 WHERE refclassid = 'pg_extension'::regclass AND deptype = 'e'
   AND refobjid = (SELECT oid FROM pg_extension WHERE extname = 'zklock')
 ORDER BY 1};
my $old_members = $a->safe_psql('old', $members);
is($old_members, $a->safe_psql('postgres', $members), 'the upgraded database has the member objects of a fresh 1.5');
like($old_members, qr/^function zk_fence\(text,bigint\)$/m, '... among them zk_fence');
like($old_members, qr/^table zk_fence_tokens$/m, '... and the fencing tables');
like($old_members, qr/^table zk_fence_table_tokens$/m, '... both');

my $functions = q{
SELECT p.oid::regprocedure::text || E'\n' || pg_get_functiondef(p.oid)
       || E'\nacl: ' || coalesce(p.proacl::text, '(default)')
       || E'\ninitial: ' || coalesce((SELECT i.initprivs::text FROM pg_init_privs i
                                      WHERE i.objoid = p.oid AND i.classoid = 'pg_proc'::regclass AND i.objsubid = 0), '(none)')
  FROM pg_proc p JOIN pg_depend d ON d.classid = 'pg_proc'::regclass AND d.objid = p.oid
 WHERE d.refclassid = 'pg_extension'::regclass AND d.deptype = 'e'
   AND d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'zklock')
 ORDER BY 1};
my $old_fns = $a->safe_psql('old', $functions);
my $new_fns = $a->safe_psql('postgres', $functions);
is($old_fns, $new_fns, 'the function definitions, their privileges and initial privileges are identical');
if ($old_fns ne $new_fns)
{
	my %new = map { $_ => 1 } split /\n(?=\w+\()/, $new_fns;
	diag("differs after the update:\n$_") for grep { !$new{$_} } split /\n(?=\w+\()/, $old_fns;
}

my $other = q{
SELECT c.relname, c.relkind, coalesce(c.relacl::text, '(default)'),
       (SELECT string_agg(a.attname || ' ' || format_type(a.atttypid, a.atttypmod) || ' ' || a.attnotnull
                          || ' ' || coalesce(pg_get_expr(ad.adbin, ad.adrelid), ''), ', ' ORDER BY a.attnum)
          FROM pg_attribute a LEFT JOIN pg_attrdef ad ON ad.adrelid = a.attrelid AND ad.adnum = a.attnum
         WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped),
       (SELECT string_agg(pg_get_indexdef(i.indexrelid), ', ') FROM pg_index i WHERE i.indrelid = c.oid)
  FROM pg_class c JOIN pg_depend d ON d.classid = 'pg_class'::regclass AND d.objid = c.oid
 WHERE d.refclassid = 'pg_extension'::regclass AND d.deptype = 'e'
   AND d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'zklock')
 ORDER BY 1};
is($a->safe_psql('old', $other), $a->safe_psql('postgres', $other),
	'the relations (the zk_locks view, the fencing table) are the same: columns, defaults, indexes, privileges');
my $dump = q{SELECT e.extconfig::regclass[]::text, e.extcondition::text FROM pg_extension e WHERE extname = 'zklock'};
is($a->safe_psql('old', $dump), $a->safe_psql('postgres', $dump), 'the fencing table is marked for pg_dump alike');
is($a->safe_psql('old', "SELECT pg_get_viewdef('zk_locks')"), $a->safe_psql('postgres', "SELECT pg_get_viewdef('zk_locks')"),
	'the zk_locks view is defined alike');

# 1.1's new functions answer in the upgraded database (the fencing and
# semaphore behaviour is tested by the regression suite and tests 033-034).
is(sql_result($a, "\\c old\nSELECT zk_lock_revoke('nobody')"), '0', 'old: zk_lock_revoke of a free lock: 0');
is(sql_result($a, "\\c old\nSELECT zk_lock_verify('nobody', 1)"), 'f', 'old: zk_lock_verify of a free lock: false');
is( sql_result($a, "\\c old\nBEGIN; SELECT zk_fence('up', 10); SELECT zk_fence('up', 10); COMMIT;"
		  . " SELECT token FROM zk_fence_tokens WHERE resource = 'up'"),
	"\n\n10", 'old: zk_fence accepts a token and records it');
is(sql_sqlstate($a, "\\c old\nSELECT zk_fence('up', 9)"), 'ZK003', 'old: zk_fence refuses a lower one (ZK003)');
is( sql_result($a,
		"\\c old\nSELECT zk_semaphore_try('ups', 2), zk_semaphore_try('ups', 2), zk_semaphore_release('ups'), zk_semaphore_release('ups')"),
	't|t|t|t', 'old: a session takes a semaphore twice (reentrant) and releases it');
zk_wait_empty($zk, '/zklock/ups/leases', 'after the semaphore');

# 1.1 to 1.5 with zk_status() granted to a monitoring role (README's
# monitoring section grants it so): the update must not lose the grant.
$a->safe_psql('postgres', 'CREATE ROLE watcher LOGIN; CREATE DATABASE mid');
$a->safe_psql('mid', "CREATE EXTENSION zklock VERSION '1.1'; GRANT EXECUTE ON FUNCTION zk_status() TO watcher");
my @as_watcher = (extra_params => [ '-U', 'watcher' ]);
my $status = q{SELECT count(*) FROM zk_status() s, json_object_keys(row_to_json(s))};
is($a->safe_psql('mid', $status, @as_watcher), '18', "mid: the role calls 1.1's zk_status() (18 columns)");
$a->safe_psql('mid', 'ALTER EXTENSION zklock UPDATE');
is($a->safe_psql('mid', "SELECT extversion FROM pg_extension WHERE extname = 'zklock'"), '1.5', 'mid: now zklock 1.5');
is($a->safe_psql('mid', $status, @as_watcher), '24', '... the role still calls zk_status(), now with 24 columns');
is( $a->safe_psql(
		'mid', 'SELECT deadlock_checks >= 0 AND deadlocks_found >= 0 AND near_top_listings >= 0'
		  . ' AND early_losses >= 0 AND session_expiries >= 0 AND commits_refused >= 0 FROM zk_status()',
		@as_watcher),
	't',
	'... among them deadlock_checks, deadlocks_found, near_top_listings and 1.5\'s three');
is($a->safe_psql('mid', $members), $a->safe_psql('postgres', $members), 'mid: the member objects of a fresh 1.5');
like((run_command([ 'pg_dump', '--schema-only', '-d', $a->connstr('mid') ]))[0],
	qr/^GRANT ALL ON FUNCTION public\.zk_status\(.*\) TO watcher;$/m, 'mid: pg_dump dumps the grant');
# Without the grant it is a fresh 1.5: definitions, privileges and initial
# privileges.
$a->safe_psql('mid', 'REVOKE EXECUTE ON FUNCTION zk_status() FROM watcher');
is($a->safe_psql('mid', $functions), $new_fns, "mid: the grant was the only difference from a fresh 1.5's functions");

# 1.2 to 1.5 with fences in place.
$a->safe_psql('postgres', 'CREATE ROLE fencer LOGIN; CREATE DATABASE v12');
$a->safe_psql('v12', q{
CREATE EXTENSION zklock VERSION '1.2';
GRANT EXECUTE ON FUNCTION zk_fence(text, bigint) TO fencer;
CREATE TABLE docs (id int, token bigint);
CREATE TRIGGER docs_fence BEFORE INSERT ON docs FOR EACH ROW EXECUTE FUNCTION zk_fence_trigger('docs', 'token');
GRANT INSERT ON docs TO fencer;
INSERT INTO docs VALUES (1, 50);
});
my @as_fencer = (extra_params => [ '-U', 'fencer' ]);
is($a->safe_psql('v12', "SELECT zk_fence('f12', 40)", @as_fencer), '',
	"v12: under 1.2 the role records a token no lock gave it, as 1.2 did");
$a->safe_psql('v12', 'ALTER EXTENSION zklock UPDATE');
is($a->safe_psql('v12', "SELECT extversion FROM pg_extension WHERE extname = 'zklock'"), '1.5', 'v12: now zklock 1.5');
is($a->safe_psql('v12', q{SELECT string_agg(fencer || ':' || resource || '=' || token, ' ' ORDER BY fencer::text, resource) FROM zk_fence_tokens}),
	'fencer:docs=50 fencer:f12=40 postgres:docs=50 postgres:f12=40',
	"v12: 1.2's rows are kept for zk_fence's owner and its grantee");
is($a->safe_psql('v12', q{SELECT string_agg(fenced_table || ':' || resource || '=' || token, ' ') FROM zk_fence_table_tokens}),
	'docs:docs=50', "... and for the table whose trigger names the resource");
my $as_fencer = sub { my ($sql) = @_; my ($ret, $out, $err) = $a->psql('v12', "\\set VERBOSITY verbose\n$sql", @as_fencer); return sqlstate_of($err) };
is($as_fencer->("SELECT zk_fence('f12', 39)"), 'ZK003', "v12: the role's fence refuses an older token (ZK003)");
is($as_fencer->("INSERT INTO docs VALUES (2, 49)"), 'ZK003', "... and so does the table's");
is($as_fencer->("SELECT zk_fence('f12', 41)"), 'ZK004', '... and a newer token no lock gave is refused (ZK004)');
is($as_fencer->("INSERT INTO docs VALUES (2, 51)"), 'ZK004', '... by the table too');

done_testing();
