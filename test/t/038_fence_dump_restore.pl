# pg_dump and pg_restore keep the fencing tokens: zk_fence_tokens (zk_fence's
# fences, per role) and zk_fence_table_tokens (the trigger's, per table:
# its regclass comes back as the restored table) are configuration tables
# of the extension, so a dump carries their rows, and the
# restored database refuses the tokens the original refused.  The extension
# is dumped from a schema it was moved to (ALTER EXTENSION ... SET SCHEMA),
# and a table fenced by zk_fence_trigger comes back fenced.
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::RealBin/../lib";
use ZklockTest;
use PostgreSQL::Test::Utils;
use Test::More;

my $zk = zk_start(1);
my $a = zklock_node('a', $zk);

# The SQLSTATE $sql ends with in database $db ('ok' when none).
sub sqlstate_in
{
	my ($db, $sql) = @_;
	my ($ret, $out, $err) = $a->psql($db, "\\set VERBOSITY verbose\n$sql");
	my $st = sqlstate_of($err);
	return $st eq 'ok' && $ret != 0 ? "failed: $err" : $st;
}

$a->safe_psql('postgres', q{
	CREATE DATABASE fence_src;
});
$a->safe_psql('fence_src', q{
	CREATE SCHEMA "fence s";
	CREATE EXTENSION zklock WITH SCHEMA "fence s";
	SELECT "fence s".zk_fence('orders', 42);
	SELECT "fence s".zk_fence('invoices', 7);
	CREATE TABLE docs (id int PRIMARY KEY, token bigint);
	CREATE TRIGGER docs_fence BEFORE INSERT OR UPDATE ON docs
		FOR EACH ROW EXECUTE FUNCTION "fence s".zk_fence_trigger('docs', 'token');
	INSERT INTO docs VALUES (1, 10), (2, 11);
	CREATE SCHEMA moved;
	ALTER EXTENSION zklock SET SCHEMA moved;
});
is(sqlstate_in('fence_src', q{SELECT moved.zk_fence('orders', 41)}), 'ZK003',
	'the source refuses an older token after the move');

my $dump = $a->basedir . '/fence_src.dump';
$a->command_ok([ 'pg_dump', '-Fc', '-f', $dump, 'fence_src' ], 'pg_dump of the source');
$a->safe_psql('postgres', 'CREATE DATABASE fence_restored');
$a->command_ok([ 'pg_restore', '--exit-on-error', '-d', 'fence_restored', $dump ],
	'pg_restore into another database');

is($a->safe_psql('fence_restored',
		q{SELECT string_agg(f, ' ' ORDER BY f) FROM
		   (SELECT fencer || ':' || resource || '=' || token AS f FROM moved.zk_fence_tokens
			UNION ALL
			SELECT fenced_table || ':' || resource || '=' || token FROM moved.zk_fence_table_tokens) t}),
	'docs:docs=11 postgres:invoices=7 postgres:orders=42', 'the restored tokens are the source\'s');
is($a->safe_psql('fence_restored',
		q{SELECT extconfig::regclass[]::text FROM pg_extension WHERE extname = 'zklock'}),
	'{moved.zk_fence_tokens,moved.zk_fence_table_tokens}',
	'zk_fence_tokens and zk_fence_table_tokens are still configuration tables of zklock');
is(sqlstate_in('fence_restored', q{SELECT moved.zk_fence('orders', 41)}), 'ZK003',
	'the restored database refuses an older token');
is(sqlstate_in('fence_restored', q{SELECT moved.zk_fence('orders', 42)}), 'ok',
	'... and accepts an equal one');
is(sqlstate_in('fence_restored', q{INSERT INTO docs VALUES (3, 10)}), 'ZK003',
	'the restored table refuses a stale writer');
is(sqlstate_in('fence_restored', q{INSERT INTO docs VALUES (3, 12)}), 'ok',
	'... and takes a newer one');
is($a->safe_psql('fence_restored', q{SELECT string_agg(id || ':' || token, ' ' ORDER BY id) FROM docs}),
	'1:10 2:11 3:12', 'the fenced table\'s rows');

done_testing();
