# doc/reference.md against the catalog (issue 42): its settings table says
# of every zklock.* setting what pg_settings says (type, default, unit,
# range, context), one row each, no more and no fewer; its table of
# function properties says of every function of a fresh install what
# pg_proc says (result, volatility, strictness, parallel safety); and each
# function the reference's main table declares with RETURNS returns that.
# So the page cannot drift from the code again.  No ZooKeeper is needed.
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::RealBin/../lib";
use ZklockTest;
use Test::More;
use PostgreSQL::Test::Utils;

my $a = zklock_node('a', undef, hosts => '127.0.0.1:1');
my $page = slurp_file("$FindBin::RealBin/../../doc/reference.md");

# The rows of the table whose header line starts with $header.
sub table_rows
{
	my ($header) = @_;
	my @lines = split /\n/, $page;
	my ($i) = grep { index($lines[$_], $header) == 0 } 0 .. $#lines;
	return () unless defined $i;
	my @rows;
	for (my $j = $i + 2; $j <= $#lines && $lines[$j] =~ /^\|/; $j++)
	{
		push @rows, $lines[$j];
	}
	return @rows;
}

# Settings: name, type, default, unit, range, context.
my @doc_settings;
for my $row (table_rows('| setting | type | default | unit | range | context |'))
{
	my @cells = map { s/^\s+|\s+$//gr } split /\|/, $row;
	shift @cells;
	push @doc_settings, join(' | ', @cells[ 0 .. 5 ]);
}
my $catalog_settings = $a->safe_psql(
	'postgres', q{
SELECT format('`%s` | %s | %s | %s | %s | `%s`', name, vartype,
			  CASE WHEN boot_val = '' THEN '(empty)' ELSE '`' || boot_val || '`' END,
			  coalesce('`' || unit || '`', ''),
			  CASE WHEN vartype IN ('integer', 'real') THEN min_val || ' to ' || max_val
				   WHEN vartype = 'enum' THEN array_to_string(enumvals, ', ')
				   ELSE '' END,
			  context)
  FROM pg_settings WHERE name LIKE 'zklock.%' ORDER BY name});
ok(@doc_settings >= 10, 'the reference has a settings table (' . scalar(@doc_settings) . ' rows)');
is(join("\n", sort @doc_settings), join("\n", sort split /\n/, $catalog_settings),
	"the settings table is pg_settings': name, type, default, unit, range, context");

# Function properties.
my $catalog_functions = $a->safe_psql(
	'postgres', q{
SELECT format('| `%s` | `%s` | %s | %s | %s |', p.oid::regprocedure, pg_get_function_result(p.oid),
			  CASE p.provolatile WHEN 'v' THEN 'volatile' WHEN 's' THEN 'stable' ELSE 'immutable' END,
			  CASE WHEN p.proisstrict THEN 'strict' ELSE 'not strict' END,
			  CASE p.proparallel WHEN 'u' THEN 'unsafe' WHEN 'r' THEN 'restricted' ELSE 'safe' END)
  FROM pg_proc p JOIN pg_depend d ON d.classid = 'pg_proc'::regclass AND d.objid = p.oid
 WHERE d.refclassid = 'pg_extension'::regclass AND d.deptype = 'e'
   AND d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'zklock')
 ORDER BY 1});
my @doc_functions = table_rows('| function | returns | volatility | strict | parallel |');
ok(@doc_functions >= 30, 'the reference has a table of function properties (' . scalar(@doc_functions) . ' rows)');
is(join("\n", sort @doc_functions), join("\n", sort split /\n/, $catalog_functions),
	"the function properties are pg_proc's: result, volatility, strictness, parallel safety");

# The main table's RETURNS.
my $checked = 0;
for my $row (table_rows('| function | behaviour |'))
{
	next unless $row =~ /^\| `(\w+)\(([^)]*)\) RETURNS ([^`]+)`/;
	my ($name, $args, $returns) = ($1, $2, $3);
	my $types = join(',', map { (split ' ', s/\s+DEFAULT.*//r, 2)[1] } grep { /\S/ } split /,\s*/, $args);
	is($a->safe_psql('postgres', "SELECT pg_get_function_result('$name($types)'::regprocedure)"),
		$returns, "$name($types) returns $returns, as the reference says");
	$checked++;
}
ok($checked >= 20, "the main table's RETURNS checked for $checked functions");

done_testing();
