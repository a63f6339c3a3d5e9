# Every SQL example of the docs runs as written (issue 31).  Each ```sql
# block of README.md and of doc/*.md is run with psql, ON_ERROR_STOP, on a
# cluster with zklock and pg_cron preloaded, in a database of its page
# where README's privileges block ran (it creates zklock and grants to
# app_role, ops_role and monitoring_role), as an ordinary login role that
# is a member of those three and owns a schema of its own: so the
# privileges block must grant what every example needs.  A block that
# creates zklock itself runs as the superuser in a new database of its own
# (the one pg_cron serves, for a block that creates pg_cron too).  A block
# fails the test when psql fails, unless a comment line right above its
# fence says otherwise:
#   <!-- doc-test: error SQLSTATE -->  the block must fail with SQLSTATE;
#   <!-- doc-test: before SQL -->      SQL run first, in the same session
#                                      (the tables the page says exist);
#   <!-- doc-test: superuser REASON --> run as the superuser (a superuser
#                                      setting, CREATE ROLE); REASON required;
#   <!-- doc-test: excerpt REASON -->  not runnable alone (a fragment of a
#                                      larger file); REASON is required.
# Fewer than 10 examples run in all fails too: the test must see the docs
# it claims to check.
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::RealBin/../lib";
use ZklockTest;
use Test::More;
use PostgreSQL::Test::Utils;

my $top = "$FindBin::RealBin/../..";
my @pages = ('README.md', map { s{^\Q$top\E/}{}r } sort glob("$top/doc/*.md"));

# The blocks of a page: [line, sql, marker kind, marker argument].
sub blocks_of
{
	my ($page) = @_;
	my @lines = split /\n/, slurp_file("$top/$page");
	my (@blocks, $in, $marker);
	for my $i (0 .. $#lines)
	{
		my $l = $lines[$i];
		if (defined $in)
		{
			if ($l =~ /^```\s*$/) { push @blocks, $in; undef $in; }
			else { $in->[1] .= "$l\n"; }
			next;
		}
		if ($l =~ /^```sql\s*$/)
		{
			my ($kind, $arg) = ('run', '');
			($kind, $arg) = ($1, $2 // '')
			  if $i > 0 && $lines[ $i - 1 ] =~ /^<!--\s*doc-test:\s*(\w+)\s*(.*?)\s*-->\s*$/;
			$in = [ $i + 1, '', $kind, $arg ];
		}
	}
	return @blocks;
}

my $zk = zk_start(1);
my $a = zklock_node('a', $zk, extension => 0,
	conf => [ "shared_preload_libraries = 'zklock,pg_cron'", "cron.database_name = 'doc_cron'" ]);
$a->safe_psql('postgres', 'CREATE ROLE app_role; CREATE ROLE ops_role; CREATE ROLE monitoring_role; '
	  . 'CREATE ROLE doc_user LOGIN IN ROLE app_role, ops_role, monitoring_role; '
	  . 'ALTER ROLE doc_user SET search_path = doc, public');
my ($privileges) = grep { $_->[1] =~ /CREATE EXTENSION zklock/ && $_->[1] =~ /GRANT EXECUTE/ } blocks_of('README.md');
ok($privileges, "README's privileges block, at line " . ($privileges // [0])->[0]) or BAIL_OUT('no privileges block');

my $dbs = 0;
sub new_db
{
	my ($name, $with_zklock) = @_;
	$name //= 'doc_' . ++$dbs;
	$a->safe_psql('postgres', "CREATE DATABASE $name");
	$a->safe_psql($name, $privileges->[1] . 'CREATE SCHEMA doc AUTHORIZATION doc_user;') if $with_zklock;
	return $name;
}

my $total = 0;
for my $page (@pages)
{
	my @blocks = blocks_of($page);
	my $page_db = new_db(undef, 1);
	my $ran = 0;
	for my $b (@blocks)
	{
		my ($line, $sql, $kind, $arg) = @$b;
		my $what = "$page:$line";
		if ($kind eq 'excerpt' || $kind eq 'superuser')
		{
			isnt($arg, '', "$what is marked $kind, with its reason");
			next if $kind eq 'excerpt';
		}
		ok($kind =~ /^(run|error|before|superuser)$/, "$what: a known marker ($kind)") or next;
		my $db = $page_db;
		my $user = $kind eq 'superuser' ? undef : 'doc_user';
		if ($sql =~ /CREATE EXTENSION zklock/)
		{
			$db = new_db($sql =~ /CREATE EXTENSION pg_cron/ ? 'doc_cron' : undef, 0);
			undef $user;
		}
		my $script = "\\set VERBOSITY verbose\n" . ($kind eq 'before' ? "$arg\n" : '') . $sql;
		my ($ret, $out, $err) = $a->psql($db, $script,
			extra_params => [ '-v', 'ON_ERROR_STOP=1', defined $user ? ('-U', $user) : () ]);
		$ran++;
		if ($kind eq 'error')
		{
			is(sqlstate_of($err), $arg, "$what fails as it says, with $arg");
		}
		else
		{
			is($ret, 0, "$what runs as written") or diag("$sql\n$err");
		}
	}
	note("$page: $ran SQL examples ran");
	$total += $ran;
}
cmp_ok($total, '>=', 10, "the docs' SQL examples ran ($total)");

done_testing();
