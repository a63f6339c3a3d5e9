# Settings do what the README's "Settings" table says, and zk_status() shows
# the worker's states as the README names them.
#
#  (1) zk_status() states and reloads of zklock.hosts and
#      zklock.session_timeout:
#      - 'connecting': cluster G, whose zklock.hosts names a closed port,
#        has never had a session; a reload of zklock.hosts onto ensemble ZK1
#        connects it;
#      - cluster A, connected to ZK1 with 10 s: a reload of
#        zklock.session_timeout = 4s applies to the next session only (same
#        session id, still 10 s); a reload of zklock.hosts onto another
#        list of ZK1's servers keeps the session and a lock held across
#        it; a reload onto another ensemble ZK2 moves the worker there,
#        with a new session (ZK2 never knew the old one, whose lock is
#        lost), new locks going to ZK2;
#      - 'no worker': right after pg_terminate_backend of A's worker (the
#        postmaster restarts it a second later) a backend polling
#        zk_status() every 2 ms sees 'no worker', then 'connected'; with no
#        slot in use the next worker opens a new session, which is on ZK2
#        with the reloaded 4 s timeout, and a new lock's node is in ZK2 and
#        not in ZK1;
#      - 'expired': A's worker is frozen (SIGSTOP) for 10 s, more than its
#        4 s timeout, so that ZooKeeper expires its session; the polling
#        backend sees 'expired' after the thaw, then 'connected' with a new
#        session.  (An outage of the whole ensemble does not expire
#        sessions in ZooKeeper, which restarts their timers: see 012.)
#  (2) zklock.root: clusters B and C use root /shared/r1, cluster D uses
#      /shared/r2 (all on ZK1).  zk_lock_path and the nodes in ZooKeeper
#      (seen with zkutil) are under the configured root, none under
#      /zklock; B and C exclude each other, D takes the same
#      name at the same time.
#  (3) zklock.exclusive_layout differs between B ('readwrite', __WRIT__
#      nodes) and C ('mutex', -lock- nodes): they still exclude each other,
#      and a queue mixing both layouts is served in order (C holds, B waits,
#      C waits: B is granted before C's second session).
#  (4) zklock.max_locks_per_backend: the default is -1; with the default
#      zklock.max_locks (1024) a session may use 102 locks (a tenth), and
#      with zklock.max_locks = 200 it may use 64 (the floor); one more fails
#      with 53400.  Locks count per mode: with the limit at 2, an exclusive
#      and a shared hold of one name fill it (a third name fails with
#      53400), while a reentrant acquire of a held one still succeeds.
#  (5) zklock.on_lock_lost (reloaded in D), the held node deleted from
#      outside with zkutil:
#      - 'error': the statement running meanwhile is not cancelled; the
#        transaction's COMMIT fails with ZK002 and its row is not committed;
#      - 'terminate': the holding backend is terminated.
#  (6) zklock.auth: cluster E (auth alice:secret, root /secure) creates the
#      root, the lock directory and its node with the creator-only ACL
#      (digest alice:base64(sha1(alice:secret)), all permissions; read with
#      kazoo as an independent client), so a client without the credentials
#      (zkutil) can neither list, read nor delete them; cluster F (auth
#      alice:wrong, same root) is refused with ZK000, on an existing lock
#      directory and on a new name, and leaves nothing behind.  A reload of
#      zklock.auth in C (context "reload") makes C's new nodes creator-only
#      too, and C can still lock (the worker gives the session in use the
#      new credentials).
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::RealBin/../lib";
use ZklockTest;
use Test::More;
use PostgreSQL::Test::Utils;
use Digest::SHA qw(sha1_base64);
use IPC::Run;
use Time::HiRes qw(time sleep);

# A frozen worker is always thawed, whatever way the test ends (this END
# runs before ZklockTest's, which stops the clusters).
my $frozen;
END { kill('CONT', $frozen) if $frozen; }

