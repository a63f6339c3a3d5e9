# A set of locks longer than the session may hold (issue 41, point 7):
# zk_lock_acquire(text[]) checks zklock.max_locks_per_backend against the
# array's length before any work per element (each name's key takes 256
# bytes) and before anything is sent.  With a cap of 2:
#  (1) a set of three names is refused whole (53400, the cap named in the
#      detail), and none of its directories is made in ZooKeeper;
#  (2) a set of 200,000 names is refused the same;
#  (3) a set of two names is taken and released as before (duplicates
#      count in the length: the array's length is all that is known first).
# Before the fix the keys of every element were made first, then the
# first names' nodes created, and the set failed only at the third lock.
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::RealBin/../lib";
use ZklockTest;
use Test::More;

my $zk = zk_start(1);
my $a = zklock_node('a', $zk);
my $cap = 'SET zklock.max_locks_per_backend = 2;';

# (1)
my ($ret, $out, $err) = $a->psql('postgres',
	"\\set VERBOSITY verbose\n$cap SELECT zk_lock_acquire(ARRAY['s1', 's2', 's3'], '2s')");
is(sqlstate_of($err), '53400', '(1) a set of three names over a cap of two is refused');
like($err, qr/too many ZooKeeper lock names in one set/, '(1) the error says the set is too long');
like($err, qr/The array has 3 elements; this session may hold at most 2 ZooKeeper locks/, '(1) the detail names both');
ok(!defined zk_stat($zk, "/zklock/$_"), "(1) nothing was sent for $_") for qw(s1 s2 s3);

# (2)
($ret, $out, $err) = $a->psql('postgres',
	"\\set VERBOSITY verbose\n$cap SELECT zk_lock_acquire(array_agg('b' || i), '2s') FROM generate_series(1, 200000) i");
is(sqlstate_of($err), '53400', '(2) a set of 200,000 names is refused the same');
ok(!defined zk_stat($zk, '/zklock/b1'), '(2) nothing was sent');

# (3)
like($a->safe_psql('postgres', "$cap SELECT zk_lock_acquire(ARRAY['t1', 't2'], '10s')"),
	qr/^\{\d+,\d+\}$/, '(3) a set of two names is taken');
wait_until(sub { $a->safe_psql('postgres', 'SELECT count(*) FROM zk_locks') eq '0' }, 10,
	'(3) and released with its session');
done_testing();
