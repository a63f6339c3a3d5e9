# A set of locks longer than the session may hold (issue 41, point 7):
# zk_lock_acquire(text[]) keeps each name's key as long as the name (not
# 256 bytes per element) and checks zklock.max_locks_per_backend against
# the set's distinct names before anything is sent.  With a cap of 2:
#  (1) a set of three names is refused whole (53400, the cap named in the
#      detail), and none of its directories is made in ZooKeeper;
#  (2) a set of 200,000 names is refused the same;
#  (3) a set of two names, one of them given twice, is taken (a name
#      repeated is one lock) and released with its session;
#  (4) with one lock held, a set of the held lock and a new one is taken,
#      a set of two new ones is refused (the held lock counts, a held
#      member takes no new slot).
# Before the fix the first names' nodes were created, and the set failed
# only at the third lock.
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
like($err, qr/too many ZooKeeper locks in one set/, '(1) the error says the set is too long');
like($err, qr/The set names 3 distinct locks; with those this session holds, it would use 3 of its 2 lock slots/,
	'(1) the detail names both');
ok(!defined zk_stat($zk, "/zklock/$_"), "(1) nothing was sent for $_") for qw(s1 s2 s3);

# (2)
($ret, $out, $err) = $a->psql('postgres',
	"\\set VERBOSITY verbose\n$cap SELECT zk_lock_acquire(array_agg('b' || i), '2s') FROM generate_series(1, 200000) i");
is(sqlstate_of($err), '53400', '(2) a set of 200,000 names is refused the same');
ok(!defined zk_stat($zk, '/zklock/b1'), '(2) nothing was sent');

# (3)
like($a->safe_psql('postgres', "$cap SELECT zk_lock_acquire(ARRAY['t1', 't2', 't1'], '10s')"),
	qr/^\{(\d+),\d+,\1\}$/, '(3) a set of two names, one given twice, is taken');
wait_until(sub { $a->safe_psql('postgres', 'SELECT count(*) FROM zk_locks') eq '0' }, 10,
	'(3) and released with its session');

# (4) One psql session; its statements go on after an error.
($ret, $out, $err) = $a->psql('postgres', join("\n",
	$cap,
	"SELECT zk_lock_acquire('u1', '10s') IS NOT NULL AS held;",
	"SELECT 'both:' || cardinality(zk_lock_acquire(ARRAY['u1', 'u2'], '10s'));",
	'SELECT zk_lock_release_all();',
	"SELECT zk_lock_acquire('u1', '10s') IS NOT NULL AS held;",
	"SELECT 'new:' || cardinality(zk_lock_acquire(ARRAY['u2', 'u3'], '2s'));",
	"SELECT 'count:' || count(*) FROM zk_locks WHERE pid = pg_backend_pid();"), on_error_stop => 0);
like($out, qr/^both:2$/m, '(4) a set of the held lock and a new one is taken');
unlike($out, qr/^new:/m, '(4) a set of two new ones beside a held lock is not taken');
like($err, qr/too many ZooKeeper locks in one set/, '(4) ... but refused whole');
like($out, qr/^count:1$/m, '(4) ... and the session still holds its one lock');
ok(!defined zk_stat($zk, "/zklock/$_"), "(4) nothing was sent for $_") for qw(u3);

done_testing();
