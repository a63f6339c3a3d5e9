# Revocation, Curator's protocol (the data "__REVOKE__" written on a
# holder's node), between zklock clusters and with Curator both ways:
#  (1) zk_lock_revoke in cluster B asks a holder in cluster A, under each
#      zklock.on_revoke value of the holder (the value in force when it
#      asked for the lock):
#      ignore (the default): a log line, zk_locks shows 'revoke requested',
#        the holder keeps the lock;
#      cancel: a transaction holder idle with a row inserted loses the lock
#        (its node is deleted, B's waiter is granted) and its COMMIT fails
#        with ZK002; a session holder's running statement is cancelled and
#        its next statement fails with ZK002;
#      terminate: the holding backend is terminated, its node goes.
#      zk_lock_revoke counts the holders it asked (waiters are not asked;
#      a free lock: 0).
#  (2) A Curator InterProcessMutex made revocable is asked by
#      zk_lock_revoke: with a listener that releases, the SQL waiter
#      behind it is granted; with one that keeps the lock, it was asked
#      and still holds.
#  (3) Curator's Revoker.attemptRevoke on a zklock holder's node
#      (zk_locks.znode), on_revoke = cancel: the holder loses the lock and
#      its COMMIT fails with ZK002; Curator then takes the mutex.
#  (4) Permissions: a role not granted zk_lock_revoke gets 42501, one
#      granted it may revoke; zklock.on_revoke is for superusers to set.
# Nothing is left in ZooKeeper at the end.
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::RealBin/../lib";
use ZklockTest;
use Test::More;
use IPC::Run;
use PostgreSQL::Test::Utils;

my $zk = zk_start(1);
my $a = zklock_node('a', $zk);
my $b = zklock_node('b', $zk);
$a->safe_psql('postgres', 'CREATE TABLE work (tag text)');
my $log_offset = -s $a->logfile;

sub session
{
	my ($node, $sql) = @_;
	my $s = bg_session($node);
	$s->query_safe('\set VERBOSITY verbose');
	my $pid = $s->query_safe('SELECT pg_backend_pid()');
	$s->query_safe($sql) if defined $sql;
	return ($s, $pid);
}

sub a_log { return slurp_file($a->logfile, $log_offset) }

sub revoke_from_b
{
	my ($name) = @_;
	return $b->safe_psql('postgres', "SELECT zk_lock_revoke('$name')");
}

# --- (1) each zklock.on_revoke value of a zklock holder

is($a->safe_psql('postgres', 'SHOW zklock.on_revoke'), 'ignore', 'zklock.on_revoke is ignore by default');
is(revoke_from_b('free'), '0', 'zk_lock_revoke of a free lock asks nobody (0)');

# ignore
my ($hi, $hi_pid) = session($a, "SELECT zk_lock_acquire('ri', '10s')");
my $ri_node = held_znode($a, $hi_pid, 'ri');
is(revoke_from_b('ri'), '1', 'ignore: zk_lock_revoke from B asks the one holder in A (1)');
is(zk_get($zk, $ri_node), '__REVOKE__', "ignore: the holder's node carries Curator's revocation message");
wait_until(sub { lock_state($a, $hi_pid, 'ri') eq 'revoke requested' }, 15, 'zk_locks to show the request');
is(lock_state($a, $hi_pid, 'ri'), 'revoke requested', "ignore: zk_locks shows 'revoke requested'");
like(a_log(), qr/backend $hi_pid was asked to give up ZooKeeper lock "ri"/, 'ignore: the log says the holder was asked');
is($hi->query_safe("SELECT zk_lock_check('ri')"), 't', 'ignore: the holder keeps the lock (zk_lock_check)');
is(join(',', zk_ls($zk, '/zklock/ri')), zk_base($ri_node), 'ignore: its node stays');
is($a->safe_psql('postgres', "SELECT zk_lock_try('ri')"), 'f', 'ignore: nobody else gets the lock');
is($hi->query_safe("SELECT zk_lock_release('ri')"), 't', 'ignore: the holder releases normally');
zk_wait_empty($zk, '/zklock/ri', 'after the release of ri');

# cancel: a transaction holder, idle, and a session holder running a
# statement; B waits for both locks.
my ($hc, $hc_pid) = session($a,
	"SET zklock.on_revoke = 'cancel'; BEGIN; SELECT zk_lock_acquire_xact('rc', '10s'); INSERT INTO work VALUES ('rc')");
