# One batch job at a time across hosts (README, "One batch job at a time:
# pg_cron and cron").  Three clusters run the same job, guarded by the
# README's run_on_one_host(): a transaction-scope zk_lock_try_xact, and the
# job's work only if it got the lock.
#
# 1. pg_cron (Debian's postgresql-15-cron, on 18 built by test/pgcache.sh;
#    background-worker mode): the
#    job is scheduled '* * * * *' on all three clusters, so the three fire at
#    the same minute boundary.  The job is once per period: inside the lock
#    it looks for its minute in the shared data (a table in cluster a,
#    reached through dblink from every cluster), and otherwise works 4 s and
#    records its minute there.  In that minute exactly one cluster did the
#    work; the others skipped, turned away by the lock (the server log says
#    so) or finding the minute done; every run succeeded in
#    cron.job_run_details.  A late run in the same minute gets the lock and
#    finds the minute done.  The control, the same job scheduled without
#    run_on_one_host at the same minute, was done by more than one cluster.
# 2. A host-side scheduler (what cron and psql on three hosts do): a shell
#    loop per cluster runs the job through psql every 0.5 s; the job works
#    1 s inside the lock.  The cluster running the job is stopped in
#    immediate mode while inside it ("the host dies"), and its loop with it.
#    Over the whole run the holds, committed and the dead one's unfinished
#    one, never overlapped; every loop was turned away at least once; more
#    than one host did the job; after the death another host took over; the
#    dead host's run never committed (seen after restarting it).
# The two parts share the wall time: the loops run while pg_cron's minute
# boundary comes.
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::RealBin/../lib";
use ZklockTest;
use ZklockTest::Cleanup qw(@holders);
use IPC::Run;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(sleep time);

# pg_cron for the PostgreSQL under test: Debian 12 packages it for 15 only,
# and 18's build (test/pgcache.sh) has none (README, "Supported PostgreSQL
# majors"); elsewhere the test runs as a whole.
my $pkglibdir = $ENV{PG_CONFIG} ? `$ENV{PG_CONFIG} --pkglibdir` : '';
chomp $pkglibdir;
plan skip_all => "pg_cron is not installed for this PostgreSQL ($pkglibdir/pg_cron.so): "
  . 'Debian 12 packages it for 15 only'
  unless $pkglibdir ne '' && -f "$pkglibdir/pg_cron.so";

my $zk = zk_start(1);

# The cluster's configuration as the README gives it; a short session
# timeout, so that the dead host's lock goes soon.
my @conf = (
	"shared_preload_libraries = 'zklock,pg_cron'",
	"cron.database_name = 'postgres'",
	"cron.use_background_workers = on",
	"max_worker_processes = 16",
	"track_commit_timestamp = on");
my %node;
$node{$_} = zklock_node($_, $zk, session_timeout => '4s', conf => \@conf) for qw(a b c);
my @names = sort keys %node;

# The README's pattern, verbatim.
my $run_on_one_host = <<'SQL';
CREATE FUNCTION run_on_one_host(job text, command text) RETURNS boolean
LANGUAGE plpgsql AS $$
BEGIN
    IF NOT zk_lock_try_xact('jobs/' || job) THEN
        RAISE LOG 'job "%" skipped: it runs on another host', job;
        RETURN false;
    END IF;
    EXECUTE command;
    RETURN true;
END
$$;
SQL

# The shared data of the pg_cron job: one table in cluster a, which every
# cluster reaches through dblink (a's own job too).
my $store = sprintf('host=%s port=%d dbname=postgres', $node{a}->host, $node{a}->port);
$node{a}->safe_psql('postgres',
	'CREATE TABLE batch_done (job text, period timestamptz, cluster text, t_start timestamptz, t_end timestamptz)');

# The pg_cron job: once per minute, checked and recorded in the shared data
# inside the lock; each run leaves its outcome in the local batch_log too.
# tick is the host-side loops' job: 1 s of work, its start told to psql
# before the work (so the start of a run that never commits is known) and
# its hold recorded in tick_log.
my $jobs = <<'SQL';
CREATE EXTENSION pg_cron;
CREATE EXTENSION dblink;
CREATE TABLE batch_log (job text, period timestamptz, cluster text, outcome text,
                        t_start timestamptz, t_end timestamptz);
CREATE FUNCTION rollup(job text) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    period  timestamptz := date_trunc('minute', now());
    store   text := current_setting('batch.store');
    t_start timestamptz := clock_timestamp();
