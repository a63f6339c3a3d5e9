# Updates survive the objects of the database's users, and every row- and
# set-returning C function knows the shapes each version declares (issues
# 42 and 48).  For each older version (1.0 to 1.4) a database is created at
# it, and a user view over each function and each view and table of zklock
# (what a monitoring team writes): the new library serves the old
# declarations (each read-only view answers); ALTER EXTENSION zklock UPDATE
# succeeds with the views in place; they still answer, those over
# zk_status() with their old columns (the former function kept under a
# versioned name, zk_status_1_1, _1_3 or _1_4), and zk_status() itself has
# 1.5's 24 columns, early_losses, session_expiries and commits_refused
# among them.  Last, a declaration of a shape no version has, for each C
# entry, is refused with a clear error instead of filling a descriptor the
# library does not know.
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::RealBin/../lib";
use ZklockTest;
use Test::More;

my $zk = zk_start(1);
my $a = zklock_node('a', $zk);    # postgres: a fresh 1.5
$a->safe_psql('postgres', 'CREATE ROLE monitor LOGIN');

# A view over every function (but trigger functions) and every relation of
# the extension, named u_<object>; arguments of each type as a user would
# pass them.  The functions that only read are queried.
my $make_views = q{
DO $$
DECLARE
	f record;
BEGIN
	FOR f IN
		SELECT p.proname, p.oid, p.prorettype = 'void'::regtype AS void,
			   (SELECT string_agg(CASE t WHEN 'text'::regtype THEN '''x'''
										 WHEN 'text[]'::regtype THEN '''{x}''::text[]'
										 WHEN 'integer'::regtype THEN '1'
										 WHEN 'bigint'::regtype THEN '1::bigint'
										 WHEN 'interval'::regtype THEN 'NULL::interval'
										 WHEN 'regclass'::regtype THEN '''pg_class''::regclass' END,
								  ', ' ORDER BY o)
				  FROM unnest(p.proargtypes::oid[]) WITH ORDINALITY a(t, o)) AS args
		  FROM pg_proc p JOIN pg_depend d ON d.classid = 'pg_proc'::regclass AND d.objid = p.oid
		 WHERE d.refclassid = 'pg_extension'::regclass AND d.deptype = 'e'
		   AND d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'zklock')
		   AND p.prorettype <> 'trigger'::regtype
		 ORDER BY p.oid
	LOOP
		EXECUTE format('CREATE VIEW %I AS SELECT %s FROM %I(%s) r',
					   'u_' || f.proname || '_' || f.oid, CASE WHEN f.void THEN '1 AS one' ELSE '*' END,
					   f.proname, coalesce(f.args, ''));
	END LOOP;
	FOR f IN
		SELECT c.relname
		  FROM pg_class c JOIN pg_depend d ON d.classid = 'pg_class'::regclass AND d.objid = c.oid
		 WHERE d.refclassid = 'pg_extension'::regclass AND d.deptype = 'e'
		   AND d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'zklock')
		   AND c.relkind IN ('r', 'v')
	LOOP
		EXECUTE format('CREATE VIEW %I AS SELECT * FROM %I', 'u_' || f.relname, f.relname);
	END LOOP;
END
$$};
my $readers = 'zk_status|zk_locks_internal|zk_lock_contenders|zk_semaphore_contenders|zk_waits_for'
  . '|zk_lock_stats_internal|zk_lock_stats_info_internal|zk_lock_path|zk_locks|zk_lock_stats|zk_lock_stats_info'
  . '|zk_fence_tokens|zk_fence_table_tokens';

# Each reading user view answers: its name and column count, one a line.
sub query_views
{
	my ($db) = @_;
	my @views = split /\n/,
	  $a->safe_psql($db, "SELECT viewname FROM pg_views WHERE viewname ~ '^u_($readers)(_\\d+)?\$' ORDER BY 1");
	my @out;
	for my $v (@views)
	{
		my ($ret, $out, $err) =
		  $a->psql($db, "SELECT count(*) FROM (SELECT * FROM $v LIMIT 1) s, json_object_keys(row_to_json(s))");
		push @out, $ret == 0 ? "$v ok" : "$v: $err";
	}
	return @out;
}

my %kept = ('1.0' => 'zk_status_1_1', '1.1' => 'zk_status_1_1', '1.2' => 'zk_status_1_3', '1.3' => 'zk_status_1_3',
	'1.4' => 'zk_status_1_4');
