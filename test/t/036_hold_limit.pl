# zklock.max_hold_time: a hold that lasts longer than the limit in force
# when it was asked for is given up by the worker (its node deleted, so a
# waiter is granted), the backend counts it lost, and the log says why.
#  - X holds lock 'hx' in an open transaction with a row inserted, limit
#    '2s': B's waiter is granted, A's zk_locks shows the hold lost, the log
#    names X, the lock and max_hold_time, and X's COMMIT fails with ZK002
#    (detail: the limit); the row is not committed.  The loss is reported
#    once: X's next transaction commits.
#  - S holds lock 'hs' in session scope, limit '2s', and runs a long
#    statement: zklock.on_lock_lost = cancel (the default) cancels it, and
#    its next statement fails with ZK002.
#  - Holds the limit does not reach are left alone: R takes lock 'hr' three
#    times for about a second each under a '3s' limit (each hold is timed
#    on its own); P takes lock 'hp' with no limit and then sets a 1 s limit,
#    which applies to later requests only, and holds on.
# Nothing is left in ZooKeeper at the end.
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
$a->safe_psql('postgres', 'CREATE TABLE work (tag text)');

is($a->safe_psql('postgres', 'SHOW zklock.max_hold_time'), '0', 'zklock.max_hold_time is off (0) by default');
is($a->safe_psql('postgres', "SET zklock.max_hold_time = '2s'; SHOW zklock.max_hold_time"), '2s',
	'zklock.max_hold_time takes a time with a unit');
is($a->safe_psql('postgres', "SET zklock.max_hold_time = 1500; SELECT current_setting('zklock.max_hold_time')"),
	'1500ms', 'a bare number is milliseconds');
my $lost0 = zk_status_of($a)->{lost};
my $log_offset = -s $a->logfile;

sub session
{
	my ($node) = @_;
	my $s = bg_session($node);
	$s->query_safe('\set VERBOSITY verbose');
	return ($s, $s->query_safe('SELECT pg_backend_pid()'));
}

# P: a hold taken with no limit, then a limit set that is shorter than
# what follows.
my ($p, $p_pid) = session($a);
is($p->query_safe("SELECT zk_lock_acquire('hp', '10s') > 0"), 't', 'P holds hp, taken with no limit');
$p->query_safe("SET zklock.max_hold_time = '1s'");

# X: a transaction hold past its limit.
my ($x, $x_pid) = session($a);
is( $x->query_safe(
		"SET zklock.max_hold_time = '2s'; BEGIN; SELECT zk_lock_acquire_xact('hx', '10s') > 0; INSERT INTO work VALUES ('x')"),
	't', 'X holds hx in a transaction (limit 2s) and inserts a row');
my $x_node = held_znode($a, $x_pid, 'hx');
my $wx = queue_waiter($b, $zk, 'hx', '30s');

# S: a session hold past its limit, with a statement running.
my ($s, $s_pid) = session($a);
is($s->query_safe("SET zklock.max_hold_time = '2s'; SELECT zk_lock_acquire('hs', '10s') > 0"), 't',
	'S holds hs in session scope (limit 2s)');
$s->query_until(qr/sleeping\n/, "\\echo sleeping\nSELECT pg_sleep(60);\n");

# R: three holds of about a second under a 3 s limit (3 s in all).
my ($r, $r_pid) = session($a);
$r->query_safe("SET zklock.max_hold_time = '3s'");
bg_start($r,
	"DO \$\$ BEGIN FOR i IN 1..3 LOOP PERFORM zk_lock_acquire('hr', '10s'); PERFORM pg_sleep(1);"
	  . " PERFORM zk_lock_release('hr'); END LOOP; END \$\$; SELECT 'r-done'");

# X's hold is taken away: B's waiter is granted, A counts it lost.
my ($at, $out, $err) = waiter_grant($wx);
ok(defined $at, "B's waiter for hx is granted once X held it past the limit") or diag("$out $err");
wait_until(sub { lock_state($a, $x_pid, 'hx') eq 'lost' }, 15, 'X\'s hold of hx turns lost');
is(lock_state($a, $x_pid, 'hx'), 'lost', 'zk_locks shows X\'s hold of hx lost');
is(join(',', zk_ls($zk, '/zklock/hx')), zk_base(held_znode($b, $wx->{pid}, 'hx')),
	"X's node is gone (deleted by the worker), B's is the only one")
  or diag("X's node was $x_node");