BEGIN
    IF EXISTS (SELECT FROM dblink(store, format(
            'SELECT 1 FROM batch_done WHERE job = %L AND period = %L', job, period)) AS d(x int)) THEN
        INSERT INTO batch_log VALUES (job, period, current_setting('cluster_name'), 'done already',
                                      t_start, clock_timestamp());
        RETURN;
    END IF;
    PERFORM pg_sleep(4);
    PERFORM dblink_exec(store, format('INSERT INTO batch_done VALUES (%L, %L, %L, %L, %L)',
            job, period, current_setting('cluster_name'), t_start, clock_timestamp()));
    INSERT INTO batch_log VALUES (job, period, current_setting('cluster_name'), 'ran',
                                  t_start, clock_timestamp());
END
$$;
CREATE TABLE tick_log (cluster text, t_start timestamptz, t_end timestamptz);
CREATE FUNCTION tick() RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    t_start timestamptz := clock_timestamp();
BEGIN
    RAISE NOTICE 'tick start % %', current_setting('cluster_name'), extract(epoch FROM t_start);
    PERFORM pg_sleep(1);
    INSERT INTO tick_log VALUES (current_setting('cluster_name'), t_start, clock_timestamp());
END
$$;
SQL
for my $n (@names)
{
	$node{$n}->safe_psql('postgres', "ALTER DATABASE postgres SET batch.store = '$store'");
	$node{$n}->safe_psql('postgres', $jobs . $run_on_one_host);
}

# --- pg_cron: schedule at one minute on all three ----------------------------

# Seconds into the current minute, by the clusters' clock (all run here).
sub seconds_in_minute
{
	return $node{a}->safe_psql('postgres', "SELECT extract(epoch FROM clock_timestamp()) - extract(epoch FROM date_trunc('minute', clock_timestamp()))");
}
# Not scheduled across a boundary: all three must wait for the same one.
my $sec = seconds_in_minute();
sleep(61 - $sec) if $sec > 55;

my $guarded = q{SELECT run_on_one_host('rollup', 'SELECT rollup(''rollup'')')};
my $unguarded = q{SELECT rollup('unguarded')};
for my $n (@names)
{
	$node{$n}->safe_psql('postgres', "SELECT cron.schedule('rollup', '* * * * *', \$\$$guarded\$\$)");
	$node{$n}->safe_psql('postgres', "SELECT cron.schedule('unguarded', '* * * * *', \$\$$unguarded\$\$)");
	is($node{$n}->safe_psql('postgres', "SELECT schedule || ' ' || command FROM cron.job WHERE jobname = 'rollup'"),
		"* * * * * $guarded", "pg_cron of $n has the README's job");
}

# --- host-side scheduler loops ---------------------------------------------

# One shell loop per cluster, as cron with psql would run the job; it ends
# when its stop file appears.  Stopped by pid at exit (ZklockTest::Cleanup).
my $dir = PostgreSQL::Test::Utils::tempdir('batch');
my %loop;
sub start_loop
{
	my ($n) = @_;
	my $node = $node{$n};
	my %l = (log => "$dir/$n.log", stop => "$dir/$n.stop");
	my $psql = sprintf(q{psql -X -At -h '%s' -p %d -d postgres -c "SELECT run_on_one_host('tick', 'SELECT tick()')"},
		$node->host, $node->port);
	my $sh = "while [ ! -e '$l{stop}' ]; do $psql >>'$l{log}' 2>&1; sleep 0.5; done";
	$l{run} = IPC::Run::start([ 'bash', '-c', $sh ], '<', \undef, '>', \my $out, '2>', \my $err);
	my $obj = bless \%l, 'BatchLoop';
	push @holders, $obj;
	$loop{$n} = $obj;
	return;
}

# Start the loops so that they run about 15 s before pg_cron's boundary
# (then through it): long enough to rotate among hosts, short for the CPU.
$sec = seconds_in_minute();
sleep(45 - $sec) if $sec < 45;
start_loop($_) for @names;
my $loops_started = time;

# --- pg_cron: the minute's runs -------------------------------------------------

