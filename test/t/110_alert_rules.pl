# The alert rules and the exporter's bound (issue 47).
#  (1) monitoring/zklock_rules.yaml passes `promtool check rules`, and its
#      unit tests (monitoring/zklock_rules_test.yaml: which alert fires
#      when, and which must not) pass `promtool test rules`.
#  (2) The per-lock series are bounded: with 36 lock names in zk_lock_stats
#      (30 never contended, 6 that made a request wait), the exporter with
#      monitoring/zklock_queries.yaml exports the 15 zklock_lock_stats_*
#      series of the 20 most contended rows only (the default of
#      zklock_exporter.top_locks): 300 series, not 540, the 6 contended
#      among them, and zklock_lock_stats_info_top_locks says 20.
#  (3) ALTER ROLE prometheus SET zklock_exporter.top_locks = 3: 45 series,
#      those of the three rows that come first in zk_lock_stats ordered as
#      documented (longest total wait first); 0: none.
#  (4) Every metric the rules name is one the exporter exports: a rule on a
#      misspelt metric would never fire, and its unit test would not see it.
#  (5) The runbooks the alerts name, in doc/operations.md, pasted as
#      written: "Freeing a stuck lock" names the holder, its revocation
#      changes nothing under on_revoke = ignore, ending the holder grants
#      the waiter; the other runbooks' commands run without an error.
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::RealBin/../lib";
use ZklockTest;
use ZklockTest::Cleanup qw(@holders);
use Test::More;
use PostgreSQL::Test::Utils;
use HTTP::Tiny;
use IPC::Run;
use POSIX ();

my $promtool = '/usr/bin/promtool';
my $exporter_bin = '/usr/bin/prometheus-postgres-exporter';
for ($promtool, $exporter_bin)
{
	plan skip_all => "$_ is not installed (test/install-deps.sh installs it)" unless -x $_;
}
my $mon = "$FindBin::RealBin/../../monitoring";
my $rules = "$mon/zklock_rules.yaml";
my $queries = "$mon/zklock_queries.yaml";

# ---------------------------------------------------------------------
# (1) promtool.
# ---------------------------------------------------------------------
my ($out, $err) = run_command([ $promtool, 'check', 'rules', $rules ]);
like($out, qr/SUCCESS: \d+ rules found/, '(1) promtool check rules: the rules file is valid')
  or diag($out, $err);
# promtool test rules reads the rule files relative to the test file.
($out, $err) = run_command([ $promtool, 'test', 'rules', "$mon/zklock_rules_test.yaml" ]);
like($out, qr/^\s*SUCCESS\s*$/m, '(1) promtool test rules: every alert fires when, and only when, its test says')
  or diag($out, $err);
unlike($out . $err, qr/FAILED/, '(1) no rule test failed');

# ---------------------------------------------------------------------
# (2) The exporter over 36 lock names.
# ---------------------------------------------------------------------
my $zk = zk_start(1);
my $a = zklock_node('a', $zk);
$a->safe_psql(
	'postgres', q{
CREATE ROLE monitoring_role;
CREATE ROLE prometheus LOGIN IN ROLE pg_monitor, monitoring_role;
GRANT EXECUTE ON FUNCTION zk_locks_internal(), zk_status(), zk_semaphore_contenders(text) TO monitoring_role;
GRANT SELECT ON zk_locks TO monitoring_role;
});

# 30 names granted at once, never contended.
$a->safe_psql(
	'postgres', q{
DO $$BEGIN
  FOR i IN 1..30 LOOP
    PERFORM zk_lock_acquire('cold' || i);
    PERFORM zk_lock_release('cold' || i);
  END LOOP;
END$$});
# 6 names each held by one session while another waits for them in vain.
my $holder = bg_session($a);
$holder->query_safe("SELECT zk_lock_acquire('hot' || i) FROM generate_series(1, 6) i");
for my $i (1 .. 6)
{
	is(sql_sqlstate($a, "SELECT zk_lock_acquire('hot$i', '150ms')"),
		'55P03', "(2) a request for hot$i waits behind its holder and times out");
}
$holder->query_safe('SELECT zk_lock_release_all()');
$holder->quit;
is($a->safe_psql('postgres', 'SELECT count(*) FROM zk_lock_stats'), 36, '(2) zk_lock_stats has 36 rows');
is( $a->safe_psql('postgres', "SELECT string_agg(name, ',' ORDER BY name) FROM zk_lock_stats WHERE waited > 0"),
	'hot1,hot2,hot3,hot4,hot5,hot6',
	'(2) of which the six hot ones waited');

# The exporter, as doc/integrations.md runs it; stopped by pid however the
# test ends (ZklockTest::Cleanup calls ->crash on what is in @holders).
{

	package ExporterProcess;

	sub crash
	{
		my ($self) = @_;
		return unless $self->{pid};
		kill 'TERM', $self->{pid};
		waitpid($self->{pid}, 0);
		$self->{pid} = 0;
		return;
	}
}

