# zklock behind pgbouncer.  Transaction pooling: many clients share a few
# server connections, each guarding its work with zk_lock_acquire_xact, and
# no two critical sections overlap across two clusters, each behind its own
# pgbouncer (with a control where the check finds overlaps).  Session
# pooling: the default server_reset_query, DISCARD ALL, releases a
# session-scope lock the client left behind, on the same pooled backend;
# without a reset query the next client inherits the lock (the control).  A
# client that vanishes in the middle of a transaction leaves no lock held.
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::RealBin/../lib";
use ZklockTest;
use ZklockTest::Pgbouncer;
use IPC::Run;
use Test::More;
use Time::HiRes qw(sleep);

my $clients = 6;      # per cluster, through a pool of...
my $pool_size = 2;    # ... server connections

my $zk = zk_start(1);
my $node_a = zklock_node('a', $zk);
my $node_b = zklock_node('b', $zk);

for my $node ($node_a, $node_b)
{
	$node->safe_psql('postgres', q{
CREATE TABLE hold (run text, cluster text, client int, iter int, pid int,
	token bigint, t_in timestamptz, t_out timestamptz);
-- The critical section: its entry and exit times, the backend serving it
-- and the lock's fencing token.
CREATE FUNCTION guarded(run text, cl text, c int, i int, tok bigint)
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
	t0 timestamptz := clock_timestamp();
BEGIN
	PERFORM pg_sleep(0.02);
	INSERT INTO hold VALUES (run, cl, c, i, pg_backend_pid(), tok, t0, clock_timestamp());
END
$$;
});
}

my $pa = pgbouncer_start('a', $node_a, pool_mode => 'transaction', default_pool_size => $pool_size,
	databases => { postgres_session => 'pool_mode=session pool_size=1' });
my $pb = pgbouncer_start('b', $node_b, pool_mode => 'transaction', default_pool_size => $pool_size);
my %pgb = (a => $pa, b => $pb);
my %node = (a => $node_a, b => $node_b);

# Client connections of database postgres on a pgbouncer, and the backend
# pids of its server connections there.
sub pool_clients
{
	my ($pgb) = @_;
	return scalar grep { $_->{database} eq 'postgres' } $pgb->admin('SHOW CLIENTS');
}

sub pool_server_pids
{
	my ($pgb) = @_;
	return map { $_->{remote_pid} } grep { $_->{database} eq 'postgres' } $pgb->admin('SHOW SERVERS');
}

# $clients psql clients on each pgbouncer, all connected before any starts
# work; then each runs $iters transactions taking the lock $lock->{cluster}
# and calling guarded().  Returns when all have exited.
sub run_clients
{
	my ($run, $lock, $iters) = @_;
	my @c;
	for my $i (1 .. $clients)
	{
		for my $cl (qw(a b))
		{
			my $x = { cl => $cl, i => $i, in => "\\echo ready\n", out => '', err => '' };
			$x->{h} = IPC::Run::start(
				[ 'psql', '-X', '-q', '-A', '-t', '-v', 'ON_ERROR_STOP=1', '-d', $pgb{$cl}->connstr ],
				'<', \$x->{in}, '>', \$x->{out}, '2>', \$x->{err}, IPC::Run::timeout(90));
			push @c, $x;
		}
	}
	for my $x (@c)
	{
		$x->{h}->pump until $x->{out} =~ /ready/ || !$x->{h}->pumpable;
	}
	is(join(' ', map { pool_clients($pgb{$_}) } qw(a b)), "$clients $clients",
		"$run: $clients clients connected at once to each pgbouncer");
	for my $x (@c)
	{
		my $sql = '';
		for my $it (1 .. $iters)
		{
			$sql .= "BEGIN;\n"
			  . "SELECT zk_lock_acquire_xact('$lock->{$x->{cl}}', '60s') AS tok \\gset\n"
			  . "SELECT guarded('$run', '$x->{cl}', $x->{i}, $it, :tok);\n"
			  . "COMMIT;\n";
		}
		$x->{in} .= "$sql\\q\n";
	}
	# Feed them all at once (a harness only moves its pipes when pumped).
	while (my @live = grep { $_->{h}->pumpable } @c)
	{
		$_->{h}->pump_nb for @live;
		sleep 0.01;
	}
	my @failed;
	for my $x (@c)
	{
		eval { $x->{h}->finish; 1 } or push @failed, "$x->{cl}$x->{i}: $@";
		push @failed, "$x->{cl}$x->{i}: exit $? $x->{err}" if $? != 0 || $x->{err} ne '';
	}
	ok(!@failed, "$run: every client ran its $iters transactions without error")
	  or diag(join("\n", @failed));
	return;
}