# Every cluster has finished both jobs once (pg_cron's 'succeeded' or
# 'failed'); then no more runs.
sub cron_runs_done
{
	my ($node) = @_;
	return $node->safe_psql('postgres',
		"SELECT count(DISTINCT jobid) FROM cron.job_run_details WHERE status IN ('succeeded', 'failed')") == 2;
}
for my $n (@names)
{
	wait_until(sub { cron_runs_done($node{$n}) }, 80, "pg_cron runs of $n");
}
my %minute;
for my $n (@names)
{
	my $runs = $node{$n}->safe_psql('postgres',
		"SELECT j.jobname, d.status, date_trunc('minute', d.start_time) FROM cron.job_run_details d JOIN cron.job j USING (jobid) ORDER BY 1");
	$node{$n}->safe_psql('postgres', "SELECT cron.unschedule('rollup'); SELECT cron.unschedule('unguarded')");
	note "pg_cron runs of $n:\n$runs";
	my @rows = map { [ split /\|/ ] } split /\n/, $runs;
	is(join(',', map { "$_->[0]:$_->[1]" } @rows), 'rollup:succeeded,unguarded:succeeded',
		"$n ran each job once, and it succeeded");
	$minute{ $_->[2] }++ for @rows;
}
is(scalar(keys %minute), 1, 'all six runs fired in the same minute');
my ($period) = keys %minute;

