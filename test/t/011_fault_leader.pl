# Fault: the ZooKeeper leader dies while locks are held and waited for.
# Three PostgreSQL clusters use a 3-server ensemble (zklock.hosts lists all
# three); while the mutual-exclusion checker (ZklockChecker) runs, the test
# kills the leader (SIGKILL, found with `srvr`: "Mode: leader"), lets the
# two others elect a new one and the checker go on, then starts the old
# leader again.  Afterwards the checker's invariants hold and no node is
# left.  zklock.session_timeout is 10 s, so a failover of a few seconds
# should not expire sessions; if some did, the invariants must hold all the
# same (their locks are lost and their transactions may not commit).
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::RealBin/../lib";
use ZklockTest;
use ZklockChecker;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time sleep);

my $zk = zk_start(3);
my @nodes = map {
	zklock_node($_, $zk, hosts => $zk->{connect}, session_timeout => '10s', conf => checker_conf())
} qw(a b c);
like($nodes[0]->safe_psql('postgres', 'SHOW zklock.hosts'), qr/^[\d.:]+,[\d.:]+,[\d.:]+$/,
	'zklock.hosts lists the three servers');

sub leader
{
	for my $i (1 .. $zk->{n})
	{
		next unless zk_running($zk, $i);
		return $i if (zk_fourlw($zk, 'srvr', $i) // '') =~ /^Mode: leader$/m;
	}
	return undef;
}

sub status
{
	my ($node) = @_;
	my %s;
	@s{qw(state session_id server lost)} = split /\|/,
	  $node->safe_psql('postgres', 'SELECT state, session_id, server, lost FROM zk_status()');
	return \%s;
}

my %before = map { $_->name => status($_) } @nodes;
my $lock_dir = $nodes[0]->safe_psql('postgres', "SELECT zk_lock_path('counter')");

my $run = start_checker(
	nodes      => \@nodes,
	zk         => $zk,
	sessions   => 8,
	iterations => 1_000_000,    # bounded by stop_checker, or by duration
	duration   => 600);    # a safety stop: the test stops the checker

wait_until(sub { checker_progress($run) >= 200 }, 30, 'the checker is under way');

# Kill the leader at a moment a lock is held with waiters queued.
my $leader = leader();
ok(defined $leader, 'the ensemble has a leader') or BAIL_OUT('no leader');
my ($queued, $holders);
wait_until(sub {
	$holders = join(', ', map {
		my $h = $_->safe_psql('postgres', "SELECT count(*) FROM zk_locks WHERE name = 'counter' AND state = 'held'");
		$h ? $_->name : ()
	} @nodes);
	$queued = scalar(zk_ls($zk, $lock_dir));
	$holders ne '' && $queued >= 3;
}, 10, 'the lock held and waited for');
my $progress_at_kill = checker_progress($run);
my $pid = slurp_file("$zk->{dir}/zk$leader.pid") =~ s/\s+//gr;
my $t_kill = time;
kill 'KILL', $pid or BAIL_OUT("could not kill ZooKeeper server $leader (pid $pid): $!");
note "killed leader $leader (pid $pid): held in $holders, $queued contender nodes";
wait_until(sub { !zk_running($zk, $leader) }, 30, 'the old leader is gone');

# The two others elect a new leader; holds commit again.
wait_until(sub { my $l = leader(); defined $l && $l != $leader }, 60, 'a new leader is elected');
my $t_elected = time;
my $new_leader = leader();
wait_until(sub { checker_progress($run) >= $progress_at_kill + 200 }, 60,
	'holds commit again without the old leader');
my $t_resumed = time;

# The old leader comes back (as a follower) and the checker goes on.
zk_start_one($zk, $leader);
my $progress_at_restart = checker_progress($run);
wait_until(sub { checker_progress($run) >= $progress_at_restart + 200 }, 60,
	'holds commit after the old leader is back');
stop_checker($run);
my $res = finish_checker($run);

cmp_ok($res->{committed}, '>', $progress_at_kill, 'holds were committed after the leader died');
# Requests that were queued when the leader died and were granted after it
# (clock_timestamp of one machine on both sides).
my $kill_us = $t_kill * 1e6;
my @across = grep { $_->{tq} < $kill_us && $_->{ts} > $kill_us } @{ $res->{holds} };
my @held_across = grep { $_->{ts} < $kill_us && $_->{tc} > $kill_us } @{ $res->{holds} };
ok(@across >= 1, 'some committed holds waited across the failover (requested before the kill, granted after)');
check_invariants($res);

# A follower that loses its leader drops its clients too: every cluster
# should have been cut off, whichever server it was connected to.
my @cut = map {
	my $n = () = slurp_file($_->logfile) =~ /lost the connection to ZooKeeper/g;
	$n ? $_->name : ()
} @nodes;
ok(@cut >= 1, 'the failover reached the clusters (lost connection in: ' . join(', ', @cut) . ')');

my %after = map { $_->name => status($_) } @nodes;
my @expired = grep { $after{$_}{session_id} ne $before{$_}{session_id} } sort keys %after;
my @lost = map { "$_: $after{$_}{lost}" } grep { $after{$_}{lost} ne '0' } sort keys %after;
is(join(',', map { $after{$_}{state} } sort keys %after), 'connected,connected,connected',
	'every cluster is connected again');
diag(sprintf('fault: leader %d killed after %d holds, lock held in %s with %d nodes queued;'
	  . ' new leader %d elected after %.1f s; 200 more holds %.1f s after the kill',
	$leader, $progress_at_kill, $holders, $queued, $new_leader, $t_elected - $t_kill, $t_resumed - $t_kill));
diag('sessions: ' . (@expired ? 'new ZooKeeper session in ' . join(', ', @expired) : 'every cluster kept its ZooKeeper session')
	  . '; locks lost: ' . (@lost ? join(', ', @lost) : 'none'));
diag(sprintf('checker: %d holds committed of %d attempts in %.1f s (%.0f holds/s); errors: %s',
	$res->{committed}, $res->{attempts}, $res->{elapsed}, $res->{holds_per_second},
	join(', ', map { "$_: $res->{errors_by_step}{$_}" } sort keys %{ $res->{errors_by_step} }) || 'none'));
diag("checker: $res->{figures}");
my ($longest) = sort { $b <=> $a } map { ($_->{ts} - $_->{tq}) / 1000 } @across;
diag(sprintf('%d committed holds waited across the kill (longest wait %.0f ms); %d held across it and committed',
	scalar(@across), $longest // 0, scalar(@held_across)));
my @waited = map { my $n = () = slurp_file($_->logfile) =~ /commit waited \d+ ms/g; $_->name . ": $n" } @nodes;
diag('commits that waited for the ZooKeeper session: ' . join(', ', @waited));

done_testing();