my ($hs, $hs_pid) = session($a, "SET zklock.on_revoke = 'cancel'; SELECT zk_lock_acquire('rs', '10s')");
# The value in force at the request applies: changed afterwards, it does not.
$hc->query_safe("SET LOCAL zklock.on_revoke = 'ignore'");
$hs->query_safe("SET zklock.on_revoke = 'ignore'");
$hs->query_until(qr/sleeping\n/, "\\echo sleeping\nSELECT pg_sleep(60);\n");
my $wc = queue_waiter($b, $zk, 'rc', '30s');
my $ws = queue_waiter($b, $zk, 'rs', '30s');
is(revoke_from_b('rc'), '1', 'cancel: zk_lock_revoke asks the holder of rc, not the waiter (1)');
is(revoke_from_b('rs'), '1', 'cancel: ... and the holder of rs (1)');
for my $w ([ rc => $wc ], [ rs => $ws ])
{
	my ($at, $out, $err) = waiter_grant($w->[1]);
	ok(defined $at, "cancel: B's waiter for $w->[0] is granted: the holder gave it up") or diag("$out $err");
}
# The worker logs the loss when its delete is answered, which may come
# just after B's watch has fired.
wait_until(sub { a_log() =~ /backend $hc_pid lost ZooKeeper lock "rc": it was revoked/ }, 10,
	'the loss of rc in the log');
like(a_log(), qr/backend $hc_pid lost ZooKeeper lock "rc": it was revoked/, 'cancel: the log says rc was revoked');
my ($st, $err) = bg_sqlstate($hc, 'COMMIT');
is($st, 'ZK002', 'cancel: the transaction holder\'s COMMIT fails with ZK002');
like($err, qr/ZooKeeper lock "rc" was lost.*asked to give it up/s, 'cancel: ... and says the lock was revoked');
is(committed($a, 'rc'), '0', 'cancel: its row is not committed');
my ($hs_out, $hs_err) = bg_collect($hs);
like($hs_err, qr/57014: canceling statement due to user request/, "cancel: the session holder's running statement is cancelled");
like($hs_err, qr/ZK002: ZooKeeper lock "rs" was lost/, 'cancel: ... and its next statement reports the loss (ZK002)');
is(bg_sqlstate($hc, 'SELECT 1') . bg_sqlstate($hs, 'SELECT 1'), 'okok', 'cancel: the losses are reported once');
$wc->{s}->query_safe("SELECT zk_lock_release('rc')");
$ws->{s}->query_safe("SELECT zk_lock_release('rs')");
$_->quit for ($hi, $hc, $hs, $wc->{s}, $ws->{s});

# terminate: a psql of its own, which the termination ends.
my ($t_out, $t_err) = ('', '');
my $th = IPC::Run::start(
	[ 'psql', '-X', '-A', '-t', '-v', 'VERBOSITY=verbose', '-d', $a->connstr('postgres'),
	  '-c', "SET zklock.on_revoke = 'terminate'", '-c', "SELECT 'held', zk_lock_acquire('rt', '10s') > 0, pg_backend_pid()",
	  '-c', 'SELECT pg_sleep(60)' ],
	'<', \undef, '>', \$t_out, '2>', \$t_err, IPC::Run::timeout(90));
wait_until(sub { $th->pump_nb; $t_out =~ /^held\|t\|\d+$/m }, 15, 'the terminate holder to hold rt');
my ($ht_pid) = $t_out =~ /^held\|t\|(\d+)$/m;
is(revoke_from_b('rt'), '1', 'terminate: zk_lock_revoke asks the holder of rt (1)');
my $exited = eval { $th->finish; 1 };
ok($exited, 'terminate: the holder\'s psql ends (its backend was terminated)') or diag($@);
like($t_err, qr/57P01: terminating connection due to administrator command/, 'terminate: the backend was terminated');
is($a->safe_psql('postgres', "SELECT count(*) FROM pg_stat_activity WHERE pid = $ht_pid"), '0', 'terminate: the backend is gone');
zk_wait_empty($zk, '/zklock/rt', 'after the terminated holder');
is($a->safe_psql('postgres', "SELECT zk_lock_try('rt')"), 't', 'terminate: the lock is free again');

# --- (2) zk_lock_revoke asks a revocable Curator holder