# What the runs did: the shared data, each cluster's own outcome, and the
# lock's skips in the server logs.
sub store_rows
{
	my ($job) = @_;
	return $node{a}->safe_psql('postgres', "SELECT cluster FROM batch_done WHERE job = '$job' AND period = '$period' ORDER BY 1");
}
my %outcome;
for my $n (@names)
{
	for my $row (split /\n/,
		$node{$n}->safe_psql('postgres', "SELECT job, outcome FROM batch_log WHERE period = '$period'"))
	{
		my ($job, $what) = split /\|/, $row;
		push @{ $outcome{$job}{$n} }, $what;
	}
	my $log = slurp_file($node{$n}->logfile);
	my $skips = () = $log =~ /LOG:  job "rollup" skipped: it runs on another host/g;
	push @{ $outcome{rollup}{$n} }, ('busy') x $skips;
}
my @done = split /\n/, store_rows('rollup');
is(scalar(@done), 1, "the guarded job was done once in minute $period, by @done");
for my $n (@names)
{
	my @o = @{ $outcome{rollup}{$n} // [] };
	my $want = ($n eq ($done[0] // '')) ? 'ran' : qr/^(?:busy|done already)$/;
	ok(@o == 1 && $o[0] =~ (ref $want ? $want : qr/^\Q$want\E$/),
		"guarded: $n " . (ref $want ? 'skipped (busy or done already)' : 'ran') . " once: @o");
}
my @unguarded = split /\n/, store_rows('unguarded');
cmp_ok(scalar(@unguarded), '>', 1, "control: without the lock the job was done by more than one cluster (@unguarded)");
note 'guarded outcomes: ' . join(', ', map { "$_ " . join('/', @{ $outcome{rollup}{$_} // [] }) } @names);

# A host whose schedule fires late, in the same minute (seconds after the
# boundary): the lock is free, and the job finds its minute done.
my $late = (grep { $_ ne ($done[0] // '') } @names)[0];
is($node{$late}->safe_psql('postgres', $guarded), 't', "a late run of the guarded job on $late gets the lock");
is($node{$late}->safe_psql('postgres', "SELECT period || ' ' || outcome FROM batch_log ORDER BY t_start DESC LIMIT 1"),
	"$period done already", '... and finds the minute done in the shared data');
is(store_rows('rollup'), $done[0], '... which still has one run of the minute');

# --- host-side: the running host dies mid-job -----------------------------------

# Let the loops rotate for at least 10 s before the death.
sleep($loops_started + 10 - time) if time < $loops_started + 10;

# The cluster inside the job, early in its 1 s of work.
sub inside_job
{
	for my $n (@names)
	{
		my $in = $node{$n}->safe_psql('postgres',
			"SELECT count(*) FROM pg_stat_activity WHERE wait_event = 'PgSleep' AND query LIKE 'SELECT run_on_one_host(''tick''%' AND clock_timestamp() - query_start < interval '0.4 s'");
		return $n if $in > 0;
	}
	return undef;
}
my $victim;
wait_until(sub { $victim = inside_job() }, 30, 'a cluster inside the job');
my $other = (grep { $_ ne $victim } @names)[0];
note "stopping $victim in immediate mode inside the job";
open(my $fh, '>', $loop{$victim}{stop}) or die $!;
close $fh;
$node{$victim}->stop('immediate');
my $t_dead = time;
my @alive = grep { $_ ne $victim } @names;

# Another host's next run takes over once the dead one's session expired.
sub ticks_after
{
	my ($t) = @_;
	return join '', map {
		$node{$_}->safe_psql('postgres', "SELECT count(*) FROM tick_log WHERE extract(epoch FROM t_start) > $t")
	} @alive;
}
my $took_over = wait_until(sub { ticks_after($t_dead) =~ /[1-9]/ }, 30, 'another host ran the job after the death');
sleep(2);

# Stop the loops (each ends after its current run), then bring the dead
# host back to read what it committed.
for my $n (@alive)
{
	open(my $s, '>', $loop{$n}{stop}) or die $!;
	close $s;
}
$_->finish_loop for values %loop;
$node{$victim}->start;

# --- host-side: what happened -------------------------------------------------

# Every hold: committed ones [start, commit time] from tick_log, and for each
# loop the starts psql was told of, and its answers (t ran, f skipped).
my (@holds, %committed_starts);
for my $n (@names)
{
	for my $row (split /\n/, $node{$n}->safe_psql('postgres',
		"SELECT extract(epoch FROM t_start), extract(epoch FROM pg_xact_commit_timestamp(xmin)) FROM tick_log"))
	{
		my ($s, $e) = split /\|/, $row;
		push @holds, { n => $n, s => $s, e => $e };
		$committed_starts{"$n $s"} = 1;
	}
}
my (%told, %answers);
for my $n (@names)
{
	my $log = slurp_file($loop{$n}{log});
	push @{ $told{$n} }, $1 while $log =~ /tick start $n ([\d.]+)/g;
	$answers{$n}{$1}++ while $log =~ /^([tf])$/mg;
}
my @unfinished = map { my $n = $_; map { "$n $_" } grep { !$committed_starts{"$n $_"} } @{ $told{$n} } } @names;
is("@unfinished", "$victim $told{$victim}[-1]", "the only run that never committed is the dead host's last one");
cmp_ok($told{$victim}[-1] // 0, '<', $t_dead, '... which started before the death');
push @holds, { n => $victim, s => $told{$victim}[-1], e => $t_dead, dead => 1 } if @{ $told{$victim} // [] };

my @sorted = sort { $a->{s} <=> $b->{s} } @holds;
my @overlaps;
for my $i (1 .. $#sorted)
{
	my ($p, $q) = @sorted[ $i - 1, $i ];
	push @overlaps, sprintf('%s [%.3f, %.3f] and %s [%.3f, %.3f]', $p->{n}, $p->{s}, $p->{e}, $q->{n}, $q->{s}, $q->{e})
	  if $q->{s} < $p->{e};
}
is(scalar(@overlaps), 0, sprintf('%d holds over all hosts, none overlapping', scalar(@holds)))
  or diag("overlapping holds:\n  " . join("\n  ", @overlaps));
my %ran_by = map { $_->{n} => 1 } grep { !$_->{dead} } @holds;
cmp_ok(scalar(keys %ran_by), '>', 1, 'more than one host did the job: ' . join(' ', sort keys %ran_by));
for my $n (@names)
{
	cmp_ok($answers{$n}{f} // 0, '>', 0,
		sprintf('the lock turned away some runs of %s (%d done, %d skipped)', $n, $answers{$n}{t} // 0, $answers{$n}{f} // 0));
}
my ($first_after) = grep { $_->{s} > $t_dead } @sorted;
ok($first_after && $first_after->{n} ne $victim, 'after the death another host ran the job first: ' . ($first_after->{n} // 'none'));
diag(sprintf('takeover: the first run after the death started %.1f s after it (session timeout 4 s)', $first_after->{s} - $t_dead))
  if $first_after;

done_testing();

# A scheduler loop of this test: stop it by pid (ZklockTest::Cleanup calls
# crash at exit).
package BatchLoop;

use IPC::Run;

sub finish_loop
{
	my ($self) = @_;
	return if $self->{done};
	my $h = $self->{run};
	my $deadline = Time::HiRes::time() + 15;
	while ($h->pumpable && Time::HiRes::time() < $deadline)
	{
		eval { $h->pump_nb; 1 };
		Time::HiRes::sleep(0.1);
	}
	$self->crash;
	return;
}

sub crash
{
	my ($self) = @_;
	return if $self->{done}++;
	my $h = $self->{run};
	eval { $h->kill_kill(grace => 2); 1 } if $h->pumpable;
	eval { $h->finish; 1 };
	return;
}
