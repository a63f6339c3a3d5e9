# An operator deletes the ZooKeeper node of a lock that A holds (zkutil, as
# any other ZooKeeper client would).  The lock is then free for everybody,
# so A must treat it as lost although its session is fine:
#  (1) H holds L in an open transaction that inserted a row.  After the
#      deletion zk_locks shows L 'lost', the log names H's pid and L,
#      zk_lock_check('L') is false, B can take L, H's COMMIT fails with ZK002
#      and the row is not committed.  The loss is reported once: H's next
#      transaction commits, and H can take L again once B released it.
#  (2) S holds L2 in session scope and runs a long statement.  After the
#      deletion the statement is cancelled (zklock.on_lock_lost = cancel),
#      the next statement's commit reports the loss (ZK002), once.
#  (3) W in A waits for L3 right behind B's holder SB, and an operator
#      deletes W's waiting node.  W watches its own node, so it queues again
#      at once with a new node, and SC in B queues after it.  When SB
#      releases, W is granted, then SC: W never acts as a holder on the
#      strength of a node it no longer has.  W takes the lock and inserts a
#      row in one autocommit statement, so the grants show in what commits.
#  (4) The same deletion when W2's predecessor is another waiter, which then
#      times out: W2 queues again and is granted only after SB releases.
# A's ZooKeeper session is untouched throughout; no node is left at the end.
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::RealBin/../lib";
use ZklockTest;
use Test::More;
use PostgreSQL::Test::Utils;
use Time::HiRes qw(time sleep);

my $zk = zk_start(1);
my $a = zklock_node('a', $zk);
my $b = zklock_node('b', $zk);
$a->safe_psql('postgres', 'CREATE TABLE work (tag text)');

my $before = zk_status_of($a);

# ---------------------------------------------------------------------
# (1) A held transaction-scope lock loses its node.
# ---------------------------------------------------------------------
my $h = bg_session($a);
$h->query_safe('\set VERBOSITY verbose');
my $h_pid = $h->query_safe('SELECT pg_backend_pid()');
is($h->query_safe("BEGIN; SELECT zk_lock_acquire_xact('L', '10s') > 0; INSERT INTO work VALUES ('under-deleted-lock')"),
	't', '(1) H holds L in an open transaction with a row inserted');
is($h->query_safe("SELECT zk_lock_check('L')"), 't', '(1) zk_lock_check(L) is true while the node exists');
my $znode = $a->safe_psql('postgres', "SELECT znode FROM zk_locks WHERE pid = $h_pid AND name = 'L' AND state = 'held'");
is(join(',', zk_ls($zk, '/zklock/L')), zk_base($znode), '(1) ZooKeeper has H\'s node');

my $log_offset = -s $a->logfile;
ok(zk_delete($zk, $znode), '(1) an operator deletes H\'s node');
wait_until(sub { lock_state($a, $h_pid, 'L') eq 'lost' }, 10, 'L turns lost');
is(lock_state($a, $h_pid, 'L'), 'lost', '(1) zk_locks shows L lost');
wait_until(sub { slurp_file($a->logfile, $log_offset) =~ /lost ZooKeeper lock/ }, 5, 'the loss is logged');
like(slurp_file($a->logfile, $log_offset), qr/backend $h_pid lost ZooKeeper lock "L": its node was deleted/,
	'(1) the log names the pid, the lock and the cause');
is(zk_status_of($a)->{lost}, $before->{lost} + 1, '(1) zk_status counts one lost lock');
is($h->query_safe("SELECT zk_lock_check('L')"), 'f', '(1) zk_lock_check(L) is false');

# The lock really is free: B takes it.
my $sb = bg_session($b);
is($sb->query_safe("SELECT zk_lock_try('L')"), 't', '(1) B can take L after the deletion');
my $b_node = $b->safe_psql('postgres', "SELECT znode FROM zk_locks WHERE name = 'L' AND state = 'held'");
is(join(',', zk_ls($zk, '/zklock/L')), zk_base($b_node), '(1) ZooKeeper has B\'s node alone');

$h->query('COMMIT');
like($h->{stderr}, qr/ZK002: ZooKeeper lock "L" was lost/, '(1) H\'s COMMIT fails with ZK002');
$h->{stderr} = '';
is(committed($a, 'under-deleted-lock'), '0', '(1) the row is not committed');
is(lock_state($a, $h_pid, 'L'), 'none', '(1) the loss was reported and L forgotten');

# Reported once: the next transaction commits.
$h->query("BEGIN; INSERT INTO work VALUES ('after-loss'); COMMIT");
is($h->{stderr}, '', '(1) H\'s next transaction commits');
$h->{stderr} = '';
is(committed($a, 'after-loss'), '1', '(1) ... and its row is there');

# H can take L again once B releases it.
is($h->query_safe("SELECT zk_lock_try('L')"), 'f', '(1) H cannot take L while B holds it');
is($sb->query_safe("SELECT zk_lock_release('L')"), 't', '(1) B releases L');
$sb->quit;
is($h->query_safe("BEGIN; SELECT zk_lock_acquire_xact('L', '5s') > 0; INSERT INTO work VALUES ('reacquired'); COMMIT"),
	't', '(1) H takes L again');
