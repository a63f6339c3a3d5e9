# Fencing enforced by PostgreSQL, with tokens from zklock, Curator and kazoo:
#  (1) zk_lock_verify, asked in either cluster: true for the holder's token
#      (zklock's, Curator's, kazoo's: its node's czxid), false for a
#      waiter's and, once the lock changed hands, for the old holder's.
#  (2) A stale zklock holder: HA holds lock 'f' in cluster A and writes
#      with its token into the store (database postgres of cluster B),
#      once through zk_fence and once into a table guarded by
#      zk_fence_trigger; A's zklock worker is then frozen (SIGSTOP) past the
#      session timeout, so ZooKeeper expires A's session; B's waiter is
#      granted and writes with its newer token both ways; A is thawed, and
#      HA's late writes with its old token are refused with ZK003 (the
#      detail gives both tokens) and leave no row.
#  (3) The same with a Curator program and a kazoo program: each takes a
#      lock, reads its token (its node's czxid) and writes through psql;
#      its node is deleted (its session "expired"), a zklock session takes
#      the lock and writes with its token; the program's late write with
#      its old token is refused with ZK003.
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::RealBin/../lib";
use ZklockTest;
use Test::More;
use PostgreSQL::Test::Utils;
use Time::HiRes qw(time sleep);

my $zk = zk_start(1);
my $a = zklock_node('a', $zk, session_timeout => '4s');
my $b = zklock_node('b', $zk, session_timeout => '4s');

# The store: in B, a table written through zk_fence and one guarded by
# the trigger.
$b->safe_psql('postgres', q{
CREATE TABLE ledger (writer text, token bigint);
CREATE TABLE documents (id int PRIMARY KEY, body text, token bigint NOT NULL);
CREATE TRIGGER documents_fence BEFORE INSERT OR UPDATE ON documents
    FOR EACH ROW EXECUTE FUNCTION zk_fence_trigger('documents', 'token');
INSERT INTO documents VALUES (1, 'empty', 0);
});

# A write into the store with a token, the way a lock holder anywhere
# makes it (a psql of its own, as a program would): the SQLSTATE.
sub fenced_write
{
	my ($writer, $resource, $token) = @_;
	return sql_sqlstate($b,
		"BEGIN; SELECT zk_fence('$resource', $token); INSERT INTO ledger VALUES ('$writer', $token); COMMIT;");
}

sub document_write
{
	my ($writer, $token) = @_;
	return sql_sqlstate($b,
		"INSERT INTO documents VALUES (1, '$writer', $token) ON CONFLICT (id) DO UPDATE SET body = EXCLUDED.body, token = EXCLUDED.token");
}

sub rows
{
	my ($writer) = @_;
	return $b->safe_psql('postgres', "SELECT count(*) FROM ledger WHERE writer = '$writer'");
}

sub verify
{
	my ($node, $name, $token) = @_;
	return $node->safe_psql('postgres', "SELECT zk_lock_verify('$name', $token)");
}

# --- (1) zk_lock_verify

my $hv = bg_session($a);
my $hv_pid = $hv->query_safe('SELECT pg_backend_pid()');
my $tv = $hv->query_safe("SELECT zk_lock_acquire('v', '10s')");
my $wv = queue_waiter($b, $zk, 'v', '30s');
my $wv_token = $b->safe_psql('postgres', "SELECT czxid FROM zk_lock_contenders('v') WHERE state = 'waiting'");
like($wv_token, qr/^\d+$/, "the waiter's token (its node's czxid) is known");
is(verify($a, 'v', $tv), 't', "zk_lock_verify: true for the holder's token, in the holder's cluster");
is(verify($b, 'v', $tv), 't', '... and in the other cluster');
is(verify($a, 'v', $wv_token), 'f', "zk_lock_verify: false for the waiter's token");
is(verify($a, 'v', $tv - 1), 'f', 'zk_lock_verify: false for a token of no contender');
is(verify($a, 'nolock', $tv), 'f', 'zk_lock_verify: false for a lock nobody holds');
$hv->query_safe("SELECT zk_lock_release('v')");
my ($at, $out, $err) = waiter_grant($wv);
ok(defined $at, 'the waiter is granted');
is($wv->{s}->query_safe("SELECT zk_lock_token('v')"), $wv_token, "the waiter's token is the czxid it had while waiting");
is(verify($a, 'v', $tv), 'f', "zk_lock_verify: false for the old holder's token once the lock changed hands");
is(verify($a, 'v', $wv_token), 't', "zk_lock_verify: true for the new holder's token");
$wv->{s}->query_safe("SELECT zk_lock_release('v')");
$_->quit for ($hv, $wv->{s});

my $curator = curator_peer($zk);
my $kazoo = kazoo_peer($zk);
is($curator->cmd('mutex_try /zklock/vc'), 'true', 'Curator holds vc');
my $tc = $curator->cmd('mutex_token /zklock/vc');
is(verify($a, 'vc', $tc), 't', "zk_lock_verify: true for Curator's token");
is($kazoo->cmd('lock_try /zklock/vk'), 'true', 'kazoo holds vk');
my $tk = $kazoo->cmd('lock_token /zklock/vk');
is(verify($a, 'vk', $tk), 't', "zk_lock_verify: true for kazoo's token");
is($curator->cmd('mutex_release /zklock/vc'), 'ok', 'Curator releases vc');
is($kazoo->cmd('lock_release /zklock/vk'), 'ok', 'kazoo releases vk');
is(verify($a, 'vc', $tc) . verify($a, 'vk', $tk), 'ff', 'zk_lock_verify: false for their tokens once released');

# --- (2) a stale zklock holder in cluster A