wait_until(sub { slurp_file($a->logfile, $log_offset) =~ /backend $x_pid lost ZooKeeper lock "hx"/ }, 10,
	'the log line of X\'s loss');
like(slurp_file($a->logfile, $log_offset),
	qr/backend $x_pid lost ZooKeeper lock "hx": it was held longer than zklock.max_hold_time/,
	'the log names X, hx and zklock.max_hold_time');

# X's COMMIT is refused.
my ($st, $x_err) = bg_sqlstate($x, 'COMMIT');
is($st, 'ZK002', 'X: COMMIT fails with ZK002');
like($x_err, qr/ZooKeeper lock "hx" was lost/, 'X: ... the lock was lost');
like($x_err, qr/held longer than zklock.max_hold_time \(2000 ms\)/, 'X: ... the detail names the limit');
is(committed($a, 'x'), '0', 'X: the row is not committed');
is(lock_state($a, $x_pid, 'hx'), 'none', 'X: the loss is reported and forgotten');
is(bg_sqlstate($x, "BEGIN; INSERT INTO work VALUES ('x-after'); COMMIT"), 'ok', 'X: the next transaction commits');
is(committed($a, 'x-after'), '1', 'X: ... and its row is there');

# S: the running statement is cancelled, the next one reports the loss.
my ($s_out, $s_err) = bg_collect($s);
like($s_err, qr/57014: canceling statement due to user request/,
	'S: the statement running past the limit is cancelled (on_lock_lost = cancel)');
like($s_err, qr/ZK002: ZooKeeper lock "hs" was lost/, 'S: ... and the loss is reported (ZK002)');
like(slurp_file($a->logfile, $log_offset),
	qr/backend $s_pid lost ZooKeeper lock "hs": it was held longer than zklock.max_hold_time/,
	'the log names S, hs and zklock.max_hold_time');
is(bg_sqlstate($s, 'SELECT 1'), 'ok', 'S: the loss is not reported twice');
wait_until(sub { !zk_ls($zk, '/zklock/hs') }, 10, 'the node of hs to go');

# R's holds and P's hold were left alone.
my ($r_out, $r_err) = bg_collect($r);
like($r_out, qr/^r-done$/m, 'R: three holds of about a second each under a 3 s limit, all released normally');
is($r_err, '', 'R: ... without an error');
is(lock_state($a, $p_pid, 'hp'), 'held', 'P: the hold taken with no limit is still held after more than the 1 s set since');
is($p->query_safe("SELECT zk_lock_check('hp')"), 't', 'P: ... and zk_lock_check agrees');
is(zk_status_of($a)->{lost} - $lost0, 2, 'A counted exactly two holds lost: X\'s and S\'s');
unlike(slurp_file($a->logfile, $log_offset), qr/lost ZooKeeper lock "h[rp]"/, 'no loss of hr or hp in the log');
is($p->query_safe("SELECT zk_lock_release('hp')"), 't', 'P releases hp');

# A request made under P's new 1 s limit is bound by it.
is($p->query_safe("SELECT zk_lock_acquire('hp', '10s') > 0"), 't', 'P takes hp again, now under the 1 s limit');
wait_until(sub { lock_state($a, $p_pid, 'hp') eq 'lost' }, 15, 'P\'s new hold of hp turns lost');
is(bg_sqlstate($p, 'SELECT 1'), 'ZK002', 'P: the new hold outlived its 1 s limit and was lost');

is($wx->{s}->query_safe("SELECT zk_lock_release('hx')"), 't', 'B releases hx');
$_->quit for ($x, $s, $r, $p, $wx->{s});
for my $name (qw(hx hs hr hp))
{
	wait_until(sub { !zk_ls($zk, "/zklock/$name") }, 10, "the directory of $name to empty");
	is(join(',', zk_ls($zk, "/zklock/$name")), '', "no node left for $name");
}

done_testing();
