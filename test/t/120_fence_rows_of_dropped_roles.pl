# Fence rows of dropped roles, and what a dump of the fences carries (issue
# 42, point 5).
#  (1) zk_fence_tokens names its role by OID, and a role dropped in any
#      database of the cluster fires nothing here: its rows stay, and the
#      OID may come back with another role, which would inherit the fence
#      (a token of another ensemble, or of a restored database, far ahead,
#      refusing the new role's writes as stale).  An OID cannot be made to
#      come back in a test without wrapping the OID counter; a rename leaves
#      the row as a reuse would, an OID whose role has another name now.
#      From 1.5 such a row is not the role's fence: its first zk_fence,
#      with a proven token older than the row's, is accepted (ZK003 before),
#      and the fence then refuses older tokens again.  Another role's fence
#      is left alone.
#  (2) A dump prints a fence's role and table by name (regrole and
#      regclass), so a restore gives the row to the role and table of that
#      name; a row whose role or table is gone prints as a bare OID, which
#      the restore would give to whatever has that OID there.  Left behind
#      here by a role dropped after the update and by a temporary table,
#      which goes at its session's end without an event trigger.  pg_dump
#      now leaves them out; the other rows are restored, onto the restored
#      table.
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::RealBin/../lib";
use ZklockTest;
use PostgreSQL::Test::Utils;
use Test::More;

my $zk = zk_start(1);
my $a = zklock_node('a', $zk);

# (1)
$a->safe_psql('postgres', q{
CREATE ROLE gone LOGIN;
CREATE ROLE bystander LOGIN;
GRANT EXECUTE ON FUNCTION zk_fence(text, bigint), zk_lock_acquire(text, interval) TO gone, bystander;
});
sub fence_as
{
	my ($role, $resource, $token) = @_;
	$token //= "zk_lock_acquire('$resource', '10s')";
	my ($ret, $out, $err) = $a->psql('postgres',
		"\\set VERBOSITY verbose\nSELECT zk_fence('$resource', $token)",
		extra_params => [ '-U', $role ]);
	return sqlstate_of($err) eq 'ok' && $ret != 0 ? "failed: $err" : sqlstate_of($err);
}
is(fence_as('gone', 'r'), 'ok', 'role gone fences r with its token');
is(fence_as('bystander', 'r'), 'ok', 'role bystander fences r with its token');
# A token far ahead (another ensemble's, a restored database's).
$a->safe_psql('postgres', "UPDATE zk_fence_tokens SET token = token + 1000000 WHERE resource = 'r'");
$a->safe_psql('postgres', 'ALTER ROLE gone RENAME TO newcomer');
is(fence_as('newcomer', 'r'), 'ok',
	"the role now behind gone's OID is not held to gone's fence");
is(fence_as('newcomer', 'r', 1), 'ZK003', '... and its own fence refuses an older token then');
is(fence_as('bystander', 'r'), 'ZK003', "bystander's fence is left as it was (far ahead)");

# (2)
$a->safe_psql('postgres', q{
CREATE DATABASE src;
CREATE ROLE r_live;
CREATE ROLE r_gone;
});
$a->safe_psql('src', q{
CREATE EXTENSION zklock;
CREATE TABLE t_live (id int);
CREATE TABLE t_gone (id int);
INSERT INTO zk_fence_tokens (fencer, resource, token) VALUES ('r_live', 'x', 1), ('r_gone', 'x', 2);
INSERT INTO zk_fence_table_tokens (fenced_table, resource, token) VALUES ('t_live', 'x', 3), ('t_gone', 'x', 4);
CREATE TEMP TABLE t_temp (id int);
INSERT INTO zk_fence_table_tokens (fenced_table, resource, token) VALUES ('t_temp', 'x', 5);
});
$a->safe_psql('postgres', 'DROP ROLE r_gone');
$a->safe_psql('src', 'DROP TABLE t_gone');
is($a->safe_psql('src',
		q{SELECT string_agg(token::text, ',' ORDER BY token) FROM
		   (SELECT token FROM zk_fence_tokens WHERE resource = 'x'
			UNION ALL SELECT token FROM zk_fence_table_tokens WHERE resource = 'x') t}),
	'1,2,3,5', "the dropped role's row and the temporary table's stay behind");

my $dump = $a->basedir . '/src.sql';
$a->command_ok([ 'pg_dump', '-f', $dump, 'src' ], 'pg_dump');
my $text = slurp_file($dump);
my %rows;
while ($text =~ /^COPY public\.(zk_fence\w*tokens) \(([^)]*)\) FROM stdin;\n(.*?)^\\\.$/msg)
{
	my ($table, @columns) = ($1, split /, /, $2);
	my %at = map { $columns[$_] => $_ } 0 .. $#columns;
	my $key = $at{fencer} // $at{fenced_table};
	$rows{$table} = join(' ', map { my @f = split /\t/; "$f[$key]:$f[$at{token}]" } split /\n/, $3);
}
is($rows{zk_fence_tokens}, 'r_live:1', 'the dump carries the fence of the role that exists, by name, and only it');
is($rows{zk_fence_table_tokens}, 'public.t_live:3',
	'... and the fence of the table that exists, by name, and only it');

$a->safe_psql('postgres', 'CREATE DATABASE dst');
$a->safe_psql('dst', 'CREATE TABLE padding (id int)');    # other OIDs here
$a->command_ok([ 'psql', '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-d', 'dst', '-f', $dump ], 'restore');
is($a->safe_psql('dst',
		q{SELECT string_agg(fenced_table::text || ':' || (fenced_table = 't_live'::regclass), ',') FROM zk_fence_table_tokens}),
	't_live:true', 'the restored table fence names the restored table');
is($a->safe_psql('dst', q{SELECT string_agg(fencer::text, ',') FROM zk_fence_tokens}),
	'r_live', 'the restored role fence names its role');

done_testing();
