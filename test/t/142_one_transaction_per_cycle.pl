# One ZooKeeper transaction per uncontended cycle (issue 46, point 3).
# A release's delete that is all the worker has to send waits, for at most
# about one round trip to ZooKeeper, for the next write to share its multi:
# a session that acquires and releases one lock over and over then costs
# ZooKeeper one transaction per cycle (the delete and the next create in
# one multi), where the delete sent alone cost one more.  Counted, not
# timed: each acquire answers its token, the node's czxid, so the last
# token less the first is the number of transactions between them.  Before
# the change the delta was 2 per cycle.
#
# The delete goes at once, without the wait, when a waiter of this cluster
# is behind it (the handoff is never delayed for company), on
# zk_lock_release_all, and before a request that is no lock create (the
# contenders' listing of the same session sees the node gone): the worker
# logs each wait at DEBUG2, and no wait is logged for those releases.  A
# release then a try of the same lock in one statement is true (the try's
# create follows the delete in the multi, never overtakes it).
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::RealBin/../lib";
use ZklockTest;
use Test::More;
use PostgreSQL::Test::Utils;

my $zk = zk_start(1);
my $a = zklock_node('a', $zk);

my $cycles = 200;
my $s = bg_session($a);

# The lock directory listed once (its creates may then travel in a multi)
# and a heartbeat's round trip known: a few cycles first.
for (1 .. 5)
{
	bg_result($s, "SELECT zk_lock_acquire('x')");
	bg_result($s, "SELECT zk_lock_release('x')");
}

my $script = join('', map { "SELECT zk_lock_acquire('x');\nSELECT zk_lock_release('x');\n" } 1 .. $cycles);
my $out = bg_result($s, $script);
my @tokens = grep { /^\d+$/ } split /\n/, $out;
is(scalar(@tokens), $cycles, "$cycles acquires answered a token");
my $per_cycle = ($tokens[-1] - $tokens[0]) / ($cycles - 1);
note("ZooKeeper transactions per uncontended cycle: $per_cycle");
cmp_ok($per_cycle, '<=', 1.1, 'about one ZooKeeper transaction per uncontended cycle (zxid delta of the tokens)');

# From here on the worker says when a delete waits for company.
$a->safe_psql('postgres', "ALTER SYSTEM SET log_min_messages = debug2");
$a->reload;
sleep 1;
my $log_start = -s $a->logfile;
sub waits_logged
{
	my ($lock) = @_;
	my $log = substr(slurp_file($a->logfile), $log_start);
	my @lines = ($log =~ /the delete of a node of lock "$lock" waits up to/g);
	return scalar(@lines);
}

# A control: a lone release of its own does wait (the log says so).
bg_result($s, "SELECT zk_lock_acquire('c')");
bg_result($s, "SELECT zk_lock_release('c')");
ok(wait_until(sub { waits_logged('c') > 0 }, 10, 'a lone delete waits'), "a lone release's delete waits for company");

# A waiter of this cluster behind the holder: the handoff goes at once.
my $w = bg_session($a);
bg_result($s, "SELECT zk_lock_acquire('h')");
bg_start($w, "SELECT zk_lock_acquire('h', '30s') IS NOT NULL AS granted");
ok(
	wait_until(
		sub { $a->safe_psql('postgres', "SELECT count(*) FROM zk_locks WHERE name = 'h' AND state = 'waiting'") == 1 },
		10, 'the waiter queued'),
	'a second session of the cluster waits for h');
is(bg_result($s, "SELECT zk_lock_release('h')"), 't', 'the holder releases h');
ok(wait_until(sub { $a->safe_psql('postgres', "SELECT count(*) FROM zk_locks WHERE name = 'h' AND state = 'held'") == 1 },
		30, 'the waiter holds'),
	'the waiter is handed h');
is(waits_logged('h'), 0, 'a delete with a waiter of this cluster behind it does not wait for company');
my ($got) = bg_collect($w);
like($got, qr/^t$/m, "the waiter's acquire answered");
is(bg_result($w, "SELECT zk_lock_release('h')"), 't', 'the waiter releases h');

# zk_lock_release_all: no wait.
bg_result($s, "SELECT zk_lock_acquire('r')");
bg_result($s, "SELECT zk_lock_release_all()");
# Release then a listing in the same session: the delete goes first.
bg_result($s, "SELECT zk_lock_acquire('l')");
is(bg_result($s, "SELECT zk_lock_release('l')"), 't', 'l is released');
is(bg_result($s, "SELECT count(*) FROM zk_lock_contenders('l')"), '0',
	'the same session lists l right after its release: no contender left');
is(waits_logged('r'), 0, 'zk_lock_release_all does not wait for company');
# Release then try of one lock in one statement: the lock is free.
bg_result($s, "SELECT zk_lock_acquire('t')");
is(bg_result($s, "SELECT zk_lock_release('t'), zk_lock_try('t')"), 't|t',
	'release then try of the same lock: true (the create never overtakes the delete)');
is(bg_result($s, "SELECT zk_lock_release('t')"), 't', 't is released');
ok(wait_until(sub { !zk_ls($zk, '/zklock/t') && !zk_ls($zk, '/zklock/x') }, 30, 'nodes gone'),
	'no node is left behind');

$w->quit;
$s->quit;
$a->safe_psql('postgres', "ALTER SYSTEM RESET log_min_messages");
done_testing();
