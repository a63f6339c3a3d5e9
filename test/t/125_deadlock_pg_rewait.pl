# A deadlock closed by a backend that goes on waiting on a PostgreSQL lock,
# but on another one (issue 46, review).  P holds zklock lock "l" and waits
# for table t1, held by X; A holds t2 and waits for "l".  A's first check
# finds no cycle (X waits for nothing).  X commits: P takes t1 and now
# waits for t2, held by A, which closes A -> P -> A.  P was waiting on a
# PostgreSQL lock at A's last check and still is, so a recheck rule that
# knows waiters by pid alone never checks A again: A waited until
# lock_timeout (55P03) instead of failing with 40P01.
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::RealBin/../lib";
use ZklockTest;
use ZklockTest::Deadlock;
use Test::More;

my $zk = zk_start(1);
my $n = zklock_node('a', $zk,
	conf => [ "cluster_name = 'a'", "deadlock_timeout = '200ms'", "lock_timeout = '15s'" ]);
$n->safe_psql('postgres', 'CREATE TABLE t1 (); CREATE TABLE t2 ();');

my $sa = holder($n);
$sa->query_safe('LOCK TABLE t2 IN ACCESS EXCLUSIVE MODE');
my $sx = holder($n);
$sx->query_safe('LOCK TABLE t1 IN ACCESS EXCLUSIVE MODE');
my $sp = holder($n, 'l');
$sp->query_until(qr/started/, "\\echo started\nLOCK TABLE t1, t2 IN ACCESS EXCLUSIVE MODE;\n\\echo done\n");
wait_until(sub {
	$n->safe_psql('postgres', "SELECT wait_event_type FROM pg_stat_activity WHERE pid = $sp->{pid}") eq 'Lock'
}, 30, 'P waits for t1');

my $checks = $n->safe_psql('postgres', 'SELECT deadlock_checks FROM zk_status()');
start_wait($sa, $n, 'l');
ok(wait_until(sub {
	$n->safe_psql('postgres', 'SELECT deadlock_checks FROM zk_status()') > $checks
}, 30, 'A checked'), 'A made its first check (no cycle yet)');
# A few more looks, each finding nothing new.
select(undef, undef, undef, 1.0);

$sx->query_safe('COMMIT');
is(finish_wait($sa), '40P01', 'the cycle P closed by its next PostgreSQL wait is broken: A fails with 40P01');
like($sa->{last_err}, qr/waits for a PostgreSQL lock; blocked by process $sa->{pid}\./,
	'the detail names the PostgreSQL wait that closed it');
$sa->query('ROLLBACK');
$sp->query_until(qr/done/, '');
end_all($sp, $sx, $sa);
ok(wait_until(sub { !zk_ls($zk, '/zklock/l') && !zk_ls($zk, '/zklock/.waits') }, 30, 'no node'),
	'no node is left');
done_testing();
