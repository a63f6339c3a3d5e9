# A fence row outlives neither its table nor its role (issue 42, point 5).
# zk_fence_table_tokens names a table by OID: a row left behind by a
# dropped table would be dumped as a bare number and could, after a restore
# or a later CREATE TABLE, name another relation, which would inherit the
# old fence.  In 1.5 an event trigger removes the rows of every table
# dropped (DROP TABLE by the table's ordinary owner, DROP SCHEMA ...
# CASCADE), leaving the other rows; the update to 1.5 removes the rows of
# tables and roles dropped before it; DROP EXTENSION zklock still works.
# No ZooKeeper is needed: the rows are written directly.
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::RealBin/../lib";
use ZklockTest;
use Test::More;

my $a = zklock_node('a', undef, hosts => '127.0.0.1:1');    # postgres: a fresh 1.5
$a->safe_psql('postgres', 'CREATE ROLE owner_role LOGIN; GRANT CREATE ON SCHEMA public TO owner_role');

my $rows = 'SELECT count(*) FROM zk_fence_table_tokens';
$a->safe_psql('postgres', 'CREATE TABLE kept (id int); CREATE SCHEMA s; CREATE TABLE s.inner_t (id int)');
$a->safe_psql('postgres', 'CREATE TABLE owned (id int)', extra_params => [ '-U', 'owner_role' ]);
$a->safe_psql('postgres',
	"INSERT INTO zk_fence_table_tokens (fenced_table, resource, token) VALUES
	 ('kept', 'r', 1), ('owned', 'r', 2), ('owned', 'q', 3), ('s.inner_t', 'r', 4)");
is($a->safe_psql('postgres', $rows), '4', 'four fence rows, of three tables');

# The table's owner, an ordinary role without rights on the fences, drops it.
$a->safe_psql('postgres', 'DROP TABLE owned', extra_params => [ '-U', 'owner_role' ]);
is($a->safe_psql('postgres', "SELECT string_agg(fenced_table::text || ':' || token, ',' ORDER BY token) FROM zk_fence_table_tokens"),
	'kept:1,s.inner_t:4', "DROP TABLE by its ordinary owner removes the table's rows, and only them");
$a->safe_psql('postgres', 'DROP SCHEMA s CASCADE');
is($a->safe_psql('postgres', "SELECT string_agg(fenced_table::text || ':' || token, ',') FROM zk_fence_table_tokens"),
	'kept:1', "DROP SCHEMA ... CASCADE removes the rows of the tables in it");
$a->safe_psql('postgres', 'CREATE VIEW v AS SELECT 1 AS one; DROP VIEW v');
is($a->safe_psql('postgres', $rows), '1', 'a drop of something else leaves the rows');

# Rows of tables and roles dropped before the update to 1.5.
$a->safe_psql('postgres', 'CREATE DATABASE v14');
$a->safe_psql('v14', "CREATE EXTENSION zklock VERSION '1.4'");
$a->safe_psql('postgres', 'CREATE ROLE gone; CREATE ROLE stays');
$a->safe_psql('v14',
	"CREATE TABLE t_kept (id int); CREATE TABLE t_gone (id int);
	 INSERT INTO zk_fence_table_tokens (fenced_table, resource, token) VALUES ('t_kept', 'r', 1), ('t_gone', 'r', 2);
	 INSERT INTO zk_fence_tokens (fencer, resource, token) VALUES ('gone', 'r', 3), ('stays', 'r', 4);
	 DROP TABLE t_gone");
$a->safe_psql('postgres', 'DROP ROLE gone');
like($a->safe_psql('v14', 'SELECT string_agg(fenced_table::text, \',\' ORDER BY token) FROM zk_fence_table_tokens'),
	qr/^t_kept,\d+$/, 'under 1.4 the dropped table leaves its row behind, as a bare OID');
like($a->safe_psql('v14', 'SELECT string_agg(fencer::text, \',\' ORDER BY token) FROM zk_fence_tokens'),
	qr/^\d+,stays$/, '... and the dropped role its row');
$a->safe_psql('v14', 'ALTER EXTENSION zklock UPDATE');
is($a->safe_psql('v14', 'SELECT string_agg(fenced_table::text, \',\') FROM zk_fence_table_tokens'),
	't_kept', 'the update to 1.5 removes the row of the dropped table');
is($a->safe_psql('v14', 'SELECT string_agg(fencer::text, \',\') FROM zk_fence_tokens'),
	'stays', '... and the row of the dropped role');

is($a->psql('v14', 'DROP EXTENSION zklock'), 0, 'DROP EXTENSION zklock works with the event trigger');
is($a->safe_psql('v14', 'SELECT count(*) FROM pg_event_trigger'), '0', '... which goes with it');

done_testing();
