# Failures outside the caller's control get clear errors and change nothing:
# zklock not preloaded, ZooKeeper unreachable (within the caller's timeout,
# with a hint naming zklock.hosts, and a worker that reconnects once
# ZooKeeper is back), and shared slots exhausted.
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::RealBin/../lib";
use ZklockTest;
use Test::More;
use PostgreSQL::Test::Utils;
use Time::HiRes qw(time);

my $zk = zk_start(1);

sub sql_error
{
	my ($node, $sql) = @_;
	my ($ret, $out, $err) = $node->psql('postgres', "\\set VERBOSITY verbose\n$sql");
	return $ret == 0 ? '' : $err;
}

# Not preloaded: the extension installs, its functions say what is missing.
my $plain = zklock_node('plain', $zk, conf => "shared_preload_libraries = ''");
my $err = sql_error($plain, "SELECT zk_lock_acquire('x')");
like($err, qr/55000: zklock must be loaded via "shared_preload_libraries"/, 'not preloaded: clear error');
like($err, qr/HINT:.*shared_preload_libraries/, 'not preloaded: hint');
like(sql_error($plain, "SELECT * FROM zk_locks"), qr/55000/, 'not preloaded: view errors too');
$plain->stop;

# ZooKeeper away: the error comes within the caller's timeout and names
# zklock.hosts; nothing is left queued.
my $a = zklock_node('a', $zk, session_timeout => '4s');
zk_stop_one($zk, 1);
wait_until(sub { $a->safe_psql('postgres', 'SELECT state FROM zk_status()') ne 'connected' },
	30, 'worker notices ZooKeeper is gone');
my $t0 = time;
$err = sql_error($a, "SELECT zk_lock_acquire('away', '1s')");
my $elapsed = time - $t0;
like($err, qr/ZK001: could not obtain ZooKeeper lock "away": ZooKeeper is not reachable/, 'unreachable: clear error');
like($err, qr/HINT:.*zklock\.hosts \("127\.0\.0\.1:\d+"\)/, 'unreachable: hint names zklock.hosts');
cmp_ok($elapsed, '<', 5, 'unreachable: error within the caller\'s 1 s timeout, not after connect_timeout');
$err = sql_error($a, "SET zklock.connect_timeout = '300ms'; SELECT zk_lock_try('away')");
like($err, qr/ZK001/, 'unreachable: a try fails after zklock.connect_timeout');
is($a->safe_psql('postgres', 'SELECT count(*) FROM zk_locks'), '0', 'unreachable: no request left behind');

# ZooKeeper back: the worker reconnects by itself and locks work again.
zk_start_one($zk, 1);
wait_until(sub { $a->safe_psql('postgres', 'SELECT state FROM zk_status()') eq 'connected' },
	60, 'worker reconnects when ZooKeeper is back');
is($a->safe_psql('postgres', "SELECT zk_lock_acquire('away', '10s') > 0"), 't', 'acquire works after reconnection');
like(slurp_file($a->logfile), qr/connected to ZooKeeper server/, 'session changes are logged');
$a->stop;

# Slots exhausted: a clear error, and the failed request leaves no trace in
# the shared table.  (It never reaches ZooKeeper: a request without a slot
# cannot be posted, so no ZooKeeper listing is checked here.)
my $small = zklock_node('small', $zk, conf => "zklock.max_locks = 16\nzklock.max_locks_per_backend = 100");
my $s = bg_session($small);
$s->query_safe("SELECT zk_lock_acquire('slot' || i) FROM generate_series(1, 16) i");
my ($out, $failed) = $s->query("\\set VERBOSITY verbose\nSELECT zk_lock_acquire('slot17')");
ok($failed, 'the 17th lock fails');
like($s->{stderr}, qr/53400: out of zklock lock slots/, 'slots exhausted: clear error');
like($s->{stderr}, qr/HINT:.*zklock\.max_locks/, 'slots exhausted: hint');
$s->{stderr} = '';
is($small->safe_psql('postgres', "SELECT count(*) FROM zk_locks WHERE state = 'held'"), '16', 'the 16 holds are intact');
$s->query_safe("SELECT zk_lock_release_all()");
wait_until(sub { $small->safe_psql('postgres', 'SELECT count(*) FROM zk_locks') eq '0' }, 30, 'slots come back');
is($s->query_safe("SELECT zk_lock_acquire('slot17') > 0"), 't', 'a freed slot serves the next request');
$s->quit;

done_testing();
