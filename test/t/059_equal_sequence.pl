# Two contenders with equal sequence numbers in one lock directory: nobody
# is granted on them.  ZooKeeper 3.8 never wraps a directory's child
# counter: at 2147483647 it hands out 2147483647 again to every create, so
# every request made there has the same number.  The same anomaly is built
# here without 2^31 creates: a plain (not sequential) ephemeral node named
# as kazoo names its lock nodes, "<hex>__lock__<n>", where <n> is the number
# the directory's next sequential child gets.  Then, on one ZooKeeper
# server, with clusters A and B and a kazoo Lock:
#  - zklock's request (A) that got the same number is not granted, nor is
#    anyone else (B's zk_lock_try, kazoo's Lock): never two holders;
#  - zk_lock_contenders shows both equal nodes in state "anomaly", none
#    held, and A's worker logs the anomaly, with the directory, once;
#  - once the plain node goes, A's request holds, and the lock works as
#    before.
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::RealBin/../lib";
use ZklockTest;
use Test::More;
use PostgreSQL::Test::Utils;

my $zk = zk_start(1);
my $a = zklock_node('a', $zk);
my $b = zklock_node('b', $zk);
my $kazoo = kazoo_peer($zk);
my $dir = '/zklock/x';

# The directory, persistent (an empty container could be removed), then
# the plain child numbered as the next sequential child will be: its own
# create moves the counter to that number.
zk_create($zk, $dir, undef, '--parents');
my $next = zk_stat($zk, $dir)->{cversion} + 1;
my $plain = zk_hold($zk, sprintf('%s/%s__lock__%010d', $dir, '0123456789abcdef' x 2, $next),
	flags => ['--ephemeral']);
is(zk_stat($zk, $dir)->{cversion}, $next, 'the directory counter is at the plain node\'s number');

my $s = bg_session($a);
my $pid = $s->query_safe('SELECT pg_backend_pid()');
bg_start($s, "SELECT 'granted', zk_lock_acquire('x', '60s') > 0");
wait_until(sub { zk_ls($zk, $dir) == 2 }, 15, "A's node is created");
my ($mine) = grep { /-lock-/ } zk_ls($zk, $dir);
like($mine, qr/-lock-\Q${\ sprintf('%010d', $next)}\E$/, "A's node has the plain node's sequence number");

# Give a wrong grant time to happen: A's state settles within a round trip.
wait_until(sub { $a->safe_psql('postgres', "SELECT count(*) FROM zk_locks WHERE pid = $pid AND state = 'waiting'") eq '1' }, 15,
	"A's request is waiting");
is(lock_state($a, $pid, 'x'), 'waiting', 'A is not granted beside an equal-sequence node');
is(sql_result($b, "SELECT zk_lock_try('x')"), 'f', "B's zk_lock_try fails");
is($kazoo->cmd("lock_try $dir"), 'false', "kazoo's Lock cannot take it");
is($a->safe_psql('postgres', "SELECT zk_lock_verify('x', (SELECT fencing_token FROM zk_locks WHERE pid = $pid))"), 'f',
	"zk_lock_verify: A's token does not hold");
is( $a->safe_psql('postgres',
		"SELECT string_agg(client || ' ' || state, ', ' ORDER BY client) FROM zk_lock_contenders('x')"),
	'kazoo anomaly, zklock anomaly',
	'zk_lock_contenders: both equal nodes are an anomaly, none holds');
is($a->safe_psql('postgres', "SELECT count(*) FROM zk_lock_contenders('x') WHERE state = 'held'"), '0',
	'zk_lock_contenders: no holder');
wait_until(sub { slurp_file($a->logfile) =~ /equal sequence numbers/ }, 15, 'the anomaly is logged');

# The plain node goes: A holds, alone.
$plain->release;
my ($out) = bg_collect($s);
like($out, qr/^granted\|t$/m, "A holds once the equal node is gone");
is($a->safe_psql('postgres', "SELECT string_agg(client || ' ' || state, ', ') FROM zk_lock_contenders('x')"),
	'zklock held', 'zk_lock_contenders: A holds');
is($kazoo->cmd("lock_try $dir"), 'false', "kazoo's Lock still cannot take it");
is($s->query_safe("SELECT zk_lock_release('x')"), 't', 'A releases');
is($kazoo->cmd("lock_try $dir 10"), 'true', "kazoo's Lock takes it");
is($kazoo->cmd("lock_release $dir"), 'ok', "kazoo's Lock releases");

$s->quit;
$kazoo->quit;
zk_wait_empty($zk, $dir, 'at the end');
expect_in_log($a, qr/equal sequence numbers/, 1);
expect_in_log($b, qr/equal sequence numbers/, 0);

done_testing();
