# A bad zklock.auth at server start stops the worker from connecting; it
# never leaves the server running without credentials.
#
# The postmaster reads a preloaded library's settings when the library
# defines them, and a value its check hook refused there would fall back
# to the default (no credentials) with a mere WARNING: the worker would
# then create nodes every ZooKeeper client may delete.  So the value found
# when the library defines the setting is taken even if bad, and the
# worker starts no session while it is set (rules/auth_value.c).  Checked,
# on cluster A:
#  (1) started with zklock.auth = 'nocolon' (no "user:password"): the
#      value is in force, the postmaster logged no refusal, the worker
#      says once why it does not connect (the value is looked at again
#      each second, and not said again), A has no session, an acquire
#      that would wait longer than zklock.connect_timeout fails at once
#      with ZK001, saying why, as does a read, and nothing was created
#      under A's root;
#  (2) a reload with valid credentials: A connects, takes a lock, and the
#      lock's node is creator-only (ZooKeeper refuses to read it without
#      them);
#  (3) a reload back to a bad value while valid credentials are in force
#      is refused, the log not printing the value: the credentials stay,
#      as does the session, and locks still work;
#  (4) restarted with a value of 251 bytes (the limit is 250) and another
#      root: no new session, the worker says the length; a reload with
#      250 bytes connects and locks; restarted under the first root with
#      those credentials (another identity than alice's), a lock is
#      refused with ZK000, saying the directory could not be made, and
#      nothing is made;
#  (5) ALTER SYSTEM refuses a bad value with 22023, whatever is in force
#      (in (1) too, without printing it).
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::RealBin/../lib";
use ZklockTest;
use Test::More;
use PostgreSQL::Test::Utils;

my $zk = zk_start(1);
# The worker's line; the backends' hints say "which is not valid".
my $refusal = qr/LOG:\s+zklock\.auth is not valid$/m;

my $a = zklock_node('a', $zk, root => '/auth153', conf => "zklock.auth = 'nocolon'");
expect_in_log($a, $refusal, 2);

sub state_of { return zk_status_of($_[0])->{state} }

# (1) The bad value is taken, and no session starts.
is($a->safe_psql('postgres', 'SHOW zklock.auth'), 'nocolon', '(1) the bad value is in force');
ok(wait_until(sub { slurp_file($a->logfile) =~ $refusal }, 30, 'the refusal to be logged'),
	'(1) the worker says why it does not connect');
like(slurp_file($a->logfile),
	qr/DETAIL:\s+zklock\.auth must have the form "user:password"\. The zklock worker gives it to no ZooKeeper session, and starts no new session while it is set\./,
	'(1) ... what is wrong, and what it does about it');
unlike(slurp_file($a->logfile), qr/invalid value for parameter "zklock\.auth"/,
	'(1) the postmaster did not refuse the value (a refusal would fall back to no credentials)');
# Three more looks at the value, a second apart.
sleep 3;
my $st = zk_status_of($a);
isnt($st->{state}, 'connected', "(1) A is not connected ($st->{state})");
is(scalar(() = slurp_file($a->logfile) =~ /$refusal/g), 1, '(1) the refusal is said once, not at each look');
my ($ret, $out, $err) = $a->psql('postgres', "\\set VERBOSITY verbose\nALTER SYSTEM SET zklock.auth = 'otherword'");
is(sqlstate_of($err), '22023', '(1) ALTER SYSTEM refuses a bad value even while one is in force (22023)');
unlike($err, qr/otherword/, '(1) ... and does not print it');
# A wait longer than zklock.connect_timeout (10 s): the request fails at
# once, for want of a session, not when that timeout ends ("ZooKeeper is
# not reachable").
($ret, $out, $err) = $a->psql('postgres', "\\set VERBOSITY verbose\nSELECT zk_lock_acquire('a153', '60s')");
is(sqlstate_of($err), 'ZK001', '(1) an acquire fails with ZK001');
like($err, qr/ERROR:\s+ZK001: there is no ZooKeeper session for lock "a153"\nDETAIL:\s+The zklock worker starts no session while zklock\.auth is not valid\.\nHINT:\s+Correct zklock\.auth and reload the configuration\./,
	'(1) ... at once, saying that the worker starts no session for zklock.auth')
  or diag($err);
($ret, $out, $err) = $a->psql('postgres', "\\set VERBOSITY verbose\nSELECT count(*) FROM zk_lock_contenders('a153')");
like($err, qr/ERROR:\s+ZK001: there is no ZooKeeper session for lock "a153"\nDETAIL:\s+The zklock worker starts no session while zklock\.auth is not valid\./,
	'(1) a read of the lock fails at once with ZK001 too, saying why')
  or diag($err);
is(zk_stat($zk, '/auth153'), undef, '(1) nothing was created under A\'s root');