is(committed($a, 'reacquired'), '1', '(1) ... its row is there');

# ---------------------------------------------------------------------
# (2) A session-scope holder running a statement loses its node.
# ---------------------------------------------------------------------
my $s = bg_session($a);
$s->query_safe('\set VERBOSITY verbose');
my $s_pid = $s->query_safe('SELECT pg_backend_pid()');
is($s->query_safe("SELECT zk_lock_acquire('L2', '10s') > 0"), 't', '(2) S holds L2 in session scope');
my $znode2 = $a->safe_psql('postgres', "SELECT znode FROM zk_locks WHERE pid = $s_pid AND name = 'L2' AND state = 'held'");
$s->query_until(qr/sleeping\n/, "\\echo sleeping\nSELECT pg_sleep(30);\n");
wait_until(sub {
	$a->safe_psql('postgres', "SELECT count(*) FROM pg_stat_activity WHERE pid = $s_pid AND query LIKE 'SELECT pg_sleep%' AND state = 'active'") eq '1'
}, 10, 'S runs its statement');
my $t_delete = time;
ok(zk_delete($zk, $znode2), '(2) an operator deletes S\'s node');
my $out = $s->query("SELECT 'after-cancel'");
my $err = $s->{stderr};
$s->{stderr} = '';
my $t_told = time - $t_delete;
like($err, qr/57014: canceling statement due to user request/, '(2) S\'s running statement is cancelled');
cmp_ok($t_told, '<', 5, sprintf('(2) ... %.1f s after the deletion (pg_sleep would have run 30 s)', $t_told));
like($err, qr/57014: canceling statement.*ZK002: ZooKeeper lock "L2" was lost/s,
	'(2) S\'s next statement fails with ZK002 at commit');