my $ha = bg_session($a);
my $ha_pid = $ha->query_safe('SELECT pg_backend_pid()');
my $ta = $ha->query_safe("SELECT zk_lock_acquire('f', '10s')");
like($ta, qr/^\d+$/, "HA holds f in A (token $ta)");
is(fenced_write('ha', 'f', $ta), 'ok', "HA writes with its token through zk_fence");
is(document_write('ha', $ta), 'ok', 'HA writes with its token into the table guarded by the trigger');
is(fenced_write('ha', 'f', $ta), 'ok', 'HA writes again with the same token (an equal token is accepted)');
my $wb = queue_waiter($b, $zk, 'f', '30s');

my $wpid = worker_pid($a);
like($wpid, qr/^\d+$/, "A's worker found (pid $wpid)");
my $frozen;
END { kill('CONT', $frozen) if $frozen; }
ok(kill('STOP', $wpid), "SIGSTOP to A's worker");
$frozen = $wpid;
($at, $out, $err) = waiter_grant($wb);
ok(defined $at, "B's waiter is granted once ZooKeeper expired A's session") or diag("$out $err");
my $tb = $wb->{s}->query_safe("SELECT zk_lock_token('f')");
cmp_ok($tb, '>', $ta, "B's token ($tb) is newer than HA's ($ta)");
is(verify($b, 'f', $ta), 'f', "zk_lock_verify in B: HA's token holds no more");
is(verify($b, 'f', $tb), 't', "... and B's does");
is(fenced_write('wb', 'f', $tb), 'ok', "B's holder writes with its token through zk_fence");
is(document_write('wb', $tb), 'ok', "B's holder writes into the guarded table");
ok(kill('CONT', $wpid), "SIGCONT to A's worker");
$frozen = undef;

# HA wakes up and writes late, with its old token.
my ($st, $stderr) = sql_sqlstate_err("BEGIN; SELECT zk_fence('f', $ta); INSERT INTO ledger VALUES ('ha-late', $ta); COMMIT;");
is($st, 'ZK003', "HA's late write through zk_fence is refused with ZK003");
like($stderr, qr/stale fencing token for resource "f"/, '... as a stale fencing token');
like($stderr, qr/\b$ta\b.*\b$tb\b/s, '... and the detail gives both tokens');
is(rows('ha-late'), '0', '... and its row is not there');
($st, $stderr) = sql_sqlstate_err(
	"INSERT INTO documents VALUES (1, 'ha-late', $ta) ON CONFLICT (id) DO UPDATE SET body = EXCLUDED.body, token = EXCLUDED.token");
is($st, 'ZK003', "HA's late write into the guarded table is refused with ZK003");
is($b->safe_psql('postgres', 'SELECT body, token FROM documents'), "wb|$tb", "the document keeps B's write");
is($b->safe_psql('postgres', "SELECT token FROM zk_fence_tokens WHERE resource = 'f'"), $tb,
	"zk_fence_tokens keeps B's token for f");
is(rows('ha') . '/' . rows('wb'), '2/1', "the ledger has HA's writes made in time and B's");
wait_until(sub { lock_state($a, $ha_pid, 'f') eq 'lost' }, 15, 'A to see HA\'s hold lost after the thaw');
is(bg_sqlstate($ha, 'SELECT 1'), 'ZK002', 'HA learns that it lost the lock (ZK002)');
$wb->{s}->query_safe("SELECT zk_lock_release('f')");
$_->quit for ($ha, $wb->{s});

# --- (3) Curator and kazoo programs writing with their tokens

for my $p ([ 'Curator', $curator, 'mutex', '/zklock/fc', 'fc' ], [ 'kazoo', $kazoo, 'lock', '/zklock/fk', 'fk' ])
{
	my ($n, $peer, $cmd, $path, $name) = @$p;
	is($peer->cmd("${cmd}_try $path"), 'true', "$n holds $name");
	my $tp = $peer->cmd("${cmd}_token $path");
	like($tp, qr/^\d+$/, "${n}'s token is its node's czxid ($tp)");
	is(fenced_write(lc $n, $name, $tp), 'ok', "$n writes with its token through psql");
	my ($node) = zk_ls($zk, $path);
	is(zk_stat($zk, "$path/$node")->{czxid}, $tp, "${n}'s token is the czxid ZooKeeper gives its node");
	ok(zk_delete($zk, "$path/$node"), "${n}'s node is deleted (as an expiry would): $n does not know it lost the lock");
	my $s = bg_session($a);
	my $ts = $s->query_safe("SELECT zk_lock_acquire('$name', '10s')");
	is(fenced_write('sql', $name, $ts), 'ok', "a zklock session takes $name and writes with its token ($ts)");
	is(verify($a, $name, $tp), 'f', "zk_lock_verify: ${n}'s token holds no more");
	is(fenced_write(lc($n) . '-late', $name, $tp), 'ZK003', "${n}'s late write with its old token is refused with ZK003");
	is(rows(lc($n) . '-late'), '0', '... and its row is not there');
	$s->query_safe("SELECT zk_lock_release('$name')");
	$s->quit;
}
$curator->quit;
$kazoo->quit;

for my $name (qw(v vc vk f fc fk))
{
	wait_until(sub { !zk_ls($zk, "/zklock/$name") }, 10, "the directory of $name to empty");
	is(join(',', zk_ls($zk, "/zklock/$name")), '', "no node left for $name");
}

done_testing();

# The SQLSTATE of $sql in the store, and psql's verbose stderr.
sub sql_sqlstate_err
{
	my ($sql) = @_;
	my ($ret, $o, $e) = $b->psql('postgres', "\\set VERBOSITY verbose\n$sql");
	return (sqlstate_of($e), $e);
}