my $curator = curator_peer($zk);
is($curator->cmd('mutex_try_revocable /zklock/rq 0 release'), 'true', 'Curator holds rq, revocable (its listener releases)');
my $wq = queue_waiter($a, $zk, 'rq', '30s');
is(revoke_from_b('rq'), '1', 'zk_lock_revoke asks the Curator holder (1)');
my ($q_at, $q_out, $q_err) = waiter_grant($wq);
ok(defined $q_at, 'the SQL waiter behind Curator is granted once Curator released') or diag("$q_out $q_err");
is($curator->cmd('revoked /zklock/rq'), 'true', "Curator's revocation listener was called");
$wq->{s}->query_safe("SELECT zk_lock_release('rq')");
$wq->{s}->quit;
zk_wait_empty($zk, '/zklock/rq', 'after rq');

is($curator->cmd('mutex_try_revocable /zklock/rk 0 keep'), 'true', 'Curator holds rk, revocable (its listener keeps the lock)');
is($a->safe_psql('postgres', "SELECT zk_lock_revoke('rk')"), '1', 'zk_lock_revoke asks the Curator holder of rk (1)');
{
	local $curator->{quiet} = 1;
	wait_until(sub { $curator->cmd('revoked /zklock/rk') eq 'true' }, 10, 'Curator to be asked');
}
is($curator->cmd('revoked /zklock/rk'), 'true', "Curator's listener was called");
is($a->safe_psql('postgres', "SELECT zk_lock_try('rk')"), 'f', 'Curator, told to keep it, still holds rk');
is($curator->cmd('mutex_release /zklock/rk'), 'ok', 'Curator releases rk');
zk_wait_empty($zk, '/zklock/rk', 'after rk');

# --- (3) Curator's Revoker on a zklock holder's node, on_revoke = cancel

my ($hv, $hv_pid) = session($a,
	"SET zklock.on_revoke = 'cancel'; BEGIN; SELECT zk_lock_acquire_xact('rv', '10s'); INSERT INTO work VALUES ('rv')");
my $rv_node = held_znode($a, $hv_pid, 'rv');
like($rv_node, qr{^/zklock/rv/}, "zk_locks shows the holder's node ($rv_node)");
is($curator->cmd("revoke $rv_node"), 'ok', "Curator's Revoker.attemptRevoke on the zklock holder's node");
ok(peer_gets($curator, '/zklock/rv', 'mutex'), 'Curator takes the mutex once the zklock holder gave it up');
wait_until(sub { a_log() =~ /backend $hv_pid lost ZooKeeper lock "rv": it was revoked/ }, 10,
	'the loss of rv in the log');
like(a_log(), qr/backend $hv_pid lost ZooKeeper lock "rv": it was revoked/, 'the log says rv was revoked');
($st, $err) = bg_sqlstate($hv, 'COMMIT');
is($st, 'ZK002', 'the zklock holder\'s COMMIT fails with ZK002');
is(committed($a, 'rv'), '0', '... and its row is not committed');
is($curator->cmd('mutex_release /zklock/rv'), 'ok', 'Curator releases rv');
$hv->quit;
$curator->quit;

# --- (4) permissions

$a->safe_psql('postgres', q{
CREATE ROLE app;
GRANT EXECUTE ON FUNCTION zk_lock_acquire(text, interval), zk_lock_release(text) TO app;
CREATE ROLE operator;
GRANT EXECUTE ON FUNCTION zk_lock_revoke(text) TO operator;
});
is(sql_sqlstate($a, "SET ROLE app; SELECT zk_lock_revoke('rp')"), '42501',
	'a role not granted zk_lock_revoke cannot call it (42501)');
is(sql_sqlstate($a, "SET ROLE app; SET zklock.on_revoke = 'ignore'"), '42501',
	'zklock.on_revoke cannot be set by an ordinary role (42501)');
my ($hp, $hp_pid) = session($a, "SELECT zk_lock_acquire('rp', '10s')");
is(sql_result($a, "SET ROLE operator; SELECT zk_lock_revoke('rp')"), '1', 'a role granted zk_lock_revoke asks the holder (1)');
wait_until(sub { lock_state($a, $hp_pid, 'rp') eq 'revoke requested' }, 15, 'the request to show');
is($hp->query_safe("SELECT zk_lock_release('rp')"), 't', 'the holder (on_revoke = ignore) releases');
$hp->quit;

for my $name (qw(ri rc rs rt rq rk rv rp))
{
	wait_until(sub { !zk_ls($zk, "/zklock/$name") }, 10, "the directory of $name to empty");
	is(join(',', zk_ls($zk, "/zklock/$name")), '', "no node left for $name");
}

done_testing();