my $port = PostgreSQL::Test::Cluster::get_free_port();
my $exporter_log = "$PostgreSQL::Test::Utils::log_path/110_exporter.log";
my $dsn = 'host=' . $a->host . ' port=' . $a->port . ' user=prometheus dbname=postgres';
my $http = HTTP::Tiny->new(timeout => 10);

sub start_exporter
{
	my $pid = fork // die "fork: $!";
	if ($pid == 0)
	{
		open(STDOUT, '>>', $exporter_log) or POSIX::_exit(126);
		open(STDERR, '>&', \*STDOUT) or POSIX::_exit(126);
		$ENV{DATA_SOURCE_NAME} = $dsn;
		exec($exporter_bin, "--web.listen-address=127.0.0.1:$port", "--extend.query-path=$queries")
		  or POSIX::_exit(127);
	}
	my $e = bless { pid => $pid }, 'ExporterProcess';
	push @holders, $e;
	return $e;
}

# One scrape: the series { 'name{labels}' => value } (labels as printed)
# and the metrics' names {type}{name}; undef when the exporter does not
# answer.
sub scrape
{
	my $r = $http->get("http://127.0.0.1:$port/metrics");
	return undef unless $r->{success};
	my %m = (type => {});
	for my $line (split /\n/, $r->{content})
	{
		if ($line =~ /^# TYPE (\S+) (\S+)$/)
		{
			$m{type}{$1} = $2;
			next;
		}
		next if $line =~ /^#/ || $line !~ /\S/;
		my ($series, $value) = $line =~ /^(\S+(?:\{.*\})?) (\S+)$/
		  or die "unparsed metric line: $line";
		$m{series}{$series} = $value;
	}
	return \%m;
}

# A scrape once the exporter answers, with no query error.
sub good_scrape
{
	my $m;
	wait_until(sub { $m = scrape(); $m && ($m->{series}{pg_exporter_last_scrape_error} // 1) == 0 },
		30, 'the exporter answers without a query error')
	  or BAIL_OUT("the exporter does not answer; see $exporter_log");
	return $m;
}

# The per-lock series of a scrape, and the set of "lock/kind" they cover.
sub lock_series
{
	my ($m) = @_;
	my @s = grep { /^zklock_lock_stats_(?!info_)/ } keys %{ $m->{series} };
	my %locks;
	for (@s)
	{
		my ($lock) = /lock="([^"]*)"/ or die "no lock label: $_";
		my ($kind) = /kind="([^"]*)"/ or die "no kind label: $_";
		$locks{"$lock/$kind"} = 1;
	}
	return (scalar(@s), \%locks);
}

my $exporter = start_exporter();
my $m = good_scrape();
my ($n, $locks) = lock_series($m);
is($n, 15 * 20, '(2) 300 per-lock series: 15 for each of the 20 rows of the default top');
is(scalar(keys %$locks), 20, '(2) of 20 lock names and kinds');
ok(!(grep { !$locks->{"hot$_/exclusive"} } 1 .. 6), '(2) the six contended locks among them')
  or diag(join(' ', sort keys %$locks));
is($m->{series}{'zklock_lock_stats_info_entries{server="' . $a->host . ':' . $a->port . '"}'},
	36, '(2) zklock_lock_stats_info_entries still counts all 36');
my ($top) = map { $m->{series}{$_} } grep { /^zklock_lock_stats_info_top_locks\b/ } keys %{ $m->{series} };
is($top, 20, '(2) zklock_lock_stats_info_top_locks = 20');

# ---------------------------------------------------------------------
# (4) The metrics the rules name.
# ---------------------------------------------------------------------
my %named = map { $_ => 1 }
  map { /\b((?:zklock|pg)_[a-z0-9_]+)\b/g } grep { /^\s*expr:/ } split /\n/, slurp_file($rules);
my @missing = grep { !exists $m->{type}{$_} } sort keys %named;
cmp_ok(scalar(keys %named), '>=', 10, '(4) the rules name at least 10 metrics');
is_deeply(\@missing, [], '(4) every metric the rules name is exported: ' . join(' ', sort keys %named));

# ---------------------------------------------------------------------
# (3) A top of 3, then of 0, set on the exporter's role.
# ---------------------------------------------------------------------
$exporter->crash;
$a->safe_psql('postgres', 'ALTER ROLE prometheus SET zklock_exporter.top_locks = 3');
$exporter = start_exporter();
$m = good_scrape();
($n, $locks) = lock_series($m);
is($n, 15 * 3, '(3) top_locks = 3: 45 per-lock series');
my $expected = $a->safe_psql(
	'postgres', q{
SELECT string_agg(name || '/' || kind, ',' ORDER BY name || '/' || kind)
FROM (SELECT name, kind FROM zk_lock_stats
      ORDER BY total_wait_time DESC, waited DESC, acquired_session + acquired_xact DESC, name, kind
      LIMIT 3) t});