unlike($out, qr/after-cancel/, '(2) ... and returns nothing');
$s->query("SELECT zk_lock_release('L2')");
like($s->{stderr}, qr/you don't own a ZooKeeper lock named "L2"/, '(2) the loss is reported once: nothing left to release');
unlike($s->{stderr}, qr/ZK002/, '(2) ... no second ZK002');
$s->{stderr} = '';
is($s->query_safe("SELECT zk_lock_acquire('L2', '5s') > 0"), 't', '(2) S takes L2 again');
is($b->safe_psql('postgres', "SELECT zk_lock_try('L2')"), 'f', '(2) B cannot take L2 while S holds it again');
is($s->query_safe("SELECT zk_lock_release('L2')"), 't', '(2) S releases L2');

# The session was not harmed by any of this.
my $after = zk_status_of($a);
is($after->{state}, 'connected', '(2) A is connected');
is($after->{session_id}, $before->{session_id}, '(2) A kept its ZooKeeper session');
is($after->{lost}, $before->{lost} + 2, '(2) zk_status counts two lost locks');

# ---------------------------------------------------------------------
# (3) A's *waiting* node is deleted while its predecessor is the holder.
# ---------------------------------------------------------------------
# W in A waits behind SB (B) for L3; an operator deletes W's node.  W
# watches its own node, so it queues again at once with a new node; SC (B)
# queues after that.  If W acted on SB's release without its node (the
# handoff needs no re-read), it would hold L3 beside the real lowest node:
# W's statement takes the lock and inserts a row in one autocommit
# transaction, so the order of grants shows in what was committed.
my $sb3 = bg_session($b);
is($sb3->query_safe("SELECT zk_lock_acquire('L3', '10s') > 0"), 't', '(3) SB (B) holds L3');
my $sb3_node = $b->safe_psql('postgres', "SELECT znode FROM zk_locks WHERE name = 'L3' AND state = 'held'");
my $w = bg_session($a);
$w->query_safe('\set VERBOSITY verbose');
my $w_pid = $w->query_safe('SELECT pg_backend_pid()');
$w->query_until(qr/waiting\n/,
	"\\echo waiting\nINSERT INTO work SELECT 'w-under-L3' FROM (SELECT zk_lock_acquire_xact('L3', '20s')) x;\n");
my $w_node = '';
wait_until(sub {
	$w_node = $a->safe_psql('postgres', "SELECT coalesce(znode, '') FROM zk_locks WHERE pid = $w_pid AND name = 'L3' AND state = 'waiting'");
	$w_node ne '' && zk_ls($zk, '/zklock/L3') == 2
}, 10, 'W queued behind SB');
ok(zk_delete($zk, $w_node), '(3) an operator deletes W\'s waiting node');
my $w_new = '';
wait_until(sub {
	$w_new = $a->safe_psql('postgres', "SELECT coalesce(znode, '') FROM zk_locks WHERE pid = $w_pid AND name = 'L3' AND state = 'waiting'");
	$w_new ne '' && $w_new ne $w_node
}, 10, 'W queues again');
isnt($w_new, $w_node, '(3) W queued again with a new node while SB still holds L3');
is(join(',', sort(zk_ls($zk, '/zklock/L3'))), join(',', sort(zk_base($sb3_node), zk_base($w_new))),
	'(3) ZooKeeper holds SB\'s node and W\'s new one, nothing else');
my $sc = bg_session($b);
my $sc_pid = $sc->query_safe('SELECT pg_backend_pid()');
$sc->query_until(qr/waiting\n/,
	"\\echo waiting\nSELECT 'granted', zk_lock_acquire('L3', '20s') > 0;\n");
wait_until(sub { $b->safe_psql('postgres', "SELECT state FROM zk_locks WHERE pid = $sc_pid AND name = 'L3'") eq 'waiting' },
	10, 'SC queued behind W');
is(committed($a, 'w-under-L3'), '0', '(3) W has not committed while SB holds L3');
is($sb3->query_safe("SELECT zk_lock_release('L3')"), 't', '(3) SB releases L3');
$w->query("SELECT 'sync'");
is($w->{stderr}, '', '(3) W, now the lowest node, is granted L3 and its statement completes');
$w->{stderr} = '';
is(committed($a, 'w-under-L3'), '1', '(3) ... and commits under it');
my ($sc_out) = $sc->query("SELECT 'sync'");
like($sc_out, qr/^granted\|t$/m, '(3) SC is granted L3 after W\'s transaction ended');
is($sc->query_safe("SELECT zk_lock_release('L3')"), 't', '(3) SC releases L3');
$sb3->quit;
$sc->quit;
$w->quit;

# ---------------------------------------------------------------------
# (4) A's waiting node is deleted while its predecessor is another waiter.
# ---------------------------------------------------------------------
# SB (B) holds L4; SX (B) waits with a 2 s timeout; W2 (A) waits behind SX.
# An operator deletes W2's node; W2 queues again, SX times out, and W2 is
# granted only after SB releases.
my $sb4 = bg_session($b);
is($sb4->query_safe("SELECT zk_lock_acquire('L4', '10s') > 0"), 't', '(4) SB holds L4');
my $sx = bg_session($b);
$sx->query_safe('\set VERBOSITY verbose');
my $sx_pid = $sx->query_safe('SELECT pg_backend_pid()');
$sx->query_until(qr/waiting\n/, "\\echo waiting\nSELECT zk_lock_acquire('L4', '3s');\n");
wait_until(sub { zk_ls($zk, '/zklock/L4') == 2 }, 10, 'SX queued behind SB');
my $w2 = bg_session($a);
$w2->query_safe('\set VERBOSITY verbose');
my $w2_pid = $w2->query_safe('SELECT pg_backend_pid()');
$w2->query_until(qr/waiting\n/,
	"\\echo waiting\nINSERT INTO work SELECT 'w2-under-L4' FROM (SELECT zk_lock_acquire_xact('L4', '20s')) x;\n");
my $w2_node = '';
wait_until(sub {
	$w2_node = $a->safe_psql('postgres', "SELECT coalesce(znode, '') FROM zk_locks WHERE pid = $w2_pid AND name = 'L4' AND state = 'waiting'");
	$w2_node ne '' && zk_ls($zk, '/zklock/L4') == 3
}, 10, 'W2 queued behind SX');
ok(zk_delete($zk, $w2_node), '(4) an operator deletes W2\'s waiting node');
$sx->query("SELECT 'sync'");
like($sx->{stderr}, qr/ERROR:\s+55P03: could not obtain ZooKeeper lock "L4"/, '(4) SX times out (55P03)');
$sx->quit;
my $w2_new = '';
wait_until(sub {
	$w2_new = $a->safe_psql('postgres', "SELECT coalesce(znode, '') FROM zk_locks WHERE pid = $w2_pid AND name = 'L4' AND state = 'waiting'");
	$w2_new ne '' && $w2_new ne $w2_node
}, 10, 'W2 queues again');
isnt($w2_new, $w2_node, '(4) W2 queued again with a new node');
ok(scalar(grep { $_ eq zk_base($w2_new) } zk_ls($zk, '/zklock/L4')), '(4) ... which ZooKeeper has');
is(committed($a, 'w2-under-L4'), '0', '(4) W2 has not committed while SB holds L4');
is($sb4->query_safe("SELECT zk_lock_release('L4')"), 't', '(4) SB releases L4');
$w2->query("SELECT 'sync'");
is($w2->{stderr}, '', '(4) W2 is granted L4 after SB\'s release');
$w2->{stderr} = '';
is(committed($a, 'w2-under-L4'), '1', '(4) ... and commits under it');
$sb4->quit;
$w2->quit;

$h->quit;
$s->quit;
for my $name (qw(L L2 L3 L4))
{
	wait_until(sub { !zk_ls($zk, "/zklock/$name") }, 10, "the directory of $name empties");
	is(join(',', zk_ls($zk, "/zklock/$name")), '', "no orphan node left for $name");
}
is($a->safe_psql('postgres', 'SELECT count(*) FROM zk_locks') . $b->safe_psql('postgres', 'SELECT count(*) FROM zk_locks'),
	'00', 'no lock entry left in A or B');
is(zk_status_of($a)->{session_id}, $before->{session_id}, 'A kept its ZooKeeper session throughout');

done_testing();