sub status { return zk_status_of($_[0]) }

sub reload_with
{
	my ($node, $line, $guc, $value) = @_;
	$node->append_conf('postgresql.conf', "$line\n");
	$node->reload;
	local $Test::Builder::Level = $Test::Builder::Level + 1;
	wait_until(sub { $node->safe_psql('postgres', "SHOW $guc") eq $value }, 30,
		$node->name . " to reload $guc = $value");
	return;
}

sub lock_of
{
	my ($node, $pid, $name) = @_;
	return $node->safe_psql('postgres',
		"SELECT coalesce((SELECT state FROM zk_locks WHERE pid = $pid AND name = '$name' AND mode = 'exclusive'), 'none')");
}

# ACLs of $path as "scheme:id:perms;...", read by kazoo with $auth (digest).
sub zk_acls
{
	my ($zk, $path, $auth) = @_;
	my $py = <<'EOF';
import sys
from kazoo.client import KazooClient
zk = KazooClient(hosts=sys.argv[1], timeout=10.0)
zk.start(timeout=15)
if sys.argv[3]:
    zk.add_auth("digest", sys.argv[3])
acls, _ = zk.get_acls(sys.argv[2])
print(";".join("%s:%s:%d" % (a.id.scheme, a.id.id, a.perms) for a in acls))
zk.stop()
zk.close()
EOF
	my ($out, $err) = ('', '');
	my $ok = eval {
		IPC::Run::run([ '/usr/bin/python3', '-c', $py, $zk->{connect}, $path, $auth // '' ],
			'<', \undef, '>', \$out, '2>', \$err, IPC::Run::timeout(60));
	};
	return $ok ? ($out =~ s/\s+$//r) : "error: $err";
}

# States zk_status() goes through, polled every 2 ms by a backend, until it
# has shown $target and then 'connected' (or $seconds ran out).
my $watch_states_sql = q{CREATE FUNCTION watch_states(target text, seconds float8) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
	st text;
	last text := NULL;
	seen text := NULL;
	hit bool := false;
	t0 timestamptz := clock_timestamp();
BEGIN
	LOOP
		SELECT state INTO st FROM zk_status();
		IF st IS DISTINCT FROM last THEN
			seen := concat_ws(',', seen, st);
			last := st;
		END IF;
		hit := hit OR st = target;
		EXIT WHEN (hit AND st = 'connected') OR clock_timestamp() - t0 > make_interval(secs => seconds);
		PERFORM pg_sleep(0.002);
	END LOOP;
	RETURN seen;
END $$};

my $zk1 = zk_start(1);
my $zk2 = zk_start(1);

###########################################################################
# (1) States, and reloads of zklock.hosts and zklock.session_timeout.
###########################################################################

my $a = zklock_node('a', $zk1, session_timeout => '10s');
my $g = zklock_node('g', $zk1, hosts => '127.0.0.1:1', session_timeout => '10s');
$a->safe_psql('postgres', $watch_states_sql);

# G never had a session: sample its state over 3 s, after a few failed
# connection attempts.
sleep 1;
my %seen_g;
for (1 .. 15)
{
	$seen_g{ status($g)->{state} }++;
	sleep 0.2;
}
is(join(',', sort keys %seen_g), 'connecting',
	"(1) with zklock.hosts at a closed port and no session ever, zk_status().state is 'connecting'");
is(status($g)->{session_id}, '', '(1) ... and there is no session id');
reload_with($g, "zklock.hosts = '$zk1->{connect}'", 'zklock.hosts', $zk1->{connect});
wait_until(sub { status($g)->{state} eq 'connected' }, 15, 'G connected to ZK1 after the reload');
is(status($g)->{state} . ' ' . status($g)->{server}, "connected $zk1->{connect}",
	'(1) a reload of zklock.hosts connects a worker that never had a session (G) to the new servers');
$g->stop;

wait_until(sub { status($a)->{state} eq 'connected' }, 30, 'A connected to ZK1');
my $st1 = status($a);
is($st1->{state} . ' ' . $st1->{server}, "connected $zk1->{connect}", '(1) A is connected to ZK1');
is($st1->{negotiated_timeout}, '10000', '(1) A negotiated 10 s');

# A reload onto another list of the same ensemble's servers (here the same
# server and a dead one) moves the session: the worker restarts, reattaches
# to its session, and the lock held meanwhile is still held.
my $t_move = bg_session($a);
my $t_move_pid = $t_move->query_safe('SELECT pg_backend_pid()');
is($t_move->query_safe("SELECT zk_lock_acquire('kept', '10s') > 0"), 't', '(1) A holds kept, in ZK1');
my $w_before = worker_pid_os($a);
my $same_ensemble = "$zk1->{connect},127.0.0.1:1";
reload_with($a, "zklock.hosts = '$same_ensemble'", 'zklock.hosts', $same_ensemble);
wait_until(sub { my $w = worker_pid_os($a); $w ne '' && $w ne $w_before && status($a)->{state} eq 'connected' }, 30,
	'A\'s worker restarted and connected after the reload');
my $st_same = status($a);
is($st_same->{session_id} . ' ' . $st_same->{server}, "$st1->{session_id} $zk1->{connect}",
	'(1) a reload of zklock.hosts onto servers of the same ensemble keeps the session');
is(lock_of($a, $t_move_pid, 'kept'), 'held', '(1) ... and kept is still held');
is($t_move->query_safe("SELECT zk_lock_check('kept')"), 't', '(1) ... zk_lock_check(kept) is true');

# After the move within the ensemble, so that the move is shown with the
# 10 s session (148 shows a restart onto a shortened timeout).
reload_with($a, "zklock.session_timeout = '4s'", 'zklock.session_timeout', '4s');
sleep 2;    # let the worker absorb the reload
my $st2 = status($a);
is($st2->{session_id} . ' ' . $st2->{negotiated_timeout} . ' ' . $st2->{state}, "$st1->{session_id} 10000 connected",
	'(1) a reload of zklock.session_timeout leaves the current session and its timeout alone (next session)');

# A reload onto another ensemble: ZK2 does not know the session, so the
# worker's reattachment ends it as expired, kept is lost, and a new session
# starts on ZK2.
reload_with($a, "zklock.hosts = '$zk2->{connect}'", 'zklock.hosts', $zk2->{connect});
wait_until(sub { my $s = status($a); $s->{state} eq 'connected' && $s->{server} eq $zk2->{connect} }, 30,
	'A connected to ZK2 after the reload');
is(status($a)->{server}, $zk2->{connect}, '(1) a reload of zklock.hosts onto ZK2 moves A\'s worker to ZK2');
isnt(status($a)->{session_id}, $st1->{session_id}, '(1) ... with a new session (ZK2 never knew the old one)');
wait_until(sub { lock_of($a, $t_move_pid, 'kept') eq 'lost' }, 30, 'kept turns lost');
is(lock_of($a, $t_move_pid, 'kept'), 'lost', '(1) ... and kept, held in the old session, is lost');
is(sql_result($a, "SELECT zk_lock_acquire('moved', '5s') > 0"), 't', '(1) A takes a lock after the reload');
ok(defined zk_stat($zk2, '/zklock/moved') && !defined zk_stat($zk1, '/zklock/moved'),
	'(1) ... its lock directory was created in ZK2, not in ZK1');
$t_move->quit;
wait_until(sub { $a->safe_psql('postgres', 'SELECT count(*) FROM zk_locks') eq '0' }, 30, 'A has no slot in use');

# 'no worker': terminate the worker; the postmaster restarts it a second
# later.  With no slot in use the old worker closes its session, so the new
# worker opens the next session: on ZK2, with the reloaded 4 s timeout.
my $poller = bg_session($a);
my $nw = $poller->query_safe(
	"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE backend_type = 'zklock worker';\n"
	  . "SELECT 'states', watch_states('no worker', 40)");
my ($nw_seen) = $nw =~ /^states\|(.*)$/m;
$nw_seen //= '(nothing)';
note "states seen after pg_terminate_backend(worker): $nw_seen";
like($nw_seen, qr/(?:^|,)no worker(?:,|$)/, "(1) with the worker terminated, zk_status() shows 'no worker' (seen: $nw_seen)");
like($nw_seen, qr/connected$/, '(1) ... and then connected again once it is restarted');
wait_until(sub { my $s = status($a); $s->{state} eq 'connected' && $s->{server} eq $zk2->{connect} }, 30,
	'A\'s new worker connected to ZK2');
my $st3 = status($a);
is($st3->{server}, $zk2->{connect}, '(1) the next session is on ZK2 (zklock.hosts as reloaded)');
is($st3->{negotiated_timeout}, '4000', '(1) ... and negotiated the reloaded zklock.session_timeout (4 s)');
my $zk2_holder = bg_session($a);
is(bg_result($zk2_holder, "SELECT zk_lock_acquire('moved2', '10s') > 0"), 't', '(1) A holds moved2');
is(zk_nchildren($zk2, '/zklock/moved2') . ':' . zk_nchildren($zk1, '/zklock/moved2'), '1:0',
	'(1) ... its node is in ZK2, not in ZK1');
bg_result($zk2_holder, "SELECT zk_lock_release('moved2')");
$zk2_holder->quit;

# 'expired': freeze the worker for more than its 4 s session timeout.
my $wpid = worker_pid_os($a);
like($wpid, qr/^\d+$/, "(1) A's worker runs (pid $wpid)");
my $old_session = status($a)->{session_id};
ok(kill('STOP', $wpid), '(1) SIGSTOP to A\'s worker');
$frozen = $wpid;
sleep 10;
bg_start($poller, "SELECT 'states', watch_states('expired', 40)");
# The poller is sampling before the worker thaws: on a loaded machine the
# thawed worker could otherwise be through 'expired' before the first sample.
wait_until(
	sub {
		$a->safe_psql('postgres',
			"SELECT count(*) FROM pg_stat_activity WHERE query LIKE '%watch_states(''expired''%' AND wait_event = 'PgSleep'"
		) eq '1';
	},
	30,
	'the poller samples zk_status()');
ok(kill('CONT', $wpid), '(1) SIGCONT to A\'s worker after 10 s');
$frozen = undef;
my ($exp_out, $exp_err) = bg_collect($poller);
my ($exp_seen) = $exp_out =~ /^states\|(.*)$/m;
$exp_seen //= "(nothing: $exp_err)";
note "states seen after the thaw: $exp_seen";
like($exp_seen, qr/(?:^|,)expired(?:,|$)/, "(1) after the thaw zk_status() shows 'expired' (seen: $exp_seen)");
like($exp_seen, qr/connected$/, '(1) ... and then connected again');
isnt(status($a)->{session_id}, $old_session, '(1) ... with a new session');
$poller->quit;

###########################################################################
# (2) zklock.root and (3) zklock.exclusive_layout.
###########################################################################

my $b = zklock_node('b', $zk1, root => '/shared/r1', conf => "zklock.exclusive_layout = 'readwrite'");
my $c = zklock_node('c', $zk1, root => '/shared/r1');
my $d = zklock_node('d', $zk1, root => '/shared/r2', conf => 'zklock.max_locks = 200');

is($b->safe_psql('postgres', "SHOW zklock.root") . ' ' . $b->safe_psql('postgres', "SELECT zk_lock_path('lay')"),
	'/shared/r1 /shared/r1/lay', '(2) zk_lock_path follows zklock.root');

my $c1 = bg_session($c);
my $c1_pid = $c1->query_safe('SELECT pg_backend_pid()');
is($c1->query_safe("SELECT zk_lock_acquire('lay', '10s') > 0"), 't', '(2) C holds lay');
my @r1 = zk_ls($zk1, '/shared/r1/lay');
is(scalar(@r1), 1, '(2) C\'s node is under /shared/r1/lay in ZooKeeper');
like($r1[0] // '', qr/^_c_[0-9a-f-]{36}-lock-\d{10}$/, "(3) C's exclusive node has the mutex layout ($r1[0])");
is(zk_nchildren($zk1, '/zklock/lay'), 0, '(2) ... and nothing is under /zklock/lay');
is($b->safe_psql('postgres', "SELECT zk_lock_try('lay')"), 'f', '(2) B (same root) cannot take lay');
is(sql_sqlstate($b, "SELECT zk_lock_acquire('lay', '300ms')"), '55P03', '(2) B\'s timed acquire of lay fails with 55P03');
is($b->safe_psql('postgres', "SELECT zk_lock_try_shared('lay')"), 'f', '(3) B cannot read lay either');

my $d1 = bg_session($d);
is($d1->query_safe("SELECT zk_lock_try('lay')"), 't', '(2) D (root /shared/r2) takes lay while C holds it');
is(zk_nchildren($zk1, '/shared/r2/lay'), 1, '(2) D\'s node is under /shared/r2/lay');
is($d1->query_safe("SELECT zk_lock_release('lay')"), 't', '(2) D releases lay');
$d1->quit;

# A queue mixing layouts: C holds, B waits (__WRIT__), C2 waits (-lock-).
my $bw = bg_session($b);
my $bw_pid = $bw->query_safe('SELECT pg_backend_pid()');
bg_start($bw, "SELECT 'granted', zk_lock_acquire('lay', '60s') > 0");
wait_until(sub { lock_of($b, $bw_pid, 'lay') eq 'waiting' && zk_nchildren($zk1, '/shared/r1/lay') == 2 }, 20,
	'B queued for lay');
my $c2 = bg_session($c);
my $c2_pid = $c2->query_safe('SELECT pg_backend_pid()');
bg_start($c2, "SELECT 'granted', zk_lock_acquire('lay', '60s') > 0");
wait_until(sub { lock_of($c, $c2_pid, 'lay') eq 'waiting' && zk_nchildren($zk1, '/shared/r1/lay') == 3 }, 20,
	'C2 queued for lay');
my $b_node = $b->safe_psql('postgres', "SELECT znode FROM zk_locks WHERE pid = $bw_pid AND name = 'lay'");
like($b_node, qr{^/shared/r1/lay/_c_[0-9a-f-]{36}-__WRIT__\d{10}$}, "(3) B's exclusive node has the readwrite layout");
is($c->safe_psql('postgres', "SELECT string_agg(position || ':' || mode || ':' || state, ' ' ORDER BY position) FROM zk_lock_contenders('lay')"),
	'1:exclusive:held 2:exclusive:waiting 3:exclusive:waiting', '(3) C reads B\'s __WRIT__ node as an exclusive contender');
is($c1->query_safe("SELECT zk_lock_release('lay')"), 't', '(3) C releases lay');
my ($bw_out, $bw_err) = bg_collect($bw);
like($bw_out, qr/^granted\|t$/m, '(3) B (readwrite) is granted next') or diag($bw_err);
is(lock_of($c, $c2_pid, 'lay'), 'waiting', '(3) C2 (mutex), queued after B, still waits');
is($bw->query_safe("SELECT zk_lock_release('lay')"), 't', '(3) B releases lay');
my ($c2_out, $c2_err) = bg_collect($c2);
like($c2_out, qr/^granted\|t$/m, '(3) C2 is granted after B') or diag($c2_err);
is($c2->query_safe("SELECT zk_lock_release('lay')"), 't', '(3) C2 releases lay');
# And the other way round: B holds, C's try fails.
is($bw->query_safe("SELECT zk_lock_acquire('lay2', '10s') > 0"), 't', '(3) B holds lay2');
is($c->safe_psql('postgres', "SELECT zk_lock_try('lay2')"), 'f', '(3) C cannot take lay2 from B');
is($bw->query_safe("SELECT zk_lock_release('lay2')"), 't', '(3) B releases lay2');
$bw->quit;
$c1->quit;
$c2->quit;
zk_wait_empty($zk1, '/shared/r1/lay', 'after the layout queue');

###########################################################################
# (4) zklock.max_locks_per_backend.
###########################################################################

is($c->safe_psql('postgres', 'SHOW zklock.max_locks_per_backend') . ' ' . $c->safe_psql('postgres', 'SHOW zklock.max_locks'),
	'-1 1024', '(4) the defaults: max_locks_per_backend -1, max_locks 1024');
my $cap = bg_session($c);
is($cap->query_safe("SELECT count(*) FROM generate_series(1, 102) g WHERE zk_lock_try('cap' || g)"), '102',
	'(4) with the defaults a session takes 102 locks (a tenth of 1024)');
is(bg_sqlstate($cap, "SELECT zk_lock_try('cap103')"), '53400', '(4) ... and the 103rd fails with 53400');
is(bg_sqlstate($cap, "SELECT zk_lock_acquire_shared('cap1', '1s')"), '53400',
	'(4) ... a shared hold of a name held exclusive counts as one more lock');
is($cap->query_safe("SELECT zk_lock_acquire('cap1', '1s') > 0"), 't', '(4) ... a reentrant acquire still works');
$cap->query_safe('SELECT zk_lock_release_all()');

$cap->query_safe('SET zklock.max_locks_per_backend = 2');
is($cap->query_safe("SELECT zk_lock_acquire('pm', '5s') > 0 AND zk_lock_acquire_shared('pm', '5s') > 0"), 't',
	'(4) limit 2: one name held exclusive and shared');
is(bg_sqlstate($cap, "SELECT zk_lock_acquire('pq', '1s')"), '53400',
	'(4) ... fills the limit: another name fails with 53400 (the two modes count apart)');
is(bg_sqlstate($cap, "SELECT zk_lock_try_shared('pq')"), '53400', '(4) ... in shared mode too');
is($cap->query_safe("SELECT zk_lock_acquire('pm', '1s') > 0 AND zk_lock_acquire_shared('pm', '1s') > 0"), 't',
	'(4) ... reentrant acquires of both held modes still work');
is($cap->query_safe("SELECT zk_lock_release('pm') AND zk_lock_release_shared('pm')"), 't', '(4) one release of each');
$cap->query_safe('SELECT zk_lock_release_all()');
is($cap->query_safe("SELECT zk_lock_acquire('pm', '5s') > 0 AND zk_lock_acquire('pq', '5s') > 0"), 't',
	'(4) after release_all, two exclusive names fit in the limit of 2');
$cap->query_safe('SELECT zk_lock_release_all()');
$cap->quit;

my $floor = bg_session($d);
is($d->safe_psql('postgres', 'SHOW zklock.max_locks'), '200', '(4) D has zklock.max_locks = 200');
is($floor->query_safe("SELECT count(*) FROM generate_series(1, 64) g WHERE zk_lock_try('fl' || g)"), '64',
	'(4) with max_locks = 200 a session still takes 64 locks (the floor, not a tenth)');
is(bg_sqlstate($floor, "SELECT zk_lock_try('fl65')"), '53400', '(4) ... and the 65th fails with 53400');
$floor->query_safe('SELECT zk_lock_release_all()');
$floor->quit;

###########################################################################
# (5) zklock.on_lock_lost.
###########################################################################

$d->safe_psql('postgres', 'CREATE TABLE work (tag text)');
reload_with($d, "zklock.on_lock_lost = 'error'", 'zklock.on_lock_lost', 'error');
sleep 1;    # the worker, which acts on a loss, reloads too
my $he = bg_session($d);
$he->query_safe('\set VERBOSITY verbose');
my $he_pid = $he->query_safe('SELECT pg_backend_pid()');
is($he->query_safe("BEGIN; SELECT zk_lock_acquire_xact('lost-e', '10s') > 0; INSERT INTO work VALUES ('lost-e')"),
	't', '(5) error: H holds lost-e in an open transaction with a row');
my $he_node = $d->safe_psql('postgres', "SELECT znode FROM zk_locks WHERE pid = $he_pid AND name = 'lost-e' AND state = 'held'");
bg_start($he, "SELECT 'slept', pg_sleep(4)");
wait_until(sub {
	$d->safe_psql('postgres', "SELECT count(*) FROM pg_stat_activity WHERE pid = $he_pid AND query LIKE '%pg_sleep%' AND state = 'active'") eq '1'
}, 10, 'H runs its statement');
ok(zk_delete($zk1, $he_node), '(5) error: an operator deletes H\'s node');
wait_until(sub { lock_of($d, $he_pid, 'lost-e') eq 'lost' }, 20, 'D marks lost-e lost');
my ($he_out, $he_err) = bg_collect($he);
like($he_out, qr/^slept\|/m, '(5) error: the statement running during the loss is not cancelled');
is(sqlstate_of($he_err), 'ok', '(5) error: ... and raised nothing') or diag($he_err);
$he->query('COMMIT');
is(sqlstate_of($he->{stderr}), 'ZK002', '(5) error: the COMMIT fails with ZK002');
$he->{stderr} = '';
is(committed($d, 'lost-e'), '0', '(5) error: the row is not committed');
$he->quit;

reload_with($d, "zklock.on_lock_lost = 'terminate'", 'zklock.on_lock_lost', 'terminate');
sleep 1;
my $ht = bg_session($d);
my $ht_pid = $ht->query_safe('SELECT pg_backend_pid()');
is($ht->query_safe("SELECT zk_lock_acquire('lost-t', '10s') > 0"), 't', '(5) terminate: T holds lost-t');
my $ht_node = $d->safe_psql('postgres', "SELECT znode FROM zk_locks WHERE pid = $ht_pid AND name = 'lost-t' AND state = 'held'");
my $log_off = -s $d->logfile;
ok(zk_delete($zk1, $ht_node), '(5) terminate: an operator deletes T\'s node');
ok(wait_until(sub { $d->safe_psql('postgres', "SELECT count(*) FROM pg_stat_activity WHERE pid = $ht_pid") eq '0' }, 20,
		'T terminated'),
	'(5) terminate: the holding backend is terminated');
like(slurp_file($d->logfile, $log_off), qr/terminating connection due to administrator command/,
	'(5) terminate: the log shows the termination');
is($d->safe_psql('postgres', "SELECT count(*) FROM zk_locks WHERE pid = $ht_pid"), '0', '(5) terminate: nothing of T is left');
eval { $ht->quit; 1 };
reload_with($d, "zklock.on_lock_lost = 'cancel'", 'zklock.on_lock_lost', 'cancel');

###########################################################################
# (6) zklock.auth.
###########################################################################

my $e = zklock_node('e', $zk1, root => '/secure', conf => "zklock.auth = 'alice:secret'");
my $f = zklock_node('f', $zk1, root => '/secure', conf => "zklock.auth = 'alice:wrong'");
my $alice = 'digest:alice:' . sha1_base64('alice:secret') . '=:31';

my $se = bg_session($e);
my $se_pid = $se->query_safe('SELECT pg_backend_pid()');
is($se->query_safe("SELECT zk_lock_acquire('sec', '10s') > 0"), 't', '(6) E (with auth) holds sec');
my $sec_node = $e->safe_psql('postgres', "SELECT znode FROM zk_locks WHERE pid = $se_pid AND name = 'sec'");
like($sec_node, qr{^/secure/sec/}, "(6) E's node is $sec_node");
is(zk_acls($zk1, $sec_node, 'alice:secret'), $alice, '(6) E\'s lock node has the creator-only ACL');
is(zk_acls($zk1, '/secure/sec', 'alice:secret'), $alice, '(6) ... so has the lock directory');
is(zk_acls($zk1, '/secure', 'alice:secret'), $alice, '(6) ... and the root E created');
my ($rc, $out, $err) = zkutil($zk1, 'ls', '/secure/sec');
ok($rc != 0 && $rc != 3, "(6) a client without credentials cannot list the lock directory (zkutil exit $rc: $err)");
($rc, $out, $err) = zkutil($zk1, 'get', $sec_node);
ok($rc != 0 && $rc != 3, "(6) ... nor read the node (zkutil exit $rc)");
($rc, $out, $err) = zkutil($zk1, 'delete', $sec_node);
ok($rc != 0 && $rc != 3, "(6) ... nor delete it (zkutil exit $rc: $err)");
ok(defined zk_stat($zk1, $sec_node), '(6) E\'s node is still there');
is($se->query_safe("SELECT zk_lock_check('sec')"), 't', '(6) ... and E still holds sec');

is(sql_sqlstate($f, "SELECT zk_lock_acquire('sec', '5s')"), 'ZK000',
	'(6) F (wrong auth) is refused with ZK000 on E\'s lock directory');
is(sql_sqlstate($f, "SELECT zk_lock_acquire('fresh', '5s')"), 'ZK000', '(6) ... and on a new name under E\'s root');
is(sql_sqlstate($f, "SELECT zk_lock_try('sec')"), 'ZK000', '(6) ... and with a try');
is($f->safe_psql('postgres', 'SELECT count(*) FROM zk_locks'), '0', '(6) F keeps no request');
is(zk_stat($zk1, '/secure/sec')->{numChildren}, 1, '(6) only E\'s node is in the lock directory');
ok(!defined zk_stat($zk1, '/secure/fresh'), '(6) F created no directory for the new name');
is($se->query_safe("SELECT zk_lock_release('sec')"), 't', '(6) E releases sec');
wait_until(sub { zk_stat($zk1, '/secure/sec')->{numChildren} == 0 }, 15, 'E\'s node gone');
is($se->query_safe("SELECT zk_lock_try('sec') AND zk_lock_release('sec')"), 't', '(6) E can lock again');
$se->quit;

# A reload of zklock.auth (context "reload"): the session in use gets the
# credentials, so nodes created with the creator-only ACL name them.
reload_with($c, "zklock.auth = 'carol:pw'", 'zklock.auth', 'carol:pw');
sleep 1;
my $carol = 'digest:carol:' . sha1_base64('carol:pw') . '=:31';
my $sc = bg_session($c);
my $sc_pid = $sc->query_safe('SELECT pg_backend_pid()');
$sc->query_safe('\set VERBOSITY verbose');
my ($car_out, $car_failed) = $sc->query("SELECT zk_lock_acquire('carol', '10s') > 0");
is($car_failed ? sqlstate_of($sc->{stderr}) : $car_out, 't', '(6) after a reload of zklock.auth C can still lock')
  or diag($sc->{stderr});
$sc->{stderr} = '';
my $car_node = $c->safe_psql('postgres', "SELECT coalesce((SELECT znode FROM zk_locks WHERE pid = $sc_pid AND name = 'carol'), '')");
is($car_node ne '' ? zk_acls($zk1, $car_node, 'carol:pw') : '(no node)', $carol,
	'(6) ... and its new node has the creator-only ACL of the reloaded credentials');
$sc->quit;

is($a->safe_psql('postgres', 'SELECT count(*) FROM zk_locks') . $b->safe_psql('postgres', 'SELECT count(*) FROM zk_locks'),
	'00', 'A and B hold nothing at the end');

done_testing();