is(join(',', sort keys %$locks), $expected, "(3) those of the three longest total waits: $expected");
like($expected, qr/^hot\d\/exclusive,hot\d\/exclusive,hot\d\/exclusive$/, '(3) all three contended ones');

$exporter->crash;
$a->safe_psql('postgres', 'ALTER ROLE prometheus SET zklock_exporter.top_locks = 0');
$exporter = start_exporter();
$m = good_scrape();
($n) = lock_series($m);
is($n, 0, '(3) top_locks = 0: no per-lock series');
ok(exists $m->{type}{zklock_status_acquired_total}, '(3) and the other zklock series still there');

$exporter->crash;
ok(!defined scrape(), 'the exporter is stopped');

# ---------------------------------------------------------------------
# (5) The runbooks the alerts name (doc/operations.md, "Runbooks"), their
# commands pasted as written, with the placeholders (the holder's host,
# port and pid) filled in.
# ---------------------------------------------------------------------
my %runbook;
{
	my ($all) = slurp_file("$FindBin::RealBin/../../doc/operations.md") =~ /^## Runbooks\n(.*?)(?=^## |\z)/ms;
	for my $part (split /^### /m, $all // '')
	{
		my ($title, $body) = $part =~ /^(\S.*?)\n(.*)\z/s or next;
		$runbook{$title} = [ $body =~ /^ *```sh\n(.*?)^ *```/msg ];
	}
}
is_deeply([ sort keys %runbook ],
	[ 'A deploy host vanished', 'A session expired', 'Freeing a stuck lock', 'Slots are full', 'ZooKeeper is down' ],
	'(5) doc/operations.md has the five runbooks');

# Run one block of a runbook with bash, as a DBA would paste it, against
# node a; returns (exit status, stdout and stderr).
sub paste
{
	my ($block, %fill) = @_;
	$block =~ s/\b$_\b/$fill{$_}/g for keys %fill;
	local $ENV{PGHOST} = $a->host;
	local $ENV{PGPORT} = $a->port;
	local $ENV{PGDATABASE} = 'postgres';
	my ($out, $err) = ('', '');
	IPC::Run::run([ 'bash', '-e', '-c', $block ], '<', \undef, '>', \$out, '2>', \$err, IPC::Run::timeout(30));
	return ($? >> 8, $out . $err);
}

# Freeing a stuck lock: a holder, a waiter, the steps in order.
my @free = @{ $runbook{'Freeing a stuck lock'} };
my $stuck = bg_session($a);
my $stuck_pid = $stuck->query_safe("SELECT pg_backend_pid(); SELECT zk_lock_acquire('nightly-export')");
($stuck_pid) = split /\n/, $stuck_pid;
my $waiter = queue_waiter($a, $zk, 'nightly-export', '60s');
my %fill = (HOLDER_HOST => $a->host, HOLDER_PORT => $a->port, 12345 => $stuck_pid);
my $lock_var = "LOCK='nightly-export'\n";
my ($rc, $o) = paste($free[0], %fill);
is($rc, 0, '(5) stuck lock, step 1 runs') or diag($o);
like($o, qr/\|\s*$stuck_pid\s*\|/, '(5) step 1 names the holder\'s pid');
($rc, $o) = paste($free[1], %fill);
like($o, qr/\b$stuck_pid\b.*\bidle\b/, '(5) step 2 shows what the holder does (idle)');
($rc, $o) = paste($lock_var . $free[2], %fill);
like($o, qr/^\s*1\s*$/m, '(5) step 3: zk_lock_revoke counts the holder');
is(lock_state($a, $stuck_pid, 'nightly-export'), 'held', '(5) and, on_revoke being ignore, nothing changes');
($rc, $o) = paste($lock_var . "PID=$stuck_pid\n" . $free[3], %fill);
is($rc, 0, '(5) step 4 runs') or diag($o);
my ($granted) = waiter_grant($waiter);
ok(defined $granted, '(5) step 4 ended the holder: the waiter is granted');
$waiter->{s}->quit;
$stuck->quit;

# The other runbooks' commands run without an error, as written (the
# commands that need a holder's pid, a server log or another host left
# out).
$a->safe_psql('postgres', 'CREATE ROLE deploy LOGIN');
for my $title ('ZooKeeper is down', 'A session expired', 'Slots are full', 'A deploy host vanished')
{
	my $i = 0;
	for my $block (@{ $runbook{$title} })
	{
		$i++;
		next if $block =~ /12345|pg_current_logfile|\bnc\b/;
		($rc, $o) = paste($block, %fill);
		is($rc, 0, "(5) \"$title\", block $i runs as written") or diag($o);
	}
}
is($a->safe_psql('postgres', "SELECT array_to_string(setconfig, ' ') FROM pg_db_role_setting WHERE setrole = 'deploy'::regrole"),
	"idle_in_transaction_session_timeout=10min tcp_keepalives_idle=60 tcp_keepalives_interval=10 tcp_keepalives_count=6 zklock.max_hold_time=1h",
	'(5) "A deploy host vanished": the deploying role has the settings');

done_testing();
