# zk_lock_stats across restarts, as pg_stat_statements: the figures are
# kept across a clean restart (the postmaster writes them to
# pg_stat/zklock_stats.stat at its clean exit, the next start reads the
# file and removes it) and reset by a crash (SIGKILL of a backend: the
# crash restart reads no file, since the one read at the start is gone, so
# the figures from before the clean restart do not come back either).
# Also README's grants: monitoring_role reads the views, app_role does not,
# ops_role resets; and a wait behind another session's hold is counted,
# with its time, by the waiter, as is the holder's grant at once.
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::RealBin/../lib";
use ZklockTest;
use Test::More;
use PostgreSQL::Test::Utils;

my $zk = zk_start(1);
# PostgreSQL::Test::Cluster turns restart_after_crash off; a crash restart
# is the point here.
my $a = zklock_node('a', $zk, conf => 'restart_after_crash = on');
readme_roles($a);
my $file = $a->data_dir . '/pg_stat/zklock_stats.stat';

my $row = q{SELECT name || ':' || kind || ' s=' || acquired_session || ' x=' || acquired_xact
  || ' once=' || granted_at_once || ' waited=' || waited || ' wait>0=' || (total_wait_time > 0)
  || ' holds=' || holds || ' timeouts=' || timeouts
  FROM zk_lock_stats WHERE name LIKE 'ts.%' ORDER BY name, kind};

# Figures: three session holds and a transaction hold of ts.kept; a request
# that waits behind another session's hold of ts.wait and times out.
$a->safe_psql('postgres', q{
SELECT zk_lock_stats_reset();
SELECT zk_lock_acquire('ts.kept') > 0 AND zk_lock_release('ts.kept') FROM generate_series(1, 3);
BEGIN; SELECT zk_lock_acquire_xact('ts.kept') > 0; COMMIT;
});
my $holder = bg_session($a);
$holder->query_safe("SELECT zk_lock_acquire('ts.wait')");
is(sql_sqlstate($a, "SELECT zk_lock_acquire('ts.wait', '300ms')"), '55P03', 'a request behind the holder times out');
$holder->query_safe("SELECT zk_lock_release('ts.wait')");
$holder->quit;
my $before = $a->safe_psql('postgres', $row);
is($before, "ts.kept:exclusive s=3 x=1 once=4 waited=0 wait>0=false holds=4 timeouts=0\n"
	  . "ts.wait:exclusive s=1 x=0 once=1 waited=1 wait>0=true holds=1 timeouts=1",
	'the figures: holds by scope, grants at once, the wait with its time and its timeout');
my $reset_before = $a->safe_psql('postgres', 'SELECT stats_reset FROM zk_lock_stats_info');

# README's grants.
my @as = map { [ extra_params => [ '-U', $_ ] ] } qw(monitoring_role app_role ops_role);
is($a->safe_psql('postgres', "SELECT count(*) FROM zk_lock_stats WHERE name LIKE 'ts.%'", @{ $as[0] }), '2',
	'monitoring_role reads zk_lock_stats');
is($a->safe_psql('postgres', 'SELECT entries > 0 FROM zk_lock_stats_info', @{ $as[0] }), 't',
	'... and zk_lock_stats_info');
my ($ret, $out, $err) = $a->psql('postgres', 'SELECT count(*) FROM zk_lock_stats', @{ $as[1] });
like($err, qr/permission denied/, 'app_role does not read zk_lock_stats');
($ret, $out, $err) = $a->psql('postgres', "SELECT zk_lock_stats_reset('ts.none')", @{ $as[0] });
like($err, qr/permission denied/, 'monitoring_role may not reset');
is($a->psql('postgres', "SELECT zk_lock_stats_reset('ts.none')", @{ $as[2] }), 0, 'ops_role may reset');

# A clean restart keeps them.
$a->stop;
ok(-f $file, 'a clean stop writes the statistics file');
$a->start;
ok(!-f $file, 'the start reads it and removes it');
is($a->safe_psql('postgres', $row), $before, 'the figures are kept across a clean restart');
is($a->safe_psql('postgres', 'SELECT stats_reset FROM zk_lock_stats_info'), $reset_before,
	'... and so is the time of the last reset');
$a->safe_psql('postgres', "SELECT zk_lock_acquire('ts.kept') > 0 AND zk_lock_release('ts.kept')");
like($a->safe_psql('postgres', $row), qr/^ts\.kept:exclusive s=4 x=1 once=5 /, 'counting goes on from them');

# A crash resets them.
my $victim = bg_session($a);
my $victim_pid = $victim->query_safe('SELECT pg_backend_pid()');
$victim->query_safe("SELECT zk_lock_acquire('ts.crash')");
expect_crash_restart($a, qr/(?:server process|client backend) \(PID $victim_pid\) was terminated by signal 9: Killed/, 1);
my $log_offset = -s $a->logfile;
ok(kill('KILL', $victim_pid), "SIGKILL to a backend (pid $victim_pid)");
# A connection may still get in before the postmaster has seen the kill:
# wait for the crash restart to begin, then for connections.
wait_until(sub { slurp_file($a->logfile, $log_offset) =~ /all server processes terminated; reinitializing/ },
	60, 'the crash restart begins');
wait_until(sub { $a->psql('postgres', 'SELECT 1') == 0 }, 60, 'A accepts connections again');
eval { $victim->quit; 1 };
is($a->safe_psql('postgres', 'SELECT count(*) FROM zk_lock_stats'), '0', 'a crash restart resets the figures');
is($a->safe_psql('postgres', "SELECT entries || ' ' || evicted || ' ' || (stats_reset > '$reset_before') FROM zk_lock_stats_info"),
	'0 0 true', '... the eviction counter too, and the reset is now');
$a->stop;
$a->start;
is($a->safe_psql('postgres', 'SELECT count(*) FROM zk_lock_stats'), '0',
	'the figures from before the crash do not come back at the next clean restart');

done_testing();
