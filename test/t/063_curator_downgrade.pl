# Curator's downgrade beside a zklock writer.  A Curator program (Debian's
# Curator 5.4, InterProcessReadWriteLock) holds the write lock; a zklock
# writer of cluster A queues behind it; the program takes its read lock,
# which Curator grants at once to the write lock's holder (its node is
# numbered after the zklock writer's: Curator 5.5 and later would give it
# the write node's number), then gives the write lock up.  The read lock is
# held all along, so:
#  - while the write node is there, zk_lock_contenders shows the read node
#    held (a read of the session that holds the write lock), zk_lock_verify
#    answers true for its token, and zk_lock_revoke asks it as well as the
#    write node;
#  - once the write node is gone, the zklock writer is not granted: its
#    worker reads the read node behind it (same session, created before the
#    write node went), logs that it waits for it, and waits; on its cluster
#    zk_lock_contenders shows the read held and the writer waiting, and
#    zk_lock_verify and zk_lock_revoke still reach the read;
#  - once the read lock is given up, the zklock writer holds.
# A reader of another session behind a writer is no downgrade: after the
# same steps with a second Curator program's read lock, the zklock writer
# holds as soon as the write lock goes, and the reader waits for it.
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
my $dir = '/zklock/x';

sub contenders
{
	return $a->safe_psql('postgres',
		"SELECT string_agg(client || ' ' || mode || ' ' || state, ', ' ORDER BY position) FROM zk_lock_contenders('x')"
	);
}

sub node_like
{
	my ($re) = @_;
	my @n = grep { /$re/ } zk_ls($zk, $dir);
	return @n == 1 ? $n[0] : '(' . join(',', zk_ls($zk, $dir)) . ')';
}

# The write lock, then a zklock writer behind it.
is($curator->cmd("write_try $dir"), 'true', 'Curator takes the write lock');
my $s = bg_session($a);
my $pid = $s->query_safe('SELECT pg_backend_pid()');
bg_start($s, "SELECT 'granted', zk_lock_acquire('x', '300s') > 0");
wait_until(sub { lock_state($a, $pid, 'x') eq 'waiting' }, 15, 'the zklock writer waits behind the write lock');

# The downgrade's first step: the read lock, granted to the write lock's holder.
is($curator->cmd("read_try $dir"), 'true', 'Curator takes the read lock at once (it holds the write lock)');
my $read = node_like(qr/__READ__/);
like($read, qr/__READ__0000000002$/, "the read node is numbered after the zklock writer's");
is(contenders(), 'curator exclusive held, zklock exclusive waiting, curator shared held',
	'zk_lock_contenders: the read of the write holder\'s session holds');
my $read_token = zk_stat($zk, "$dir/$read")->{czxid};
is($a->safe_psql('postgres', "SELECT zk_lock_verify('x', $read_token)"), 't',
	"zk_lock_verify: the read node's token holds");
is($a->safe_psql('postgres', "SELECT zk_lock_revoke('x')"), '2',
	'zk_lock_revoke asks both holders, the write and the read');
is(zk_get($zk, "$dir/$read"), '__REVOKE__', 'the read node carries the revocation message');

# The second step: the write lock goes; the read lock stays.
is($curator->cmd("write_release $dir"), 'ok', 'Curator gives the write lock up');
wait_until(sub { slurp_file($a->logfile) =~ /waits for node "\Q$read\E", read lock of the session/ },
	30, "A's worker finds the read node a downgrade");
is(lock_state($a, $pid, 'x'), 'waiting', 'the zklock writer does not hold beside the read lock');
is(sql_result($a, "SELECT zk_lock_try('x')"), 'f', "another zklock writer's zk_lock_try fails");
is(contenders(), 'zklock exclusive waiting, curator shared held',
	"zk_lock_contenders on the waiting writer's cluster: the read holds, the writer waits for it");
is($a->safe_psql('postgres', "SELECT zk_lock_verify('x', $read_token)"), 't',
	"zk_lock_verify: the read node's token still holds");
is($a->safe_psql('postgres', "SELECT zk_lock_revoke('x')"), '1', 'zk_lock_revoke asks the read, not the waiting writer');
is(lock_state($a, $pid, 'x'), 'waiting', '... which still waits');

# The read lock goes: the zklock writer holds.
is($curator->cmd("read_release $dir"), 'ok', 'Curator gives the read lock up');
my ($out) = bg_collect($s);
like($out, qr/^granted\|t$/m, 'the zklock writer holds once the read lock is gone');
is(contenders(), 'zklock exclusive held', 'zk_lock_contenders: the zklock writer holds, alone');
is($s->query_safe("SELECT zk_lock_release('x')"), 't', 'the zklock writer releases');
zk_wait_empty($zk, $dir, 'after the downgrade');

# No downgrade: the read lock of another session (a second Curator program)
# queued behind the zklock writer waits for it.
my $other = curator_peer($zk);
is($curator->cmd("write_try $dir"), 'true', 'Curator takes the write lock again');
bg_start($s, "SELECT 'granted again', zk_lock_acquire('x', '300s') > 0");
wait_until(sub { lock_state($a, $pid, 'x') eq 'waiting' }, 15, 'the zklock writer waits behind it');
$other->send("read_try $dir 300000");
wait_until(sub { grep { /__READ__/ } zk_ls($zk, $dir) }, 15, "the other program's read node is there");
is(contenders(), 'curator exclusive held, zklock exclusive waiting, curator shared waiting',
	"zk_lock_contenders: another session's read waits");
is($curator->cmd("write_release $dir"), 'ok', 'Curator gives the write lock up');
($out) = bg_collect($s);
like($out, qr/^granted again\|t$/m, 'the zklock writer holds: that read is no downgrade');
is(contenders(), 'zklock exclusive held, curator shared waiting', 'zk_lock_contenders: the read waits for it');
is($s->query_safe("SELECT zk_lock_release('x')"), 't', 'the zklock writer releases');
is($other->reply, 'true', "then the other program's read lock is granted");
is($other->cmd("read_release $dir"), 'ok', 'and given up');

$s->quit;
$curator->quit;
$other->quit;
zk_wait_empty($zk, $dir, 'at the end');
expect_in_log($a, qr/read lock of the session that held the write lock/, 1);

done_testing();
