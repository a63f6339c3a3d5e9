# The extension scripts against a role that may CREATE in the target schema
# (issue 42): such a role plants in the schema an exact-match variant of
# every operator and of the functions the scripts use (=, <> on oid and
# integer, oid and regclass, oid and regprocedure; >= of smallint and
# integer, - of integers; quote_ident(name), acldefault(text, oid), ...),
# each of which makes the role superuser and leaves a row in a table when
# it runs.  CREATE EXTENSION zklock SCHEMA that_schema, and updates from
# 1.0, 1.1, 1.2 and 1.3 to the newest version (with zk_status() granted to
# a monitoring role, so that the updates copying its grants run every
# line), leave the role ordinary and the table empty: every operator and
# function of the scripts is pg_catalog's.  No ZooKeeper is needed.
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::RealBin/../lib";
use ZklockTest;
use Test::More;

# The worker never reaches a server here (nothing listens on port 1).
my $a = zklock_node('a', undef, hosts => '127.0.0.1:1', extension => 0);
$a->safe_psql('postgres', 'CREATE ROLE mallory LOGIN; CREATE ROLE monitor');

# What mallory plants: name, argument types, result, and the expression the
# planted function returns (so that a script calling it would go on).
my @operators = (
	[ '=',  'oid',      'integer',      'pg_catalog.oideq($1, $2::pg_catalog.oid)' ],
	[ '<>', 'oid',      'integer',      'pg_catalog.oidne($1, $2::pg_catalog.oid)' ],
	[ '=',  'oid',      'regclass',     'pg_catalog.oideq($1, $2::pg_catalog.oid)' ],
	[ '=',  'oid',      'regprocedure', 'pg_catalog.oideq($1, $2::pg_catalog.oid)' ],
	[ '=',  'regclass', 'oid',          'pg_catalog.oideq($1::pg_catalog.oid, $2)' ],
	[ '>=', 'smallint', 'integer',      'pg_catalog.int24ge($1, $2)' ],
	[ '-',  'integer',  'integer',      'pg_catalog.int4mi($1, $2)' ],
	[ '=',  'text',     'name',         'pg_catalog.texteq($1, $2::pg_catalog.text)' ],
	[ '=',  'name',     'text',         'pg_catalog.texteq($1::pg_catalog.text, $2)' ],);
my @functions = (
	[ 'quote_ident',  'name',            'text',      'pg_catalog.quote_ident($1::pg_catalog.text)' ],
	[ 'acldefault',   'text, oid',       'aclitem[]', 'pg_catalog.acldefault($1::pg_catalog."char", $2)' ],
	[ 'format',       'text, name',      'text',      'pg_catalog.format($1, $2)' ],
	[ 'format',       'text, oid',       'text',      'pg_catalog.format($1, $2)' ],
	[ 'position',     'bytea, text',     'integer',   'pg_catalog.position($1, $2::pg_catalog.bytea)' ],
	[ 'convert_from', 'bytea, text',     'text',      'pg_catalog.convert_from($1, $2::pg_catalog.name)' ],
	[ 'substring',    'bytea, bigint, bigint', 'bytea', 'pg_catalog.substring($1, $2::int, $3::int)' ],
	[ 'pg_get_userbyid', 'regrole',      'name',      'pg_catalog.pg_get_userbyid($1)' ],
	[ 'now',          'integer',         'timestamptz', 'pg_catalog.now()' ],);

sub plant
{
	my ($db) = @_;
	my $sql = "CREATE TABLE shared_ext.hits (what text);\nGRANT INSERT ON shared_ext.hits TO PUBLIC;\n";
	my $n = 0;
	my $body = sub {
		my ($fn, $args, $ret, $sig, $expr) = @_;
		return qq{CREATE FUNCTION shared_ext.$fn($args) RETURNS $ret LANGUAGE plpgsql AS \$f\$
BEGIN
	INSERT INTO shared_ext.hits VALUES ('$sig');
	BEGIN
		EXECUTE 'ALTER ROLE mallory SUPERUSER';
	EXCEPTION WHEN OTHERS THEN NULL;
	END;
	RETURN $expr;
END
\$f\$;
};
	};
	for my $o (@operators)
	{
		my ($op, $left, $right, $expr) = @$o;
		my $fn = 'op' . ++$n;
		$sql .= $body->($fn, "$left, $right", $op eq '-' ? 'integer' : 'boolean', "$op($left, $right)", $expr);
		$sql .= "CREATE OPERATOR shared_ext.$op (LEFTARG = $left, RIGHTARG = $right, FUNCTION = shared_ext.$fn);\n";
	}
	for my $f (@functions)
	{
		my ($name, $args, $ret, $expr) = @$f;
		$sql .= $body->($name, $args, $ret, "$name($args)", $expr);
	}
	$a->safe_psql($db, $sql, extra_params => [ '-U', 'mallory' ]);
}

sub ordinary
{
	my ($db, $what) = @_;
	is($a->safe_psql('postgres', "SELECT rolsuper FROM pg_roles WHERE rolname = 'mallory'"),
		'f', "$what: the planting role is still ordinary");
	is($a->safe_psql($db, 'SELECT string_agg(DISTINCT what, \', \') FROM shared_ext.hits'),
		'', "$what: none of the planted operators and functions ran");
	$a->safe_psql('postgres', 'ALTER ROLE mallory NOSUPERUSER');
}

my $default = $a->safe_psql('postgres',
	"SELECT default_version FROM pg_available_extensions WHERE name = 'zklock'");
for my $version ('', '1.0', '1.1', '1.2', '1.3')
{
	my $db = $version eq '' ? 'fresh' : 'v' . ($version =~ s/\.//r);
	$a->safe_psql('postgres', "CREATE DATABASE $db");
	$a->safe_psql($db, 'CREATE SCHEMA shared_ext; GRANT CREATE, USAGE ON SCHEMA shared_ext TO mallory');
	plant($db);
	is( $a->safe_psql(
			$db, "SELECT count(*) FROM pg_operator WHERE oprnamespace = 'shared_ext'::regnamespace"),
		scalar(@operators), "$db: mallory planted her operators");
	my $at = $version eq '' ? '' : " VERSION '$version'";
	$a->safe_psql($db, "CREATE EXTENSION zklock SCHEMA shared_ext$at");
	if ($version eq '')
	{
		ordinary($db, "CREATE EXTENSION zklock SCHEMA shared_ext");
		next;
	}
	# A granted zk_status() makes the updates copying its grants run every
	# line of their loop.
	$a->safe_psql($db, 'GRANT EXECUTE ON FUNCTION shared_ext.zk_status() TO monitor');
	ordinary($db, "CREATE EXTENSION zklock VERSION '$version'");
	$a->safe_psql($db, 'ALTER EXTENSION zklock UPDATE');
	is($a->safe_psql($db, "SELECT extversion FROM pg_extension WHERE extname = 'zklock'"),
		$default, "$db: updated from $version to $default");
	ordinary($db, "ALTER EXTENSION zklock UPDATE from $version");
}

done_testing();
