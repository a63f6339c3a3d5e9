# Monitoring with Debian's prometheus-postgres-exporter and the queries file
# monitoring/zklock_queries.yaml, as README's "Monitoring: the Prometheus
# exporter" sets it up: the exporter logs in as a role with pg_monitor that
# is a member of monitoring_role, which has the grants of "Installing" and
# nothing else, with the DSN and flags README gives (the exporter's own
# metrics included), and the test reads /metrics over HTTP as Prometheus
# would.
#  (1) Control: without the zklock grants the queries fail, and the exporter
#      says so (pg_exporter_last_scrape_error 1, no zklock metric but those
#      of zk_lock_stats, which pg_monitor reads through pg_read_all_stats):
#      the error metric the later steps rely on can show a failure.
#  (2) With the documented grants: a session hold, a shared hold, a
#      transaction hold and a waiter give exactly those counts by state,
#      mode and scope (every other combination 0), the counters equal
#      zk_status()'s, the per-lock figures equal zk_lock_stats', and the
#      session state is connected.
#  (3) An operator deletes the transaction hold's node: the hold is counted
#      lost, and lost_total follows zk_status().lost.
#  (4) ZooKeeper stopped: the exporter still answers without a query error,
#      the session state is the one zk_status() shows (not connected), and
#      the counts are still there; ZooKeeper back: connected again.
#  (5) PostgreSQL stopped: pg_up 0 and no zklock series, as README says.
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::RealBin/../lib";
use ZklockTest;
use ZklockTest::Cleanup qw(@holders);
use Test::More;
use PostgreSQL::Test::Utils;
use HTTP::Tiny;
use POSIX ();

my $exporter_bin = '/usr/bin/prometheus-postgres-exporter';
plan skip_all => "$exporter_bin is not installed (test/install-deps.sh installs it)"
  unless -x $exporter_bin;
my $queries = "$FindBin::RealBin/../../monitoring/zklock_queries.yaml";
-r $queries or BAIL_OUT("no queries file at $queries");

my $zk = zk_start(1);
my $a = zklock_node('a', $zk, session_timeout => '4s');

# The exporter logs in as prometheus, with pg_monitor for its own metrics;
# zklock's grants go to monitoring_role, of which prometheus becomes a
# member after the control.
$a->safe_psql('postgres', 'CREATE ROLE monitoring_role; CREATE ROLE prometheus LOGIN IN ROLE pg_monitor');

# ---------------------------------------------------------------------
# The exporter, on a free loopback port, stopped by pid however the test
# ends (ZklockTest::Cleanup calls ->crash on what is in @holders).
# ---------------------------------------------------------------------
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
my $exporter_log = "$PostgreSQL::Test::Utils::log_path/042_exporter.log";
# README's DATA_SOURCE_NAME, on the node's socket (lib/pq uses no SSL there).
my $dsn = 'host=' . $a->host . ' port=' . $a->port . ' user=prometheus dbname=postgres';
# As README runs it: the exporter's own metrics stay on, so that a query
# error of theirs under this role would show too.
my @cmd = ($exporter_bin, "--web.listen-address=127.0.0.1:$port", "--extend.query-path=$queries");
note "exporter: DATA_SOURCE_NAME='$dsn' @cmd";
my $pid = fork // die "fork: $!";
if ($pid == 0)
{
	open(STDOUT, '>>', $exporter_log) or POSIX::_exit(126);
	open(STDERR, '>&', \*STDOUT) or POSIX::_exit(126);
	$ENV{DATA_SOURCE_NAME} = $dsn;
	exec(@cmd) or POSIX::_exit(127);
}
my $exporter = bless { pid => $pid }, 'ExporterProcess';
push @holders, $exporter;

my $http = HTTP::Tiny->new(timeout => 10);

