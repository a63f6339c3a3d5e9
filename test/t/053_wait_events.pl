# What pg_stat_activity says while zklock makes a process wait, and what
# the server says of the loaded module.  From PostgreSQL 17 on each zklock
# wait has its own name (custom wait events), under wait_event_type
# 'Extension'; before 17 every one of them is 'Extension'/'Extension'
# (zklock_wait_event gives the name a major shows).
#  (1) A backend waiting for a lock another session of the cluster holds:
#      'ZklockAcquire' (15: 'Extension'); once the holder releases, it is
#      granted.
#  (2) The zklock worker, idle in its main loop: 'ZklockWorkerMain'.
#  (3) A backend of a cluster whose ZooKeeper is not there, waiting for a
#      session (zklock.connect_timeout 60 s): 'ZklockSession', not
#      'ZklockAcquire'; a cancel ends the wait.
#  (4) PostgreSQL 18: pg_get_loaded_modules() lists zklock.so as module
#      'zklock' with the extension's default_version (PG_MODULE_MAGIC_EXT);
#      before 18 the server has no such function.
# The TAP tests elsewhere that look at wait events (001, 028, 031) use the
# same per-major names.
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::RealBin/../lib";
use ZklockTest;
use Test::More;
use PostgreSQL::Test::Utils;

my $zk = zk_start(1);
my $a = zklock_node('a', $zk);
my $major = $a->pg_version->major;
note("PostgreSQL major $major");

my $activity = sub {
	my ($node, $where) = @_;
	return $node->safe_psql('postgres',
		"SELECT coalesce(wait_event_type, '-') || '/' || coalesce(wait_event, '-') "
		  . "FROM pg_stat_activity WHERE $where");
};

# (1) A waiter behind another session's hold.
my $holder = bg_session($a);
$holder->query_safe("SELECT zk_lock_acquire('we.lock')");
my $waiter = bg_session($a);
my $wpid = $waiter->query_safe('SELECT pg_backend_pid()');
bg_start($waiter, "SELECT zk_lock_acquire('we.lock', '60s') > 0");
my $seen = '';
wait_until(sub { lock_state($a, $wpid, 'we.lock') eq 'waiting' }, 30, '(1) the second session waits for we.lock');
wait_until(sub { ($seen = $activity->($a, "pid = $wpid")) =~ m{^Extension/} }, 10,
	'(1) the waiter shows an Extension wait');
is($seen, 'Extension/' . zklock_wait_event($a, 'ZklockAcquire'),
	"(1) pg_stat_activity names the waiter's wait " . zklock_wait_event($a, 'ZklockAcquire'));
$holder->query_safe("SELECT zk_lock_release('we.lock')");
my ($granted) = bg_collect($waiter);
like($granted, qr/^t$/m, '(1) the waiter is granted once the holder releases');
$waiter->query_safe("SELECT zk_lock_release('we.lock')");
$holder->quit;
$waiter->quit;

# (2) The worker between events.
wait_until(sub { ($seen = $activity->($a, "backend_type = 'zklock worker'")) =~ m{^Extension/} }, 30,
	'(2) the zklock worker shows an Extension wait');
is($seen, 'Extension/' . zklock_wait_event($a, 'ZklockWorkerMain'),
	'(2) the idle worker waits in ' . zklock_wait_event($a, 'ZklockWorkerMain'));

# (3) No ZooKeeper at all: a session is waited for.
my $dead = '127.0.0.1:' . PostgreSQL::Test::Cluster::get_free_port();
my $b = zklock_node('b', $zk, hosts => $dead);
my $nosession = bg_session($b);
my $npid = $nosession->query_safe('SELECT pg_backend_pid()');
$nosession->query_safe("SET zklock.connect_timeout = '60s'");
bg_start($nosession, "SELECT zk_lock_acquire('we.nosession')");
wait_until(sub { ($seen = $activity->($b, "pid = $npid")) =~ m{^Extension/} }, 30,
	'(3) the backend without a session shows an Extension wait');
is($seen, 'Extension/' . zklock_wait_event($b, 'ZklockSession'),
	'(3) it waits in ' . zklock_wait_event($b, 'ZklockSession'));
$b->safe_psql('postgres', "SELECT pg_cancel_backend($npid)");
my (undef, $err) = bg_collect($nosession);
like($err, qr/canceling statement due to user request/, '(3) cancelled, the wait ends');
$nosession->quit;

# (4) The module's own name and version.
my ($control_version) = slurp_file("$FindBin::RealBin/../../zklock.control") =~ /^default_version\s*=\s*'([^']+)'/m;
if ($major >= 18)
{
	is($a->safe_psql('postgres',
			"SELECT module_name || ' ' || version FROM pg_get_loaded_modules() WHERE file_name = 'zklock.so'"),
		"zklock $control_version",
		"(4) pg_get_loaded_modules() shows zklock $control_version");
}
else
{
	is($a->safe_psql('postgres', "SELECT count(*) FROM pg_proc WHERE proname = 'pg_get_loaded_modules'"),
		'0', "(4) PostgreSQL $major has no pg_get_loaded_modules(): no module information to show");
}

done_testing();
