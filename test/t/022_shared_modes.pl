# Shared and exclusive locks across two clusters A and B on one ZooKeeper.
#  (1) Readers overlap: a reader in A and a reader in B hold L together; a
#      writer's try fails in both clusters.
#  (2) A writer waits for the readers, and a reader that asks after the
#      waiting writer queues behind it (no writer starvation): its try
#      fails while the writer waits, and its blocking acquire is granted
#      only after the writer has had the lock and released it.
#  (3) Upgrade: a backend that holds L shared takes it exclusive without
#      waiting on itself, whether or not another reader holds L; and when
#      a writer of another backend queued after its shared hold, the
#      upgrade fails at once with a deadlock error (40P01) instead of
#      hanging, and leaves no node behind.
#  (4) A backend that holds L exclusive takes it shared at once.
#  (5) zk_locks and zk_lock_contenders show the modes; nothing is left in
#      ZooKeeper at the end.
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::RealBin/../lib";
use ZklockTest;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time sleep);

my $zk = zk_start(1);
my $a = zklock_node('a', $zk);
my $b = zklock_node('b', $zk);
my $dir = $a->safe_psql('postgres', "SELECT zk_lock_path('L')");

sub contenders
{
	my ($node) = @_;
	return $node->safe_psql('postgres',
		"SELECT string_agg(position || ':' || mode || ':' || state || ':' || (holder->>'cluster'), ' ' ORDER BY position)"
		  . " FROM zk_lock_contenders('L')");
}

sub waiting_in
{
	my ($node, $pid) = @_;
	return $node->safe_psql('postgres', "SELECT state FROM zk_locks WHERE pid = $pid AND name = 'L'") eq 'waiting';
}

# (1) Readers overlap.
my $ra = bg_session($a);
my $ra_pid = $ra->query_safe('SELECT pg_backend_pid()');
my $rb = bg_session($b);
is($ra->query_safe("SELECT zk_lock_acquire_shared('L', '5s') > 0"), 't', '(1) A reads L');
is($rb->query_safe("SELECT zk_lock_acquire_shared('L', '5s') > 0"), 't', '(1) B reads L at the same time');
is($a->safe_psql('postgres', "SELECT mode || ' ' || state FROM zk_locks WHERE name = 'L'"), 'shared held',
	'(1) zk_locks shows A\'s hold as shared');
is($a->safe_psql('postgres', "SELECT zk_lock_try('L')"), 'f', '(1) a writer\'s try fails in A');
is($b->safe_psql('postgres', "SELECT zk_lock_try('L')"), 'f', '(1) a writer\'s try fails in B');
is($b->safe_psql('postgres', "SELECT zk_lock_try_shared('L') AND zk_lock_release_shared('L')"), 't',
	'(1) a third reader gets in');
is(contenders($a), '1:shared:held:a 2:shared:held:b', '(1) zk_lock_contenders shows two shared holders');

# (2) A writer in B waits for the readers; a later reader in A queues behind it.
my $wb = bg_session($b);
my $wb_pid = $wb->query_safe('SELECT pg_backend_pid()');
$wb->query_until(qr/waiting\n/, "\\echo waiting\nSELECT 'writer', zk_lock_acquire('L', '30s') > 0, clock_timestamp();\n");
wait_until(sub { waiting_in($b, $wb_pid) }, 10, 'the writer queues');
is(contenders($a), '1:shared:held:a 2:shared:held:b 3:exclusive:waiting:b',
	'(2) the writer waits behind both readers');
is($a->safe_psql('postgres', "SELECT zk_lock_try_shared('L')"), 'f',
	'(2) a reader\'s try fails while a writer waits (no writer starvation)');
my $r2 = bg_session($a);
my $r2_pid = $r2->query_safe('SELECT pg_backend_pid()');
$r2->query_until(qr/waiting\n/, "\\echo waiting\nSELECT 'reader', zk_lock_acquire_shared('L', '30s') > 0, clock_timestamp();\n");
wait_until(sub { waiting_in($a, $r2_pid) }, 10, 'the later reader queues');
is(contenders($b), '1:shared:held:a 2:shared:held:b 3:exclusive:waiting:b 4:shared:waiting:a',
	'(2) the later reader queues behind the waiting writer');

is($rb->query_safe("SELECT zk_lock_release_shared('L')"), 't', '(2) B\'s reader leaves');
sleep(0.3);
ok(waiting_in($b, $wb_pid), '(2) the writer still waits for A\'s reader');
my $t_release = $ra->query_safe("SELECT clock_timestamp(); SELECT zk_lock_release_shared('L')");
my ($wb_out) = $wb->query("SELECT 'sync'");
like($wb_out, qr/^writer\|t\|/m, '(2) the writer is granted once the readers are gone');
my ($t_writer) = $wb_out =~ /^writer\|t\|(.*)$/m;
ok(waiting_in($a, $r2_pid), '(2) the later reader waits while the writer holds L');
is($wb->query_safe("SELECT zk_lock_release('L')"), 't', '(2) the writer releases');
my ($r2_out) = $r2->query("SELECT 'sync'");
like($r2_out, qr/^reader\|t\|/m, '(2) the later reader is granted after the writer');
my ($t_reader) = $r2_out =~ /^reader\|t\|(.*)$/m;
is($a->safe_psql('postgres', "SELECT '$t_writer'::timestamptz < '$t_reader'::timestamptz"), 't',
	'(2) the writer that asked first was served first');