# One scrape: { 'name{label="v",...}' => value } with the labels sorted,
# without the label server="host:port" that the exporter adds to the series
# of its queries (collected in {server}{name}), and the metrics' types in
# {type}{name}; undef when the exporter does not answer.
sub scrape
{
	my $r = $http->get("http://127.0.0.1:$port/metrics");
	return undef unless $r->{success};
	# The last scrape, for a failed test.
	open(my $fh, '>', "$PostgreSQL::Test::Utils::log_path/042_last_scrape.txt") or die $!;
	print $fh $r->{content};
	close $fh;
	my %m = (type => {}, server => {});
	for my $line (split /\n/, $r->{content})
	{
		if ($line =~ /^# TYPE (\S+) (\S+)$/)
		{
			$m{type}{$1} = $2;
			next;
		}
		next if $line =~ /^#/ || $line !~ /\S/;
		my ($name, $labels, $value) = $line =~ /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/
		  or die "unparsed metric line: $line";
		my @l = ($labels // '') =~ /([a-zA-Z_]\w*="(?:[^"\\]|\\.)*")/g;
		for (@l)
		{
			$m{server}{$name}{$1} = 1 if /^server="(.*)"$/;
		}
		@l = grep { !/^server=/ } @l;
		$m{ $name . (@l ? '{' . join(',', sort @l) . '}' : '') } = $value;
	}
	return \%m;
}

# The series of one metric: { 'label="v",...' => value }.
sub series
{
	my ($m, $name) = @_;
	my %s;
	for my $k (keys %$m)
	{
		$s{$1 // ''} = $m->{$k} if $k =~ /^\Q$name\E(?:\{(.*)\})?$/;
	}
	return \%s;
}

# zk_locks grouped as the exporter labels it, from a superuser session:
# { 'mode="...",scope="...",state="..."' => count }.
sub zk_locks_groups
{
	my $out = $a->safe_psql('postgres', 'SELECT mode, scope, state, count(*) FROM zk_locks GROUP BY 1, 2, 3');
	my %g;
	for (split /\n/, $out)
	{
		my ($mode, $scope, $state, $n) = split /\|/;
		$g{qq{mode="$mode",scope="$scope",state="$state"}} = $n;
	}
	return \%g;
}

# The nonzero series of zklock_locks_count.
sub nonzero_counts
{
	my ($m) = @_;
	my $s = series($m, 'zklock_locks_count');
	return { map { $_ => $s->{$_} } grep { $s->{$_} != 0 } keys %$s };
}

# zk_status()'s counters.
my @counters = qw(acquired released timeouts cancels lost zk_requests release_requests
  watch_events handoffs handoff_requests deadlock_checks deadlocks_found near_top_listings);

# A scrape between two reads of zk_status() that agree on the state, every
# counter and slots_used (the worker may send a request of its own at a heartbeat,
# arming the watch of a hold that lasts): what the scrape saw is then that
# second read.  Returns the scrape and the read.
sub steady_scrape
{
	my ($m, $st);
	wait_until(
		sub {
			my $before = zk_status_of($a);
			$m = scrape();
			$st = zk_status_of($a);
			return !grep { $before->{$_} ne $st->{$_} } @counters, 'slots_used', 'state';
		},
		15,
		'zk_status() steady around a scrape');
	return ($m, $st);
}

my $m;
wait_until(sub { $m = scrape() }, 30, 'the exporter answers on /metrics')
  or BAIL_OUT("the exporter does not answer; see $exporter_log");

# ---------------------------------------------------------------------
# (1) Control: pg_monitor alone cannot run zk_status() or read zk_locks.
# ---------------------------------------------------------------------
is($m->{pg_up}, 1, '(1) pg_up is 1: the exporter reaches PostgreSQL');
is($m->{pg_exporter_last_scrape_error}, 1, '(1) without the zklock grants the scrape reports a query error');
is(scalar(grep { /^zklock_/ && !/^zklock_lock_stats_/ } keys %$m), 0, '(1) and no zklock metric but those of zk_lock_stats');
is($m->{zklock_lock_stats_info_entries}, 0, '(1) which pg_monitor reads through pg_read_all_stats: no lock counted yet');
like(slurp_file($exporter_log), qr/permission denied for function zk_status/, '(1) the exporter logs why');

# ---------------------------------------------------------------------
# (2) The documented grants; holds of each kind and a waiter.
# ---------------------------------------------------------------------
$a->safe_psql(
	'postgres', q{
GRANT EXECUTE ON FUNCTION zk_locks_internal(), zk_status(), zk_semaphore_contenders(text) TO monitoring_role;
GRANT SELECT ON zk_locks TO monitoring_role;
GRANT monitoring_role TO prometheus;
});

my $s1 = bg_session($a);
$s1->query_safe("SELECT zk_lock_acquire('m1'); SELECT zk_lock_acquire_shared('sh')");
my $s3 = bg_session($a);
my $s3_pid = $s3->query_safe('SELECT pg_backend_pid()');
$s3->query_safe("BEGIN; SELECT zk_lock_acquire_xact('x1')");
my $w = queue_waiter($a, $zk, 'm1', '120s');

my $st;
($m, $st) = steady_scrape();
is($m->{pg_exporter_last_scrape_error}, 0, '(2) with the documented grants no query fails');
my $locks = series($m, 'zklock_locks_count');
is(scalar(keys %$locks), 54, '(2) a series for each of the 6 states x 3 modes x 3 scopes');
is_deeply(
	nonzero_counts($m),
	{
		'mode="exclusive",scope="session",state="held"'     => 1,
		'mode="shared",scope="session",state="held"'        => 1,
		'mode="exclusive",scope="transaction",state="held"' => 1,
		'mode="exclusive",scope="session",state="waiting"'  => 1,
	},
	'(2) holds=3 (session, shared, transaction) and waits=1, every other count 0');
is_deeply(nonzero_counts($m), zk_locks_groups(), '(2) the counts are zk_locks grouped by state, mode and scope');
cmp_ok(series($m, 'zklock_locks_max_age_seconds')->{'mode="exclusive",scope="session",state="waiting"'},
	'>', 0, '(2) the waiter has an age');
is(series($m, 'zklock_locks_max_age_seconds')->{'mode="exclusive",scope="session",state="lost"'},
	0, '(2) an empty combination has age 0');

is_deeply(
	series($m, 'zklock_session_state'),
	{
		'state="connected"'  => 1,
		'state="connecting"' => 0,
		'state="suspended"'  => 0,
		'state="expired"'    => 0,
		'state="no worker"'  => 0,
	},
	'(2) session state: connected 1, the others 0');

# Counters: three acquires happened; each counter equals zk_status()'s.
is($m->{zklock_status_acquired_total}, 3, '(2) acquired_total counts the three grants');
for my $c (@counters)
{
	is($m->{"zklock_status_${c}_total"}, $st->{$c}, "(2) zklock_status_${c}_total = zk_status().$c ($st->{$c})");
}
is($m->{zklock_status_slots_used}, $st->{slots_used}, "(2) slots_used = zk_status().slots_used ($st->{slots_used})");
is($m->{zklock_status_slots_max}, 1024, '(2) slots_max = zklock.max_locks');
is($m->{zklock_status_session_timeout_seconds}, $st->{negotiated_timeout} / 1000, '(2) session_timeout_seconds');
my @zklock_metrics = sort grep { /^zklock_/ } keys %{ $m->{type} };
is_deeply(
	{ map { $_ => $m->{type}{$_} } @zklock_metrics },
	{ map { $_ => (/_total$/ ? 'counter' : 'gauge') } @zklock_metrics },
	'(2) the *_total metrics are counters, the others gauges');
is(scalar(@zklock_metrics), 40, '(2) 40 zklock metrics');
is_deeply(
	[ sort map { keys %{ $m->{server}{$_} } } @zklock_metrics ],
	[ (join(':', $a->host, $a->port)) x 40 ],
	'(2) each carries the label server="host:port" of its cluster');
# README's "Performance" figure, from the metrics as the PromQL of README's
# monitoring section computes it, and from zk_status() as its SQL does: a
# scrape between two runs of the SQL that agree (a heartbeat's request may
# come between a scrape and a later read).
my ($per_acquire_sql, $per_acquire_metrics);
wait_until(
	sub {
		my $readme_sql =
		  'SELECT round((zk_requests - release_requests)::numeric / nullif(acquired, 0), 2) FROM zk_status()';
		my $before = $a->safe_psql('postgres', $readme_sql);
		my $s = scrape();
		$per_acquire_sql = $a->safe_psql('postgres', $readme_sql);
		$per_acquire_metrics = sprintf('%.2f',
			($s->{zklock_status_zk_requests_total} - $s->{zklock_status_release_requests_total}) /
			  $s->{zklock_status_acquired_total});
		return $before eq $per_acquire_sql;
	},
	15,
	'zk_status() steady around the scrape of requests per acquire');
is($per_acquire_metrics, $per_acquire_sql, '(2) requests per acquire from the metrics = README\'s SQL on zk_status()');
# zk_lock_stats: one series per lock and kind, each figure zk_lock_stats'.
my @stats = qw(acquired_session acquired_xact granted_at_once waited holds timeouts cancels deadlocks
  losses revocations hold_limit_expiries);
my %sql_stats;
for (split /\n/, $a->safe_psql('postgres', 'SELECT name, kind, ' . join(', ', @stats) . ' FROM zk_lock_stats'))
{
	my ($lock, $kind, @v) = split /\|/;
	$sql_stats{$_}{qq{kind="$kind",lock="$lock"}} = shift @v for @stats;
}
is_deeply(series($m, "zklock_lock_stats_${_}_total"), $sql_stats{$_}, "(2) zklock_lock_stats_${_}_total = zk_lock_stats.$_")
  for @stats;
is_deeply(
	{
		map { my $l = $_; $l => join(',', map { series($m, "zklock_lock_stats_${_}_total")->{$l} } qw(acquired_session acquired_xact granted_at_once)) }
		  keys %{ series($m, 'zklock_lock_stats_acquired_session_total') }
	},
	{
		'kind="exclusive",lock="m1"' => '1,0,1',
		'kind="shared",lock="sh"'    => '1,0,1',
		'kind="exclusive",lock="x1"' => '0,1,1',
	},
	'(2) m1, sh and x1 granted once each at once, by scope; the waiter not yet counted');
is($m->{zklock_lock_stats_info_entries}, 3, '(2) zklock_lock_stats_info_entries = 3');
is($m->{zklock_lock_stats_info_evicted_total}, 0, '(2) none evicted');

# ---------------------------------------------------------------------
# (3) A lost hold.
# ---------------------------------------------------------------------
my $x1_node = held_znode($a, $s3_pid, 'x1');
ok(zk_delete($zk, $x1_node), '(3) an operator deletes the transaction hold\'s node');
wait_until(sub { lock_state($a, $s3_pid, 'x1') eq 'lost' }, 15, 'x1 turns lost');
($m, $st) = steady_scrape();
is(series($m, 'zklock_locks_count')->{'mode="exclusive",scope="transaction",state="lost"'},
	1, '(3) the lost hold is counted lost');
is(series($m, 'zklock_locks_count')->{'mode="exclusive",scope="transaction",state="held"'},
	0, '(3) and no longer held');
is($m->{zklock_status_lost_total}, 1, '(3) lost_total = 1');
is($m->{zklock_status_lost_total}, $st->{lost}, '(3) lost_total = zk_status().lost');
is_deeply(nonzero_counts($m), zk_locks_groups(), '(3) the counts are zk_locks grouped');

# ---------------------------------------------------------------------
# (4) ZooKeeper down: the queries still answer.
# ---------------------------------------------------------------------
zk_stop_one($zk, 1);
wait_until(sub { zk_status_of($a)->{state} ne 'connected' }, 30, 'the worker notices ZooKeeper is gone');
($m, $st) = steady_scrape();
my $state = $st->{state};
note "session state with ZooKeeper down: $state";
ok(defined $m, '(4) the exporter answers with ZooKeeper down');
is($m->{pg_up}, 1, '(4) pg_up is 1');
is($m->{pg_exporter_last_scrape_error}, 0, '(4) no query error');
is(series($m, 'zklock_session_state')->{qq{state="$state"}}, 1, "(4) session state $state is 1");
is(series($m, 'zklock_session_state')->{'state="connected"'}, 0, '(4) connected is 0');
my $one = grep { $_ == 1 } values %{ series($m, 'zklock_session_state') };
is($one, 1, '(4) exactly one state is 1');
is_deeply(nonzero_counts($m), zk_locks_groups(), '(4) the counts are still zk_locks grouped');
is($m->{zklock_status_acquired_total}, $st->{acquired}, '(4) the counters are still there');

zk_start_one($zk, 1);
wait_until(sub { zk_status_of($a)->{state} eq 'connected' }, 60, 'the worker reconnects');
$m = scrape();
is(series($m, 'zklock_session_state')->{'state="connected"'}, 1, '(4) ZooKeeper back: connected is 1 again');
is($m->{pg_exporter_last_scrape_error}, 0, '(4) ZooKeeper back: no query error');

$s3->query('ROLLBACK');
$s3->quit;
# An outage this long (beyond two thirds of the session timeout) ends the
# holds (doc/failures.md): the release may report m1's loss.
$s1->query('SELECT zk_lock_release_all()');
waiter_grant($w);
$w->{s}->quit;
$s1->quit;

# PostgreSQL away: pg_up says so, and the zklock series are gone.
$a->stop;
$m = scrape();
is($m->{pg_up}, 0, '(5) PostgreSQL stopped: pg_up is 0');
is(scalar(grep { /^zklock_/ } keys %$m), 0, '(5) and no zklock metric');

$exporter->crash;
ok(!defined scrape(), 'the exporter is stopped');

done_testing();
