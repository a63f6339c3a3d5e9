# zklock writes no data it does not own (issue 41, point 5).  A multi of
# coalesced creates carries a setData of each create's lock directory
# (its Stat gives the tokens and spares the listing).  A lock directory
# that holds another client's data keeps it, whatever zklock does there:
#  (1) "data1" made by another tool with its data ("owner=billing;max=7"),
#      never listed by zklock: acquires of it ready with others in one pass
#      (the worker frozen while they post), three times;
#  (2) "data2", listed by zklock while empty, then given data by a kazoo
#      client: the next multi's setData expects the version it saw and is
#      refused (ZBADVERSION) instead of erasing it.
# Every acquire is granted, each directory's data and data version stay
# as the other clients left them.  Before the fix the multi's setData
# emptied the directory and bumped its version on every batched create.
# The companion locks "plain" and "plain2" (empty data) still travel in
# multis.
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::RealBin/../lib";
use ZklockTest;
use Test::More;

my $zk = zk_start(1);
my $a = zklock_node('a', $zk);
my $wpid = worker_pid($a);


my @s = map { bg_session($a) } 1 .. 3;

# The locks @names, asked for together in one pass, then released.
sub together
{
	my ($what, @names) = @_;
	freeze_worker($wpid);
	bg_start($s[$_], "SELECT zk_lock_acquire('$names[$_]', '30s')") for 0 .. $#names;
	wait_until(
		sub {
			$a->safe_psql('postgres', "SELECT count(*) FROM zk_locks WHERE state = 'waiting'") == @names;
		},
		10,
		'every request is posted');
	thaw_worker($wpid);
	for my $i (0 .. $#names)
	{
		my ($out, $err) = bg_collect($s[$i]);
		like($out, qr/^\d+$/m, "$what: $names[$i] is granted") or diag($err);
	}
	for my $i (0 .. $#names)
	{
		is(bg_result($s[$i], "SELECT zk_lock_release('$names[$i]')"), 't', "$what: $names[$i] is released");
	}
}

my $data = 'owner=billing;max=7';
zk_create($zk, '/zklock/data1', $data, '--parents');
zk_create($zk, '/zklock/data2');
zk_create($zk, '/zklock/plain');
zk_create($zk, '/zklock/plain2');
my $kazoo = kazoo_peer($zk);

# (1)
for my $round (1 .. 3)
{
	together("(1) round $round", 'data1', 'plain', 'plain2');
	is(zk_get($zk, '/zklock/data1'), $data, "(1) round $round: data1's data is the other tool's");
	is(zk_stat($zk, '/zklock/data1')->{version}, '0', "(1) round $round: data1's data version is unchanged");
}

# (2) data2 is listed by zklock while empty, then written by kazoo.
together('(2) first', 'data2', 'plain', 'plain2');
is($kazoo->cmd("set_data /zklock/data2 $data"), 'ok', '(2) kazoo writes data2\'s data');
my $version = zk_stat($zk, '/zklock/data2')->{version};
for my $round (1 .. 2)
{
	together("(2) round $round", 'data2', 'plain', 'plain2');
	is(zk_get($zk, '/zklock/data2'), $data, "(2) round $round: data2's data is kazoo's");
	is(zk_stat($zk, '/zklock/data2')->{version}, $version, "(2) round $round: data2's data version is unchanged");
}
cmp_ok(zk_stat($zk, '/zklock/plain')->{version}, '>', 0,
	"plain's directory (empty data) was set by multis: coalesced writes still work there");

$kazoo->quit;
$_->quit for @s;
done_testing();
