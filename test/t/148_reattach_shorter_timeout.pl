# A worker restarted onto the same session with a shorter
# zklock.session_timeout keeps the session ZooKeeper accepts.
#
# Cluster A holds a lock in a session of 20 s.  zklock.session_timeout is
# reloaded to 4 s (for the next handle only), the worker is frozen (SIGSTOP)
# for 4 s, and meanwhile zklock.hosts is reloaded onto another list of the
# same ensemble's servers.  Thawed, the worker restarts for the new servers
# (a second later: the postmaster's restart delay) and reattaches to its
# session with 4 s.  Until the handshake the predecessor's proof is judged
# by the 20 s it had (given up at two thirds: 13.3 s, against at most
# 3.3 s of the proof's age at the freeze, the freeze, the reload and the
# restart); then by 4 s, against which the same age is past two thirds
# (2.7 s) every time.  ZooKeeper accepts the session: it was alive after the
# new handle was opened, which is the proof from then on.  Before, the
# restarted worker judged its predecessor's proof by the new 4 s, gave the
# session up and declared the lock lost.  Checked: the session id is the
# same, it is now judged by 4 s, the lock is held and zk_lock_check says
# so, the log has no "giving up" line and no early loss is counted.  (The
# log of every node is checked for crash lines by the test library.)
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::RealBin/../lib";
use ZklockTest;
use Test::More;
use PostgreSQL::Test::Utils;

my $zk = zk_start(1);
my $a = zklock_node('a', $zk, session_timeout => '20s');

sub reload_with
{
	my ($line, $guc, $value) = @_;
	$a->append_conf('postgresql.conf', "$line\n");
	$a->reload;
	local $Test::Builder::Level = $Test::Builder::Level + 1;
	wait_until(sub { $a->safe_psql('postgres', "SHOW $guc") eq $value }, 30, "A to reload $guc = $value");
	return;
}

wait_until(sub { zk_status_of($a)->{state} eq 'connected' }, 30, 'A connected');
my $st1 = zk_status_of($a);
is($st1->{negotiated_timeout}, '20000', 'A negotiated 20 s');

my $s = bg_session($a);
my $s_pid = $s->query_safe('SELECT pg_backend_pid()');
is($s->query_safe("SELECT zk_lock_acquire('kept', '10s') > 0"), 't', 'A holds kept');

reload_with("zklock.session_timeout = '4s'", 'zklock.session_timeout', '4s');
my $log_from = -s $a->logfile;

my $w_before = worker_pid_os($a);
freeze_worker($w_before);
my $same_ensemble = "$zk->{connect},127.0.0.1:1";
reload_with("zklock.hosts = '$same_ensemble'", 'zklock.hosts', $same_ensemble);
# Past two thirds of 4 s since the last proof, inside two thirds of 20 s.
sleep(4);
thaw_worker($w_before);

wait_until(
	sub {
		my $w = worker_pid_os($a);
		$w ne '' && $w ne $w_before && zk_status_of($a)->{state} eq 'connected';
	},
	30,
	'A\'s worker restarted and connected');
my $st2 = zk_status_of($a);
is($st2->{session_id}, $st1->{session_id}, 'the restarted worker kept the session');
is($st2->{negotiated_timeout}, '4000', '... which now has the reloaded 4 s');
my $log = slurp_file($a->logfile, $log_from);
like($log, qr/reattaching to ZooKeeper session/, 'the new worker reattached to the session');
unlike($log, qr/giving up ZooKeeper session/, 'and did not give it up');
is($a->safe_psql('postgres', "SELECT state FROM zk_locks WHERE pid = $s_pid AND name = 'kept'"),
	'held', 'kept is still held');
is($s->query_safe("SELECT zk_lock_check('kept')"), 't', 'zk_lock_check(kept) is true');
is($a->safe_psql('postgres', 'SELECT early_losses FROM zk_status()'), '0', 'no early loss was counted');

is($s->query_safe("SELECT zk_lock_release('kept')"), 't', 'kept is released');
ok(wait_until(sub { zk_nchildren($zk, '/zklock/kept') == 0 }, 10, 'the node of kept to go'),
	'no node of kept is left');
$s->quit;
done_testing();
