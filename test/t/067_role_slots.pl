# One role cannot starve the others of zklock's shared slots (issue 28,
# point 2).  The roles and grants are README's (app_role, ops_role,
# monitoring_role), plus billing_role, a second application that README's
# grants reach through membership in app_role.  The cluster has
# zklock.max_locks = 64, so zklock.max_locks_per_role's default is 32 and
# zklock.max_locks_per_backend's is 64: before the per-role limit, one
# app_role session took every slot.  Asserted:
#  (1) app_role cannot raise its limit: SET, and ALTER ROLE app_role SET,
#      of zklock.max_locks_per_role fail with 42501.
#  (2) app_role, hostile, asks for 64 locks in one session: it holds 32, and
#      the 33rd fails with 53400, naming the role and the setting, with a
#      hint that says how to raise it; a second app_role session gets
#      none either (the sessions of a role share its limit).
#  (3) billing_role still acquires: 10 locks, and one more after SET ROLE
#      app_role (a session counts against its login role, the one ALTER
#      ROLE ... SET configures).
#  (4) The superuser takes the rest of the pool (21) and the next fails
#      with 53400 "out of zklock lock slots".  With every lock slot taken,
#      the remedies still run: zk_lock_contenders and zk_lock_verify
#      (app_role), the view zk_locks and zk_semaphore_contenders
#      (monitoring_role), and zk_lock_revoke (ops_role), which asks
#      app_role's holder, whose hold turns "revoke requested".
#  (5) Given back: once app_role releases, billing_role takes more; with
#      ALTER ROLE billing_role SET zklock.max_locks_per_role = 12 by the
#      superuser, a new billing_role session is held to 12 (its 13th
#      fails with 53400).
#  (6) Reads given up cannot pile up: with the worker frozen (SIGSTOP), an
#      app_role session whose reads statement_timeout ends leaves each in
#      the worker's hands; it has 4 of them at once, and its 5th and 6th
#      reads fail at once with 53400 ("too many zklock reads in progress");
#      a superuser session's read meanwhile gets its slot (it is cancelled
#      by its own statement_timeout, 57014, not refused).  Thawed, the
#      worker frees them and the app_role session reads again.
# Afterwards every slot comes back (zk_status().slots_used is 0).
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::RealBin/../lib";
use ZklockTest;
use Test::More;
use PostgreSQL::Test::Utils;

my $zk = zk_start(1);
my $a = zklock_node('a', $zk, session_timeout => '30s', conf => 'zklock.max_locks = 64');
readme_roles($a);
$a->safe_psql('postgres', 'CREATE ROLE billing_role LOGIN IN ROLE app_role');

sub session_as
{
	my ($role) = @_;
	my $s = bg_session($a, extra_params => [ '-U', $role ]);
	is($s->query_safe('SELECT session_user'), $role, "a session of $role");
	return ($s, $s->query_safe('SELECT pg_backend_pid()'));
}

sub held_by
{
	my ($pid) = @_;
	return $a->safe_psql('postgres', "SELECT count(*) FROM zk_locks WHERE pid = $pid AND state = 'held'");
}

is($a->safe_psql('postgres', 'SHOW zklock.max_locks_per_role'), '-1', 'zklock.max_locks_per_role is -1 (half of zklock.max_locks) by default');

# --- (1) app_role cannot raise its limit

my ($h1, $h1_pid) = session_as('app_role');
is(bg_sqlstate($h1, 'SET zklock.max_locks_per_role = 1000'), '42501', '(1) app_role cannot SET zklock.max_locks_per_role (42501)');
is(bg_sqlstate($h1, 'ALTER ROLE app_role SET zklock.max_locks_per_role = 1000'), '42501',
	'(1) ... nor ALTER ROLE app_role SET it (42501)');

# --- (2) one role takes its share, and no more

my ($st, $err) = bg_sqlstate($h1, "SELECT zk_lock_try('h' || i) FROM generate_series(1, 64) AS i");
is($st, '53400', '(2) app_role asking for 64 locks in one session fails with 53400') or diag($err);
is(held_by($h1_pid), '32', '(2) ... after 32 of them, its share: half of zklock.max_locks');
like($err, qr/too many zklock lock slots in use by role "app_role"/, '(2) the error names the role');
like($err, qr/DETAIL:\s+The sessions of this role use 32 of the 32 slots that zklock\.max_locks_per_role allows it \(of 64 in the cluster\)/,
	'(2) the detail names the limit reached and the counts');
like($err, qr/HINT:.*ALTER ROLE \.\.\. SET zklock\.max_locks_per_role/, '(2) the hint says how to raise it');
my ($h2, $h2_pid) = session_as('app_role');
is(bg_sqlstate($h2, "SELECT zk_lock_acquire('h2-1', '5s')"), '53400', '(2) a second app_role session gets no slot either (53400)');
is(bg_sqlstate($h2, "SELECT zk_semaphore_try('h2-sem', 3)"), '53400', '(2) ... nor a semaphore permit');
is(zk_status_of($a)->{slots_used}, '32', '(2) the cluster uses 32 of its 64 lock slots');

# --- (3) another role still acquires

my ($b1, $b1_pid) = session_as('billing_role');
is($b1->query_safe("SELECT count(*) FROM generate_series(1, 10) AS i WHERE zk_lock_acquire('b' || i, '10s') > 0"), '10',
	'(3) billing_role acquires 10 locks while app_role has taken all it may');
is(bg_result($b1, "SET ROLE app_role; SELECT zk_lock_try('b-as-app'); RESET ROLE"), 't',
	'(3) ... and one more under SET ROLE app_role: it counts against its login role');

# --- (4) the pool full; the remedies still run