my %status_columns = ('1.0' => 18, '1.1' => 18, '1.2' => 20, '1.3' => 20, '1.4' => 21);
for my $version ('1.0', '1.1', '1.2', '1.3', '1.4')
{
	my $db = 'v' . ($version =~ s/\.//r);
	$a->safe_psql('postgres', "CREATE DATABASE $db");
	$a->safe_psql($db, "CREATE EXTENSION zklock VERSION '$version'");
	$a->safe_psql($db, 'GRANT EXECUTE ON FUNCTION zk_status() TO monitor');
	$a->safe_psql($db, $make_views);
	my $nviews = $a->safe_psql($db, "SELECT count(*) FROM pg_views WHERE viewname LIKE 'u\\_%'");
	ok($nviews >= 15, "$db: $nviews user views over the objects of zklock $version");

	# The new library serves the old declarations.
	my @before = query_views($db);
	is_deeply([ grep { !/ ok$/ } @before ], [], "$db: the new library serves ${version}'s declarations (" . scalar(@before) . ' views)');
	my $status_view = $a->safe_psql($db, "SELECT viewname FROM pg_views WHERE viewname ~ '^u_zk_status_\\d+\$'");
	is( $a->safe_psql($db, "SELECT count(*) FROM (SELECT * FROM $status_view) s, json_object_keys(row_to_json(s))"),
		$status_columns{$version}, "$db: ${version}'s zk_status() has $status_columns{$version} columns");

	my ($ret, $out, $err) = $a->psql($db, 'ALTER EXTENSION zklock UPDATE');
	is($ret, 0, "$db: ALTER EXTENSION zklock UPDATE from $version succeeds with the user views in place")
	  or diag($err);
	like($err, qr/zk_status\(\) of zklock [\d.]+ is kept as $kept{$version}\(\)/, "$db: ... and says what it kept");
	is($a->safe_psql($db, "SELECT extversion FROM pg_extension WHERE extname = 'zklock'"), '1.5', "$db: now 1.5");
	is($a->safe_psql($db, "SELECT count(*) FROM pg_views WHERE viewname LIKE 'u\\_%'"), $nviews, "$db: every user view is still there");
	is_deeply([ query_views($db) ], \@before, "$db: every reading user view still answers");
	is( $a->safe_psql($db, "SELECT count(*) FROM (SELECT * FROM $status_view) s, json_object_keys(row_to_json(s))"),
		$status_columns{$version}, "$db: the view over zk_status() keeps its $status_columns{$version} columns");
	like($a->safe_psql($db, "SELECT pg_get_viewdef('$status_view')"), qr/FROM $kept{$version}\(\)/,
		"$db: ... through $kept{$version}()");
	is( $a->safe_psql($db,
			'SELECT count(*) FROM zk_status() s, json_object_keys(row_to_json(s))', extra_params => [ '-U', 'monitor' ]),
		'24', "$db: the monitoring role calls 1.5's zk_status(), 24 columns");
	is($a->safe_psql($db, 'SELECT early_losses >= 0 AND session_expiries >= 0 AND commits_refused >= 0 FROM zk_status()'),
		't', "$db: ... early_losses, session_expiries and commits_refused among them");
}

# A shape no version declares, for each C entry: refused, 55000.
my @shapes = (
	[ 'zk_status',                  '', 'OUT a text, OUT b text' ],
	[ 'zk_status',                  '', join(', ', map { "OUT c$_ bigint" } 1 .. 30) ],
	[ 'zk_status_1_5',              '', join(', ', map { "OUT c$_ text" } 1 .. 21) ],
	[ 'zk_locks',                   '', join(', ', map { "OUT c$_ text" } 1 .. 11) ],
	[ 'zk_lock_contenders',         'name text, ', join(', ', map { "OUT c$_ text" } 1 .. 9) ],
	[ 'zk_semaphore_contenders',    'name text, ', join(', ', map { "OUT c$_ text" } 1 .. 7) ],
	[ 'zk_waits_for',               '', join(', ', map { "OUT c$_ text" } 1 .. 14) ],
	[ 'zk_lock_stats',              '', join(', ', map { "OUT c$_ text" } 1 .. 19) ],
	[ 'zk_lock_stats_info',         '', 'OUT a bigint, OUT b bigint, OUT c timestamptz, OUT d text' ],);
my $n = 0;
for my $s (@shapes)
{
	my ($entry, $args, $outs) = @$s;
	$n++;
	my $srf = $entry =~ /^zk_status|_info$/ ? 'record' : 'SETOF record';
	$a->safe_psql('postgres',
		"CREATE FUNCTION bogus_$n($args$outs) RETURNS $srf AS '\$libdir/zklock', '$entry' LANGUAGE C");
	my $call = $args eq '' ? "bogus_$n()" : "bogus_$n('x')";
	my ($ret, $out, $err) = $a->psql('postgres', "\\set VERBOSITY verbose\nSELECT * FROM $call");
	like($err, qr/55000: function \w+\(\) is declared with \d+ result columns, a shape this zklock library does not know/,
		"C entry $entry refuses a declaration of a shape no version has");
}

done_testing();
