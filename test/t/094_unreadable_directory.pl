# A lock directory that refuses READ (issue 41, point 7): every path of a
# request answers the same.  Another tool made "nr" with world:anyone:cwda
# (anyone may create, write and delete children, nobody may list them).
# zklock cannot see who is ahead of its node there, so no request is
# granted: alone, the create's listing is refused (ZNOAUTH) and the request
# fails (ZK000) after deleting its node.  Ready in one pass with two other
# acquires (the worker frozen while they post), the same: the others are
# granted in a multi, nr's request fails and leaves no node.  Before the
# fix the batched create of nr travelled in the multi, whose setData of
# the directory (which needs WRITE only) said the node was alone: it was
# granted without anything being read, while the lone path failed.
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::RealBin/../lib";
use ZklockTest;
use Test::More;

my $zk = zk_start(1);
my $a = zklock_node('a', $zk);
my $wpid = worker_pid($a);

my $frozen;
END { kill('CONT', $frozen) if $frozen; }

zk_create($zk, '/zklock/nr', undef, '--parents');
zk_create($zk, "/zklock/$_") for qw(p1 p2);
my $kazoo = kazoo_peer($zk);
is($kazoo->cmd('set_acl /zklock/nr world:anyone:cwda'), 'ok', "nr's directory refuses READ");

# Alone.
is(sql_sqlstate($a, "SELECT zk_lock_acquire('nr', '5s')"), 'ZK000', 'an acquire of nr alone fails (ZNOAUTH)');
is(zk_stat($zk, '/zklock/nr')->{numChildren}, '0', 'and leaves no node');

# p1 and p2 once alone: their directories are listed, known empty.
is(sql_result($a, "SELECT zk_lock_try('$_'), zk_lock_release('$_')"), 't|t', "$_ is taken alone once")
  for qw(p1 p2);

my @s = map { bg_session($a) } 1 .. 3;
my @names = qw(nr p1 p2);
for my $round (1 .. 2)
{
	kill('STOP', $wpid) or die "SIGSTOP: $!";
	$frozen = $wpid;
	wait_until(sub { proc_state($wpid) eq 'T' }, 5, 'the worker is stopped');
	bg_start($s[$_], "\\set VERBOSITY verbose\nSELECT zk_lock_acquire('$names[$_]', '10s')") for 0 .. 2;
	wait_until(sub { $a->safe_psql('postgres', "SELECT count(*) FROM zk_locks WHERE state = 'waiting'") == 3 },
		10, 'every request is posted');
	kill('CONT', $wpid);
	$frozen = undef;
	my @got = map { [ bg_collect($_) ] } @s;
	is(sqlstate_of($got[0][1]), 'ZK000', "round $round: nr's acquire, ready with others, fails as alone")
	  or diag("@{$got[0]}");
	for my $i (1, 2)
	{
		like($got[$i][0], qr/^\d+$/m, "round $round: $names[$i] is granted") or diag($got[$i][1]);
		is(bg_result($s[$i], "SELECT zk_lock_release('$names[$i]')"), 't', "round $round: $names[$i] is released");
	}
	is(zk_stat($zk, '/zklock/nr')->{numChildren}, '0', "round $round: no node is left in nr");
}
is(sql_result($a, "SELECT count(*) FROM zk_locks"), '0', 'no slot is left');

$kazoo->quit;
$_->quit for @s;
done_testing();