my $su = bg_session($a);
my $su_pid = $su->query_safe('SELECT pg_backend_pid()');
($st, $err) = bg_sqlstate($su, "SELECT zk_lock_try('su' || i) FROM generate_series(1, 64) AS i");
is($st, '53400', '(4) the superuser takes what is left and the next request fails with 53400') or diag($err);
is(held_by($su_pid), '21', '(4) ... after the 21 slots left');
like($err, qr/out of zklock lock slots/, '(4) ... "out of zklock lock slots"');
like($err, qr/HINT:.*zklock\.max_locks/, '(4) ... with a hint');
is(zk_status_of($a)->{slots_used}, '64', '(4) every lock slot is in use');
is(bg_sqlstate($b1, "SELECT zk_lock_try('b-more')"), '53400', '(4) billing_role is refused now too (53400)');

my $token = $h1->query_safe("SELECT zk_lock_token('h1')");
is(bg_result($h2, "SELECT count(*) FROM zk_lock_contenders('h1')"), '1', '(4) app_role reads the contenders of a lock');
is(bg_result($h2, "SELECT zk_lock_verify('h1', $token)"), 't', '(4) app_role verifies a token');
my ($m, $m_pid) = session_as('monitoring_role');
is(bg_result($m, 'SELECT count(*) FROM zk_locks'), '64', '(4) monitoring_role reads zk_locks');
is(bg_result($m, "SELECT count(*) FROM zk_semaphore_contenders('h2-sem')"), '0', '(4) monitoring_role reads a semaphore\'s contenders');
my ($o, $o_pid) = session_as('ops_role');
is(bg_result($o, "SELECT zk_lock_revoke('h1')"), '1', '(4) ops_role revokes app_role\'s hold of h1');
wait_until(sub { lock_state($a, $h1_pid, 'h1') eq 'revoke requested' }, 30, 'the holder to be asked');
is(lock_state($a, $h1_pid, 'h1'), 'revoke requested', '(4) ... and the holder was asked (zklock.on_revoke = ignore)');
is(bg_result($o, "SELECT zk_lock_revoke('su1')"), '1', '(4) ops_role revokes the superuser\'s hold of su1 too');

# --- (5) given back; a role's own limit

$h1->query_safe('SELECT zk_lock_release_all()');
wait_until(sub { zk_status_of($a)->{slots_used} eq '32' }, 30, 'app_role\'s slots to come back');
is($b1->query_safe("SELECT count(*) FROM generate_series(11, 20) AS i WHERE zk_lock_acquire('b' || i, '10s') > 0"), '10',
	'(5) once app_role released, billing_role takes 10 more');
$a->safe_psql('postgres', 'ALTER ROLE billing_role SET zklock.max_locks_per_role = 12');
my ($b2, $b2_pid) = session_as('billing_role');
is($b2->query_safe('SHOW zklock.max_locks_per_role'), '12', '(5) a new billing_role session has the limit ALTER ROLE set');
$b1->query_safe('SELECT zk_lock_release_all()');
wait_until(sub { zk_status_of($a)->{slots_used} eq '21' }, 30, 'billing_role\'s slots to come back');
($st, $err) = bg_sqlstate($b2, "SELECT zk_lock_try('c' || i) FROM generate_series(1, 20) AS i");
is($st, '53400', '(5) ... and is refused (53400)') or diag($err);
is(held_by($b2_pid), '12', '(5) ... after 12 locks');
like($err, qr/use 12 of the 12 slots/, '(5) ... the detail gives its limit');
$b2->query_safe('SELECT zk_lock_release_all()');

# --- (6) reads given up cannot pile up

my $wpid = worker_pid($a);
like($wpid, qr/^\d+$/, "(6) the worker found (pid $wpid)");
my $frozen;
END { kill('CONT', $frozen) if $frozen; }
ok(kill('STOP', $wpid), '(6) SIGSTOP to the worker');
$frozen = $wpid;
wait_until(sub { proc_state($wpid) eq 'T' }, 5, 'the worker is stopped');
$h2->query_safe("SET statement_timeout = '300ms'");
my @reads = map { scalar bg_sqlstate($h2, "SELECT count(*) FROM zk_lock_contenders('h1')") } 1 .. 6;
is(join(' ', @reads), '57014 57014 57014 57014 53400 53400',
	'(6) 4 reads given up stay the session\'s; the 5th and 6th fail at once with 53400');
($st, $err) = bg_sqlstate($h2, "SELECT count(*) FROM zk_lock_contenders('h1')");
like($err, qr/too many zklock reads in progress in this session/, '(6) ... saying so');
$su->query_safe("SET statement_timeout = '300ms'");
is(bg_sqlstate($su, "SELECT count(*) FROM zk_lock_contenders('h1')"), '57014',
	'(6) a superuser\'s read meanwhile gets its slot (cancelled by its own statement_timeout, not refused)');
$su->query_safe('RESET statement_timeout');
ok(kill('CONT', $wpid), '(6) SIGCONT to the worker');
undef $frozen;
$h2->query_safe('RESET statement_timeout');
wait_until(sub { bg_result($h2, "SELECT count(*) FROM zk_lock_contenders('su2')") eq '1' }, 30,
	'the session to read again');
is(bg_result($h2, "SELECT count(*) FROM zk_lock_contenders('su2')"), '1', '(6) thawed, the app_role session reads again');

$su->query_safe('SELECT zk_lock_release_all()');
$_->quit for ($h1, $h2, $b1, $b2, $su, $m, $o);
wait_until(sub { zk_status_of($a)->{slots_used} eq '0' }, 30, 'every slot to come back');
is(zk_status_of($a)->{slots_used}, '0', 'every lock slot comes back');
done_testing();
