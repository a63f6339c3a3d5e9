# The worker survives the signals a superuser may send it, and keeps what
# its flags promise (issue 44, point 2).
#  pg_cancel_backend() on the worker: before, the worker kept the SIGINT
#  handler of a backend-connected background worker and died with an
#  ERROR at its next interrupt check, the next log line; a revocation it
#  had just flagged (revoke_requested) was then never obeyed by the
#  restarted worker, so under zklock.on_revoke = cancel the holder kept the
#  lock.  Now SIGINT is ignored: after pg_cancel_backend(worker), a revoke
#  of a holder under on_revoke = cancel still takes the lock away (the
#  holder's statement is cancelled, the node goes, another session can take
#  the lock) and the worker is the same process.  SIGUSR2 and a second
#  SIGINT change nothing either.
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::RealBin/../lib";
use ZklockTest;
use PostgreSQL::Test::Utils;
use Test::More;

my $zk = zk_start(1);
my $a = zklock_node('a', $zk, session_timeout => '6s');

my $wpid = worker_pid($a);
ok($wpid, 'the worker runs');
my $log_offset = -s $a->logfile;

my $h = bg_session($a);
my $h_pid = $h->query_safe('SELECT pg_backend_pid()');
$h->query_safe("SET zklock.on_revoke = 'cancel'");
is($h->query_safe("SELECT zk_lock_acquire('R', '10s') > 0"), 't', 'the holder holds R');
bg_start($h, "SELECT 'slept', pg_sleep(60)");

is($a->safe_psql('postgres', "SELECT pg_cancel_backend($wpid)"), 't', 'pg_cancel_backend on the worker');
ok(kill('USR2', $wpid), 'SIGUSR2 to the worker');
# The worker logs something soon after (its periodic pass does, the revoke
# below does): give a pending cancel its chance.
sleep 1;

is($a->safe_psql('postgres', "SELECT zk_lock_revoke('R')"), '1', 'a revoke asks the holder of R');
ok(wait_until(sub { slurp_file($a->logfile, $log_offset) =~ /lost ZooKeeper lock "R": it was revoked/ }, 20, 'R taken away'),
	'the holder loses R (on_revoke = cancel)');
my ($out, $err) = bg_collect($h);
like($err, qr/canceling statement/, 'the holder\'s statement is cancelled') or diag("out: $out\nerr: $err");
ok(wait_until(sub { !zk_ls($zk, '/zklock/R') }, 10, 'R\'s node gone'), 'R\'s node is gone from ZooKeeper');
is($a->safe_psql('postgres', "SELECT zk_lock_try('R')"), 't', 'another session can take R');

is(worker_pid($a), $wpid, 'the worker did not restart');
unlike(slurp_file($a->logfile, $log_offset), qr/canceling statement due to user request.*\n.*zklock worker|"zklock worker" \(PID \d+\) exited/,
	'no worker exit is logged');
is(zk_status_of($a)->{state}, 'connected', 'the session is still connected');

$h->quit;
done_testing();
