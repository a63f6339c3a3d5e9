# Per-directory order of coalesced writes (issue 41, point 4): a create
# never overtakes a delete of the same lock directory held in a batch.
# A lock directory made by another tool grants no WRITE (world:anyone:rcda),
# so a multi's setData of it is refused and the worker remembers it: its
# creates go alone at once.  A session holding the lock runs
# zk_lock_release('w') then zk_lock_try('w') while the worker is frozen
# (SIGSTOP), so both reach it in one pass: the release's delete is taken
# into the pass's batch, the try's create goes alone.  Before the fix the
# create left first, its listing still had the released node, and the try
# answered false with nobody holding the lock (true with
# zklock.batch_writes = off).  Now the delete goes first: true.
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::RealBin/../lib";
use ZklockTest;
use Test::More;

my $zk = zk_start(1);
my $a = zklock_node('a', $zk);
my $wpid = worker_pid($a);


zk_create($zk, '/zklock/w', undef, '--parents');
my $kazoo = kazoo_peer($zk);
is($kazoo->cmd('set_acl /zklock/w world:anyone:rcda'), 'ok', "w's directory grants no WRITE");

my @s = map { bg_session($a) } 1 .. 2;

# Two acquires in one pass: a multi with both creates and the setData of
# each directory, refused for w's: the worker learns that w refuses it.
freeze_worker($wpid);
bg_start($s[0], "SELECT zk_lock_acquire('w', '30s')");
bg_start($s[1], "SELECT zk_lock_acquire('v', '30s')");
wait_until(sub { $a->safe_psql('postgres', "SELECT count(*) FROM zk_locks WHERE state = 'waiting'") == 2 },
	10, 'both requests are posted');
thaw_worker($wpid);
for my $s (@s)
{
	my ($out, $err) = bg_collect($s);
	like($out, qr/^\d+$/m, 'an acquire is granted') or diag($err);
}
is(bg_result($s[1], "SELECT zk_lock_release('v')"), 't', 'v is released');

for my $round (1 .. 3)
{
	# The release and the try of w, in one pass of the worker.
	freeze_worker($wpid);
	bg_start($s[0], "SELECT zk_lock_release('w'), zk_lock_try('w')");
	wait_until(
		sub {
			$a->safe_psql('postgres',
				"SELECT count(*) FROM zk_locks WHERE name = 'w' AND state = 'waiting'") == 1
		},
		10,
		'the try is posted');
	thaw_worker($wpid);
	my ($out, $err) = bg_collect($s[0]);
	like($out, qr/^t\|t$/m, "round $round: release then try of w: true, the lock was free") or diag($err);
	is(scalar(zk_ls($zk, '/zklock/w')), 1, "round $round: one node in w's directory, the try's");
}
is(bg_result($s[0], "SELECT zk_lock_release('w')"), 't', 'w is released');
ok(wait_until(sub { !zk_ls($zk, '/zklock/w') }, 30, 'w is empty'), 'no node is left in w');
$kazoo->quit;
$_->quit for @s;

done_testing();
