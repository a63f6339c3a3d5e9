# A semaphore holder that queued for the semaphore's mutex watches its
# lease from the grant on: when an operator deletes the lease, the holder
# counts the permit lost.  One permit of 'sm', shared by clusters A and B:
#  - kazoo holds the semaphore's mutex (a kazoo Lock on sm/locks, which
#    zklock counts as a contender), so A's transaction queues behind it;
#    kazoo releases, A is granted the mutex, then the permit (its lease),
#    and records the grant's clock_timestamp();
#  - the lease node is deleted, as an operator would, with zkutil;
#  - B takes the permit that is now free, records its grant and commits;
#  - A's hold turns 'lost' in zk_locks, its server log says why, and its
#    COMMIT fails with ZK002 and commits nothing.
# Last, the two-holder check of 033's checker: every committed hold's
# [grant, commit timestamp] interval, and no instant may have two open (a
# holder that never learnt of its loss commits after B was granted).
# Nothing is left in ZooKeeper at the end.
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::RealBin/../lib";
use ZklockTest;
use Test::More;
use PostgreSQL::Test::Utils;

my $zk = zk_start(1);
my @nodes = map { zklock_node($_, $zk, conf => "track_commit_timestamp = on\n") } qw(a b);
my ($na, $nb) = @nodes;
$_->safe_psql('postgres', 'CREATE TABLE sem_hold (who text, t_start timestamptz)') for @nodes;
my $kazoo = kazoo_peer($zk);
my $path = '/zklock/sm';
my $log_offset = -s $na->logfile;

sub n_children { return scalar(my @l = zk_ls($zk, $_[0])) }

# A queues for the mutex that kazoo holds.
is($kazoo->cmd("lock_try $path/locks"), 'true', "kazoo holds sm's mutex");
my $sa = bg_session($na);
$sa->query_safe('\set VERBOSITY verbose');
my $pid_a = $sa->query_safe('SELECT pg_backend_pid()');
$sa->query_safe('BEGIN');
bg_start($sa, "SELECT 'granted', zk_semaphore_acquire_xact('sm', 1, '30s') > 0, clock_timestamp()");
wait_until(sub { n_children("$path/locks") == 2 && lock_state($na, $pid_a, 'sm') eq 'waiting' }, 15,
	'A to queue for the mutex behind kazoo');
is(n_children("$path/locks") . '/' . n_children("$path/leases"), '2/0',
	'A queued in the mutex behind kazoo, no lease yet');
is($kazoo->cmd("lock_release $path/locks"), 'ok', 'kazoo releases the mutex');
my ($out, $err) = bg_collect($sa);
my ($t_a) = $out =~ /^granted\|t\|(.+)$/m;
ok(defined $t_a, 'A is granted the permit') or diag("$out $err");
$sa->query_safe("INSERT INTO sem_hold VALUES ('A', '$t_a')");
my $lease = held_znode($na, $pid_a, 'sm');
like($lease, qr{^\Q$path\E/leases/_c_[0-9a-f-]+-lease-\d{10}$}, "A's hold is its lease");
is(n_children("$path/locks"), 0, 'A gave the mutex up');

# An operator deletes A's lease; B takes the permit that is now free.
ok(zk_delete($zk, $lease), "the operator deletes A's lease");
my $sb = bg_session($nb);
$sb->query_safe('\set VERBOSITY verbose');
$sb->query_safe('BEGIN');
like($sb->query_safe("SELECT zk_semaphore_acquire_xact('sm', 1, '10s')"), qr/^\d+$/,
	'B is granted the permit A no longer has');
$sb->query_safe("INSERT INTO sem_hold VALUES ('B', clock_timestamp())");
is(bg_sqlstate($sb, 'COMMIT'), 'ok', 'B commits');

# A learns of its loss.
wait_until(sub { lock_state($na, $pid_a, 'sm') eq 'lost' }, 15, "A's hold to turn lost");
is(lock_state($na, $pid_a, 'sm'), 'lost', "zk_locks shows A's hold lost");
like(slurp_file($na->logfile, $log_offset), qr/backend $pid_a lost ZooKeeper lock "sm": its node was deleted/,
	"A's log says the lease was deleted");
my ($st, $commit_err) = bg_sqlstate($sa, 'COMMIT');
is($st, 'ZK002', "A's COMMIT fails with ZK002");
like($commit_err, qr/ZooKeeper lock "sm" was lost/, '... saying the lock was lost');

# The checker's two-holder check over what was committed.
my @holds;
for my $node (@nodes)
{
	for my $line (split /\n/, $node->safe_psql('postgres', q{
SELECT (extract(epoch FROM t_start) * 1000000)::bigint,
       (extract(epoch FROM pg_xact_commit_timestamp(xmin)) * 1000000)::bigint, who
  FROM sem_hold}))
	{
		push @holds, [ split /\|/, $line ];
	}
}
is(join(',', sort map { $_->[2] } @holds), 'B', 'only B committed its hold');
my ($open, $max) = (0, 0);
for my $e (sort { $a->[0] <=> $b->[0] || $a->[1] <=> $b->[1] } map { ([ $_->[0], 1 ], [ $_->[1], -1 ]) } @holds)
{
	$open += $e->[1];
	$max = $open if $open > $max;
}
cmp_ok($max, '<=', 1, "never more than one holder of sm's one permit at once ($max at most)")
  or diag(join("\n", map { "$_->[2]: [$_->[0], $_->[1]]" } @holds));

$sa->quit;
$sb->quit;
wait_until(sub { n_children("$path/locks") + n_children("$path/leases") == 0 }, 15, 'sm to empty');
is(n_children("$path/locks") . '/' . n_children("$path/leases"), '0/0', 'no mutex node and no lease left of sm');
is(join(',', map { $_->safe_psql('postgres', 'SELECT count(*) FROM zk_locks') } @nodes), '0,0',
	'no cluster shows a request or hold');
$kazoo->quit;

done_testing();
