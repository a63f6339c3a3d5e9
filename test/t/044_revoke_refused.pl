# A revocation that ZooKeeper refuses never takes the lock away.
# ZooKeeper keeps the right to write a node (WRITE, on the node) apart from
# the right to delete it (DELETE, on its parent).  A holder's node whose ACL
# denies WRITE, under a lock directory that allows DELETE (kazoo sets that
# ACL, as any client or operator may), is asked with zk_lock_revoke from
# another cluster:
#  (1) an exclusive holder: zk_lock_revoke returns 0 with a WARNING
#      (SQLSTATE 42501) whose detail names ZooKeeper's ZNOAUTH; the
#      holder's node is still there, with its own data and not
#      "__REVOKE__"; the holder still holds (zk_locks, zk_lock_check) and
#      nobody else gets the lock; the holder releases normally.
#  (2) two shared holders, only one of them refusing: zk_lock_revoke
#      counts the one it asked (1), warns of the other, and the refused
#      holder's node and hold stay as they were.
# Nothing is left in ZooKeeper at the end.
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::RealBin/../lib";
use ZklockTest;
use Test::More;

my $zk = zk_start(1);
my $a = zklock_node('a', $zk);
my $b = zklock_node('b', $zk);
my $kazoo = kazoo_peer($zk);

# Everything but WRITE, for anyone: the node may still be read (so its
# contenders are listed) and deleted through its parent's open ACL.
my $no_write = 'world:anyone:rcda';

sub holder
{
	my ($sql, $name) = @_;
	my $s = bg_session($a);
	my $pid = $s->query_safe('SELECT pg_backend_pid()');
	$s->query_safe($sql);
	my $node = held_znode($a, $pid, $name);
	return { s => $s, pid => $pid, node => $node };
}

# zk_lock_revoke from cluster b: (result or 'ERROR <sqlstate>', stderr).
sub revoke_from_b
{
	my ($name) = @_;
	my ($ret, $out, $err) = $b->psql('postgres', "SELECT zk_lock_revoke('$name')",
		extra_params => [ '-v', 'VERBOSITY=verbose' ]);
	return ($ret == 0 ? $out : 'ERROR ' . sqlstate_of($err), $err);
}

# --- (1) an exclusive holder whose node denies WRITE

my $h = holder("SELECT zk_lock_acquire('rv', '10s')", 'rv');
like($h->{node}, qr{^/zklock/rv/_c_[0-9a-f-]+-lock-\d{10}$}, 'A holds rv');
my $data = zk_get($zk, $h->{node});
is($kazoo->cmd("set_acl $h->{node} $no_write"), 'ok', "kazoo denies WRITE on the holder's node");
is($kazoo->cmd("set_acl /zklock/rv world:anyone:cdrwa"), 'ok', '... while its directory allows DELETE');

my ($n, $err) = revoke_from_b('rv');
is($n, '0', 'zk_lock_revoke counts no holder asked (0)') or diag($err);
like($err, qr/WARNING:  42501: could not ask a holder of ZooKeeper lock "rv" to give it up/m,
	'... and warns, with SQLSTATE 42501, that ZooKeeper refused');
like($err, qr/^DETAIL:  .*ZNOAUTH.*\Q$h->{node}\E/m, "... naming ZooKeeper's ZNOAUTH and the holder's node");
ok(defined zk_stat($zk, $h->{node}), "the holder's node is still there");
is(zk_get($zk, $h->{node}), $data, '... with its own data, not the revocation message');
is(lock_state($a, $h->{pid}, 'rv'), 'held', 'zk_locks shows the hold as held');
is(bg_result($h->{s}, "SELECT zk_lock_check('rv')"), 't', 'the holder still holds rv (zk_lock_check)');
is($b->safe_psql('postgres', "SELECT zk_lock_try('rv')"), 'f', 'nobody else gets the lock');
is($a->safe_psql('postgres', "SELECT zk_lock_try('rv')"), 'f', '... in the holder\'s cluster neither');
is(lock_state($a, $h->{pid}, 'rv'), 'held', 'the hold is still held after those tries');
is(bg_result($h->{s}, "SELECT zk_lock_release('rv')"), 't', 'the holder releases normally');
zk_wait_empty($zk, '/zklock/rv', 'after the release of rv');
$h->{s}->quit;

# --- (2) two shared holders, one of which refuses

my $h1 = holder("SELECT zk_lock_acquire_shared('rw', '10s')", 'rw');
my $h2 = holder("SELECT zk_lock_acquire_shared('rw', '10s')", 'rw');
isnt($h1->{node}, $h2->{node}, 'two sessions of A hold rw shared');
my $data1 = zk_get($zk, $h1->{node});
is($kazoo->cmd("set_acl $h1->{node} $no_write"), 'ok', "kazoo denies WRITE on the first holder's node only");

($n, $err) = revoke_from_b('rw');
is($n, '1', 'zk_lock_revoke counts the holder it asked, not the one that refused (1)') or diag($err);
like($err, qr/WARNING:  42501: .*lock "rw".*\n(?:.*\n)*DETAIL:  .*ZNOAUTH.*\Q$h1->{node}\E/m,
	'... and warns of the refusal, naming the refused node');
is(zk_get($zk, $h2->{node}), '__REVOKE__', 'the second holder was asked');
is(zk_get($zk, $h1->{node}), $data1, "the first holder's node is intact");
is(lock_state($a, $h1->{pid}, 'rw'), 'held', 'the first holder still holds');
wait_until(sub { lock_state($a, $h2->{pid}, 'rw') eq 'revoke requested' }, 15,
	'the second holder to see the request');
is(lock_state($a, $h2->{pid}, 'rw'), 'revoke requested', "the second holder shows 'revoke requested'");
is($b->safe_psql('postgres', "SELECT zk_lock_try('rw')"), 'f', 'nobody takes rw exclusive');
is(bg_result($h1->{s}, "SELECT zk_lock_release_shared('rw')"), 't', 'the first holder releases normally');
is(bg_result($h2->{s}, "SELECT zk_lock_release_shared('rw')"), 't', '... and the second');
zk_wait_empty($zk, '/zklock/rw', 'after the release of rw');
$_->{s}->quit for ($h1, $h2);

is(join(',', map { $_->safe_psql('postgres', 'SELECT count(*) FROM zk_locks') } ($a, $b)), '0,0',
	'no cluster shows a request or hold');
$kazoo->quit;

done_testing();