# (2) Valid credentials by a reload: A connects.
$a->append_conf('postgresql.conf', "zklock.auth = 'alice:secret'\n");
$a->reload;
ok(wait_until(sub { state_of($a) eq 'connected' }, 30, 'A to connect'),
	'(2) after a reload with valid credentials A connects');
my $s = bg_session($a);
my $pid = $s->query_safe('SELECT pg_backend_pid()');
is($s->query_safe("SELECT zk_lock_acquire('a153', '10s') > 0"), 't', '(2) A takes a lock');
my $node = held_znode($a, $pid, 'a153');
like($node, qr{^/auth153/a153/}, "(2) the lock's node is under A's root ($node)");
my ($rc, $zout, $zerr) = zkutil($zk, 'get', $node);
ok($rc != 0 && $rc != 3 && $zerr =~ /: not authenticated/,
	'(2) the node is creator-only: ZooKeeper refuses to read it without the credentials')
  or diag("zkutil get: rc $rc, $zout, $zerr");
my $session = zk_status_of($a)->{session_id};

# (3) Back to a bad value: refused, the credentials stay.
# work_mem in the same reload says when a new backend has it.
my $log_from = -s $a->logfile;
$a->append_conf('postgresql.conf', "zklock.auth = 'othernocolon'\nwork_mem = '5MB'\n");
$a->reload;
ok(wait_until(sub { $a->safe_psql('postgres', 'SHOW work_mem') eq '5MB' }, 30, 'the reload'),
	'(3) the reload is done');
like(slurp_file($a->logfile, $log_from), qr/LOG:\s+invalid value for parameter "zklock\.auth"$/m,
	'(3) a reload to a bad value over valid credentials is refused');
unlike(slurp_file($a->logfile, $log_from), qr/othernocolon/, '(3) ... and the log does not print the value');
is($a->safe_psql('postgres', 'SHOW zklock.auth'), 'alice:secret', '(3) the valid credentials stay');
is($s->query_safe("SELECT zk_lock_release('a153')"), 't', '(3) the lock is released');
ok(wait_until(sub { !defined zk_stat($zk, $node) }, 15, "the lock's node to go"),
	'(3) its node is deleted (the session still has its credentials)');
is($a->safe_psql('postgres', "SELECT zk_lock_try('b153') AND zk_lock_release('b153')"), 't',
	'(3) A still locks');
is(zk_status_of($a)->{session_id}, $session, '(3) on the same session');
$s->quit;

# (4) Too long at start; then the longest allowed by a reload.
my $long = 'u:' . ('p' x 249);
$a->stop;
# Another root: /auth153 answers only to alice:secret (creator-only).
$a->append_conf('postgresql.conf', "zklock.auth = '$long'\nzklock.root = '/auth153b'\n");
$a->start;
is(length($a->safe_psql('postgres', 'SHOW zklock.auth')), 251, '(4) the 251-byte value is in force');
ok(wait_until(sub { slurp_file($a->logfile) =~ /zklock\.auth is 251 bytes long; it may be at most 250/ }, 30,
		'the length to be logged'),
	'(4) the worker says the value is too long');
sleep 2;
isnt(state_of($a), 'connected', '(4) A starts no session with it');
$a->append_conf('postgresql.conf', "zklock.auth = '" . substr($long, 0, 250) . "'\n");
$a->reload;
ok(wait_until(sub { state_of($a) eq 'connected' }, 30, 'A to connect'),
	'(4) with 250 bytes, after a reload, A connects');
is($a->safe_psql('postgres', "SELECT zk_lock_try('c153') AND zk_lock_release('c153')"), 't',
	'(4) and locks');

# (4) Back under alice's root with the 250-byte credentials: another
# identity is refused there, and says where to look.
$a->stop;
$a->append_conf('postgresql.conf', "zklock.root = '/auth153'\n");
$a->start;
ok(wait_until(sub { state_of($a) eq 'connected' }, 30, 'A to connect'), '(4) A connects under /auth153');
($ret, $out, $err) = $a->psql('postgres', "\\set VERBOSITY verbose\nSELECT zk_lock_try('d153')");
is(sqlstate_of($err), 'ZK000', '(4) a lock under the root alice:secret made is refused (ZK000)');
like($err, qr/DETAIL:\s+The lock's directories could not be made \(its lock directory is "\/auth153\/d153"\): zklock's identity may lack the CREATE right on a directory above them/,
	'(4) ... and the error says the directory could not be made, and why it may be')
  or diag($err);
is(zk_stat($zk, '/auth153/d153'), undef, '(4) nothing was made there');

# (5) ALTER SYSTEM refuses a bad value in any case.
is(sql_sqlstate($a, "ALTER SYSTEM SET zklock.auth = 'nocolon'"), '22023',
	'(5) ALTER SYSTEM SET zklock.auth = \'nocolon\' is refused (22023)');
is(sql_sqlstate($a, "ALTER SYSTEM SET zklock.auth = '$long'"), '22023',
	'(5) ALTER SYSTEM SET zklock.auth to 251 bytes is refused (22023)');

done_testing();