# The run's critical sections in both clusters, by entry time.
sub holds
{
	my ($run) = @_;
	my @h;
	for my $cl (qw(a b))
	{
		my $out = $node{$cl}->safe_psql('postgres', qq{
SELECT cluster, client, iter, pid, token,
	(extract(epoch FROM t_in) * 1000000)::bigint,
	(extract(epoch FROM t_out) * 1000000)::bigint
FROM hold WHERE run = '$run'});
		for (split /\n/, $out)
		{
			my %r;
			@r{qw(cluster client iter pid token t_in t_out)} = split /\|/;
			push @h, \%r;
		}
	}
	return sort { $a->{t_in} <=> $b->{t_in} } @h;
}

# Pairs of critical sections that overlap in time: each one is compared
# with the one, entered before it, that left last.
sub overlaps
{
	my @h = @_;
	my (@bad, $last);
	for my $x (@h)
	{
		push @bad, [ $last, $x ] if $last && $x->{t_in} < $last->{t_out};
		$last = $x if !$last || $x->{t_out} > $last->{t_out};
	}
	return @bad;
}

sub fmt
{
	my ($x) = @_;
	return sprintf('%s%d/%d pid %d token %s [%d, %d]', @$x{qw(cluster client iter pid token t_in t_out)});
}

# ---------------------------------------------------------------------
# Transaction pooling: one lock, two clusters, many clients, few servers
# ---------------------------------------------------------------------

my $iters = 4;
run_clients('xact', { a => 'pgb-counter', b => 'pgb-counter' }, $iters);
my @h = holds('xact');
is(scalar @h, 2 * $clients * $iters, 'xact: every transaction committed its critical section');
for my $cl (qw(a b))
{
	my %pids = map { $_->{pid} => 1 } grep { $_->{cluster} eq $cl } @h;
	my %cls = map { $_->{client} => 1 } grep { $_->{cluster} eq $cl } @h;
	my @pids = sort keys %pids;
	note "xact: cluster $cl: " . scalar(keys %cls) . " clients served by backends @pids";
	ok(@pids <= $pool_size && @pids < keys %cls,
		"xact: cluster $cl: $clients clients were served by at most $pool_size backends");
	my %servers = map { $_ => 1 } pool_server_pids($pgb{$cl});
	is_deeply([ grep { !$servers{$_} } @pids ], [],
		"xact: cluster $cl: those backends are pgbouncer's server connections (SHOW SERVERS)");
}
my @bad = overlaps(@h);
ok(!@bad, 'xact: no two critical sections overlapped, across both clusters')
  or diag(join("\n", map { fmt($_->[0]) . ' overlaps ' . fmt($_->[1]) } @bad));
my $switches = grep { $h[ $_ - 1 ]{cluster} ne $h[$_]{cluster} } 1 .. $#h;
note "xact: the lock passed $switches times between the clusters";
cmp_ok($switches, '>', 1, 'xact: the lock went back and forth between the clusters');
my @disorder = grep { $h[ $_ - 1 ]{token} >= $h[$_]{token} } 1 .. $#h;
ok(!@disorder, 'xact: fencing tokens rise in the order the critical sections ran')
  or diag(join("\n", map { fmt($h[ $_ - 1 ]) . ' then ' . fmt($h[$_]) } @disorder));

# Control: a lock per cluster keeps each cluster's clients apart but not the
# two clusters: the same check finds the overlaps.
run_clients('control', { a => 'pgb-counter-a', b => 'pgb-counter-b' }, 2);
@bad = overlaps(holds('control'));
my @cross = grep { $_->[0]{cluster} ne $_->[1]{cluster} } @bad;
ok(@cross > 0, 'control: with a lock per cluster the check finds critical sections of a and b overlapping')
  and note scalar(@cross) . ' overlapping pairs, e.g. ' . fmt($cross[0][0]) . ' and ' . fmt($cross[0][1]);
is(scalar(@bad) - scalar(@cross), 0, 'control: ... and none within one cluster');

# ---------------------------------------------------------------------
# Transaction pooling: a client gone in the middle of a transaction
# ---------------------------------------------------------------------

