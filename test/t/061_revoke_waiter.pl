# A revocation written on a waiting request's node is acted on when the
# request becomes a hold.  Curator's Revoker pattern writes "__REVOKE__" on
# every participant's node, waiters' too; zklock read it only while holding.
# Curator holds the mutex, a zklock session of cluster A waits behind it,
# and Curator's Revoker.attemptRevoke writes on the waiter's node; Curator
# then releases:
#  - under zklock.on_revoke = 'ignore' (the default) the waiter is granted
#    and zk_locks shows it 'revoke requested', with the log line of the ask
#    (on the unfixed worker it showed 'held' and nothing was logged);
#  - under 'cancel' the waiter, once granted, gives the lock up at once: its
#    node goes, kazoo's Lock (a second peer) takes the lock, the session
#    is told the lock was lost (revoked) and holds nothing.
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
my $curator = curator_peer($zk);
my $kazoo = kazoo_peer($zk);
my $dir = '/zklock/x';
my $log_offset = -s $a->logfile;

# Curator holds; a zklock session waits, its node revoked while it waits.
sub revoked_waiter
{
	my ($on_revoke) = @_;
	is($curator->cmd("mutex_try $dir"), 'true', "$on_revoke: Curator holds the mutex");
	my $s = bg_session($a);
	my $pid = $s->query_safe('SELECT pg_backend_pid()');
	$s->query_safe("SET zklock.on_revoke = '$on_revoke'");
	bg_start($s, "SELECT 'granted', zk_lock_acquire('x', '60s') > 0");
	wait_until(sub { lock_state($a, $pid, 'x') eq 'waiting' && zk_ls($zk, $dir) == 2 }, 15,
		"$on_revoke: the zklock session queues behind Curator");
	my $node = $a->safe_psql('postgres', "SELECT znode FROM zk_locks WHERE pid = $pid AND name = 'x'");
	like($node, qr{^$dir/_c_}, "$on_revoke: zk_locks shows the waiter's node");
	is($curator->cmd("revoke $node"), 'ok', "$on_revoke: Curator's Revoker.attemptRevoke on the waiter's node");
	is(zk_get($zk, $node), '__REVOKE__', "$on_revoke: the waiter's node carries the message");
	is(lock_state($a, $pid, 'x'), 'waiting', "$on_revoke: the request still waits");
	is($curator->cmd("mutex_release $dir"), 'ok', "$on_revoke: Curator releases");
	return ($s, $pid);
}

# --- ignore: granted, and shown asked

my ($s, $pid) = revoked_waiter('ignore');
my ($out) = bg_collect($s);
like($out, qr/^granted\|t$/m, 'ignore: the waiter is granted');
wait_until(sub { lock_state($a, $pid, 'x') eq 'revoke requested' }, 15,
	"ignore: zk_locks shows the revocation asked at the grant");
like(slurp_file($a->logfile, $log_offset), qr/backend $pid was asked to give up ZooKeeper lock "x"/,
	'ignore: the ask is logged');
is($curator->cmd("mutex_try $dir"), 'false', 'ignore: the holder keeps the lock');
is($s->query_safe("SELECT zk_lock_release('x')"), 't', 'ignore: the holder releases');
$s->quit;
zk_wait_empty($zk, $dir, 'after ignore');

# --- cancel: granted, then given up at once

($s, $pid) = revoked_waiter('cancel');
ok(peer_gets($kazoo, $dir, 'lock'), 'cancel: kazoo takes the lock once the revoked waiter gave it up');
like(slurp_file($a->logfile, $log_offset),
	qr/backend $pid was asked to give up ZooKeeper lock "x"\n.*DETAIL:  zklock.on_revoke is "cancel"/,
	'cancel: the ask is logged, with the hold given up');
# As for any revoked holder under 'cancel': the running statement is
# cancelled, or, if the acquire had not returned yet, it reports the loss.
my (undef, $err) = bg_collect($s);
my ($st, $err2) = bg_sqlstate($s, 'SELECT 1');
like($err . ($err2 // ''), qr/ZooKeeper lock "x" was lost|canceling statement due to user request/,
	'cancel: the session is told (its statement cancelled, or the loss reported)');
is($a->safe_psql('postgres', "SELECT count(*) FROM zk_locks WHERE pid = $pid AND state = 'held'"), '0',
	'cancel: the session holds nothing');
is($kazoo->cmd("lock_release $dir"), 'ok', 'kazoo releases');
$s->quit;

$curator->quit;
$kazoo->quit;
zk_wait_empty($zk, $dir, 'at the end');
done_testing();