is($r2->query_safe("SELECT zk_lock_release_shared('L')"), 't', '(2) the later reader releases');

# (3) Upgrade by one backend: no waiting on itself.
is($ra->query_safe("SELECT zk_lock_acquire_shared('L', '5s') > 0"), 't', '(3) A reads L');
is($ra->query_safe("SELECT zk_lock_acquire('L', '5s') > 0"), 't', '(3) ... and takes it exclusive without waiting on itself');
is($a->safe_psql('postgres', "SELECT string_agg(mode || ' ' || state, ', ' ORDER BY mode) FROM zk_locks WHERE pid = $ra_pid"),
	'exclusive held, shared held', '(3) A holds both modes');
is($b->safe_psql('postgres', "SELECT zk_lock_try_shared('L')"), 'f', '(3) B cannot read while A writes');
is($ra->query_safe("SELECT zk_lock_release('L') AND zk_lock_release_shared('L')"), 't', '(3) A releases both');

# Upgrade while another reader holds L: waits for that reader only.
is($rb->query_safe("SELECT zk_lock_acquire_shared('L', '5s') > 0"), 't', '(3) B reads L');
is($ra->query_safe("SELECT zk_lock_acquire_shared('L', '5s') > 0"), 't', '(3) A reads L');
$ra->query_until(qr/upgrading\n/, "\\echo upgrading\nSELECT 'upgraded', zk_lock_acquire('L', '30s') > 0;\n");
wait_until(sub { $a->safe_psql('postgres', "SELECT count(*) FROM zk_locks WHERE pid = $ra_pid AND state = 'waiting'") eq '1' },
	10, 'A\'s upgrade waits for B\'s reader');
is($rb->query_safe("SELECT zk_lock_release_shared('L')"), 't', '(3) B\'s reader leaves');
my ($up) = $ra->query("SELECT 'sync'");
like($up, qr/^upgraded\|t$/m, '(3) A\'s upgrade is granted when the other reader leaves');
is($ra->query_safe("SELECT zk_lock_release('L') AND zk_lock_release_shared('L')"), 't', '(3) A releases both');

# Upgrade with another backend's writer queued after our shared hold.
is($ra->query_safe("SELECT zk_lock_acquire_shared('L', '5s') > 0"), 't', '(3) A reads L');
$wb->query_until(qr/waiting\n/, "\\echo waiting\nSELECT 'writer', zk_lock_acquire('L', '30s') > 0;\n");
wait_until(sub { waiting_in($b, $wb_pid) }, 10, 'B\'s writer queues behind A\'s reader');
$ra->query_safe('\set VERBOSITY verbose');
$ra->query("SELECT zk_lock_acquire('L', '30s')");
like($ra->{stderr}, qr/40P01: deadlock detected/, '(3) A\'s upgrade fails at once with a deadlock error');
$ra->{stderr} = '';
is($a->safe_psql('postgres', "SELECT string_agg(mode || ' ' || state, ', ') FROM zk_locks WHERE pid = $ra_pid"),
	'shared held', '(3) A keeps its shared hold and no exclusive request');
wait_until(sub { zk_ls($zk, $dir) == 2 }, 10, 'the failed upgrade\'s node goes');
is(scalar(zk_ls($zk, $dir)), 2, '(3) ZooKeeper holds A\'s reader and B\'s writer only');
is($ra->query_safe("SELECT zk_lock_release_shared('L')"), 't', '(3) A releases its shared hold');
($wb_out) = $wb->query("SELECT 'sync'");
like($wb_out, qr/^writer\|t$/m, '(3) B\'s writer is granted');

# (4) Holding L exclusive, B takes it shared at once.
is($wb->query_safe("SELECT zk_lock_acquire_shared('L', '1s') > 0"), 't', '(4) the writer also takes L shared without waiting');
is(contenders($a), '1:exclusive:held:b 2:shared:held:b', '(4) both of B\'s nodes are listed');
is($wb->query_safe("SELECT zk_lock_release_shared('L') AND zk_lock_release('L')"), 't', '(4) B releases both');

# (5) Nothing left.
$_->quit for ($ra, $rb, $wb, $r2);
wait_until(sub { !zk_ls($zk, $dir) }, 10, 'the lock directory empties');
is(join(',', zk_ls($zk, $dir)), '', '(5) no node left');
is($a->safe_psql('postgres', 'SELECT count(*) FROM zk_locks') . $b->safe_psql('postgres', 'SELECT count(*) FROM zk_locks'),
	'00', '(5) no lock entry left in A or B');

done_testing();