my $s = $pa->bg_session;
my $pid = $s->query_safe('BEGIN; SELECT pg_backend_pid()');
is($s->query_safe("SELECT zk_lock_acquire_xact('pgb-abandoned') > 0"), 't',
	'abandoned: a client of a transaction pool takes a transaction-scope lock');
is(lock_state($node_a, $pid, 'pgb-abandoned'), 'held', 'abandoned: zk_locks shows it held');
$s->quit;
ok(wait_until(sub { $node_a->safe_psql('postgres', "SELECT count(*) FROM pg_stat_activity WHERE pid = $pid") eq '0' },
		30, 'the backend to end'),
	'abandoned: pgbouncer closed the server connection left in a transaction');
# The release does not wait for ZooKeeper: it may still show 'releasing'.
ok(wait_until(sub { $node_a->safe_psql('postgres', "SELECT count(*) FROM zk_locks WHERE name = 'pgb-abandoned'") eq '0' },
		30, 'the release to end'),
	'abandoned: zk_locks of cluster a shows the lock gone');
is(sql_sqlstate($node_b, "SELECT zk_lock_acquire('pgb-abandoned', '10s')"), 'ok',
	'abandoned: cluster b takes the lock');

# ---------------------------------------------------------------------
# Session pooling: server_reset_query
# ---------------------------------------------------------------------

# A client of the session pool (one server connection) takes a
# session-scope lock, sets a variable and disconnects; the next client
# says which backend it got, what the variable is and whether it can
# release the lock.
sub session_pool_round
{
	my ($what) = @_;
	my $s1 = $pa->bg_session('postgres_session');
	my $pid1 = $s1->query_safe('SELECT pg_backend_pid()');
	is($s1->query_safe("SET zkt.marker = 'client1'; SELECT zk_lock_acquire('pgb-session') > 0"), 't',
		"$what: a client of the session pool takes a session-scope lock");
	is(sql_result($node_b, "SELECT zk_lock_try('pgb-session')"), 'f',
		"$what: cluster b cannot take it meanwhile");
	$s1->quit;
	my $s2 = $pa->bg_session('postgres_session');
	my $pid2 = $s2->query_safe('SELECT pg_backend_pid()');
	is($pid2, $pid1, "$what: the next client gets the same server backend");
	my $marker = $s2->query_safe("SELECT coalesce(current_setting('zkt.marker', true), '')");
	my $held = lock_state($node_a, $pid1, 'pgb-session');
	return ($s2, $marker, $held);
}

my ($s2, $marker, $held) = session_pool_round('DISCARD ALL');
isnt($marker, 'client1', 'DISCARD ALL: the session was reset between the clients');
is($held, 'none', 'DISCARD ALL: zk_locks of cluster a shows no hold by the pooled backend');
is(sql_sqlstate($node_b, "SELECT zk_lock_acquire('pgb-session', '10s'); SELECT zk_lock_release('pgb-session')"), 'ok',
	'DISCARD ALL: cluster b takes the lock');
is($s2->query_safe('SELECT count(*) FROM zk_locks WHERE pid = pg_backend_pid()'), '0',
	'DISCARD ALL: the next client holds no lock');
$s2->quit;

# Control: no reset query, the lock stays with the pooled connection.
$pa->set(server_reset_query => '');
is((map { $_->{value} } grep { $_->{key} eq 'server_reset_query' } $pa->admin('SHOW CONFIG'))[0], '',
	'control: pgbouncer a now runs no server_reset_query');
($s2, $marker, $held) = session_pool_round('no reset');
is($marker, 'client1', 'no reset: the next client gets the session as the first left it');
is($held, 'held', 'no reset: zk_locks of cluster a shows the lock still held by the pooled backend');
is(sql_result($node_b, "SELECT zk_lock_try('pgb-session')"), 'f',
	'no reset: cluster b still cannot take it');
is($s2->query_safe('SELECT count(*) FROM zk_locks WHERE pid = pg_backend_pid()'), '1',
	'no reset: the next client holds a lock...');
is(bg_result($s2, "SELECT zk_lock_release('pgb-session')"), 't',
	'... which it never took, and can release');
$s2->quit;
is(sql_sqlstate($node_b, "SELECT zk_lock_acquire('pgb-session', '10s')"), 'ok',
	'no reset: after that release cluster b takes the lock');

$pa->stop;
$pb->stop;
done_testing();
