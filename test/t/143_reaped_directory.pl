# A lock directory reaped between two uses (issue 41, point 7): a create
# whose directory ZooKeeper's container manager removed fails its whole
# multi (ZNONODE), and each operation of that multi is sent again alone.
# Shown bounded here: it costs one failed multi per reap, no more.  The
# worker forgets what it knew of a failed multi's directories, so their
# next creates go alone (making the directory again) until a listing
# shows them again.
#
# Two locks, r and q, are taken and released until ZooKeeper knows their
# directories (the worker's listings), then three rounds of: wait until
# both directories are reaped; freeze the worker (SIGSTOP) while two
# sessions ask for r and q, so that both creates go in one multi; thaw.
# Each round both are granted, and the worker's log tells of one failed
# multi, no more; a round whose directories stand (each kept by a child of
# no lock) has none.
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::RealBin/../lib";
use ZklockTest;
use Test::More;
use PostgreSQL::Test::Utils;

# Empty containers are reaped every 200 ms, not once a minute.
$ENV{ZK_SYSTEM_PROPERTIES} = 'znode.container.checkIntervalMs=200';
my $zk = zk_start(1);
my $a = zklock_node('a', $zk, conf => "log_min_messages = debug1\n");
my $wpid = worker_pid($a);


my @s = map { bg_session($a) } 1 .. 2;
my @names = qw(r q);

# Both acquires in one pass of the worker; both granted, then released.
sub both_in_one_pass
{
	my ($label) = @_;
	freeze_worker($wpid);
	bg_start($s[$_], "SELECT zk_lock_acquire('$names[$_]', '30s')") for 0 .. 1;
	wait_until(sub { $a->safe_psql('postgres', "SELECT count(*) FROM zk_locks WHERE state = 'waiting'") == 2 },
		10, "$label: both requests are posted");
	thaw_worker($wpid);
	for my $i (0 .. 1)
	{
		my ($out, $err) = bg_collect($s[$i]);
		like($out, qr/^\d+$/m, "$label: $names[$i] is granted") or diag($err);
	}
	is(bg_result($s[$_], "SELECT zk_lock_release('$names[$_]')"), 't', "$label: $names[$_] is released")
	  for 0 .. 1;
	wait_until(sub { $a->safe_psql('postgres', 'SELECT count(*) FROM zk_locks') == 0 }, 10,
		"$label: nothing is left in zk_locks");
}

sub failed_multis
{
	my ($off) = @_;
	my @hits = slurp_file($a->logfile, $off) =~ /a multi failed as a whole \(([^)]*)\)/g;
	return @hits;
}

sub reaped
{
	return !grep { defined zk_stat($zk, "/zklock/$_") } @names;
}

# The worker lists both directories (each acquire alone, then once more).
both_in_one_pass('warm-up');
both_in_one_pass('warm-up, directories known');

for my $round (1 .. 3)
{
	ok(wait_until(\&reaped, 30, "round $round: both directories are reaped"),
		"round $round: ZooKeeper reaped both empty directories");
	my $off = -s $a->logfile;
	both_in_one_pass("round $round");
	my @failed = failed_multis($off);
	# One: the two creates did travel in one multi, and it failed once.
	is(scalar(@failed), 1, "round $round: one failed multi (" . join(', ', @failed) . '), then each alone');
	like($_, qr/no node/i, "round $round: it failed for the missing directory") for @failed;
}

# The directories stand (a child of no lock keeps each): no multi fails.
# Made again if it was reaped meanwhile (--parents); one round lets the
# worker list them as they are now.
zk_create($zk, "/zklock/$_/keep", undef, '--parents') for @names;
both_in_one_pass('directories kept');
my $off = -s $a->logfile;
both_in_one_pass('directories standing');
is(scalar(failed_multis($off)), 0, 'no multi fails while the directories stand');
$_->quit for @s;

done_testing();
