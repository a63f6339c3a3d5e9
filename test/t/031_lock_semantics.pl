# Lock semantics the README promises, on clusters A (zklock.session_timeout
# 21 s) and B (10 s) sharing one ZooKeeper server:
#  (1) zk_lock_try_xact_shared: a transaction-scope shared try shares with
#      readers of another cluster, keeps writers out, stacks (one node),
#      ends with the transaction (or the statement outside a transaction
#      block), and fails (false, no node left) while a writer holds the lock
#      or waits for it.
#  (2) zk_lock_release_all drops every session-scope hold of the session, in
#      both modes, reentrant ones and a session-scope lock set included,
#      while the transaction holds of the open transaction stay until its
#      COMMIT (another cluster can take the former at once, not the latter).
#  (3) Timeouts: with lock_timeout = 0 a NULL timeout waits for ever (still
#      waiting after 5 s, far beyond the session's 1 s
#      zklock.connect_timeout, as wait_event_type 'Extension'), and is
#      granted when the holder releases; an explicit '0' does not wait at
#      all: exclusive, shared and set acquires fail with 55P03 while another
#      cluster holds the lock (well before the 20 s statement_timeout), and
#      leave no node.
#  (4) Two sessions (in A and B) hold L shared and both ask for it
#      exclusive: the first waits, the second fails at once with 40P01 and
#      leaves no node; the first is granted once the second drops its
#      shared hold.
#  (5) Lock sets: one timeout covers the whole set.  B holds t1, t2, t3; A
#      asks for the set with a 6 s timeout; B releases t1 after 4 s and t2
#      only after 8 s.  A's acquire has failed with 55P03 on t2 by then (a
#      timeout per lock would still be waiting for t2 at 8 s, until 10 s).
#      And a set cancelled part way (two names granted, the third waiting
#      behind B) leaves no node of it in ZooKeeper (seen with zkutil) while
#      its session lives on.
#  (6) Releases do not wait for ZooKeeper, checked by order, not time:
#      - ZooKeeper slow (its server frozen with SIGSTOP right after a
#        heartbeat was answered): zk_lock_release and the COMMIT of a
#        transaction that holds a transaction-scope lock and inserted a row
#        (its proof of the session is fresh) return while the server is
#        still stopped, the row is committed, and zk_locks shows both locks
#        'releasing' until the server is thawed; then their nodes are gone;
#      - ZooKeeper down (server stopped): the same for a release and for
#        the COMMIT of a transaction that wrote nothing (a writing one waits
#        for proof while the session is suspended, as the README says; 012
#        tests that), both 'releasing' while it is down; zk_lock_check of a
#        held lock turns false while ZooKeeper is down (the hold is not
#        lost), and true again once it is back, in the same session.
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::RealBin/../lib";
use ZklockTest;
use Test::More;
use PostgreSQL::Test::Utils;
use Time::HiRes qw(time sleep);

# A frozen ZooKeeper server is always thawed, whatever way the test ends.
my $zk_frozen;
END { kill('CONT', $zk_frozen) if $zk_frozen; }

sub session
{
	my ($node) = @_;
	my $s = bg_session($node);
	my $pid = $s->query_safe('SELECT pg_backend_pid()');
	return ($s, $pid);
}

# "mode:scope:state" of each zk_locks row of $pid (sorted), '' if none.
sub rows_of
{
	my ($node, $pid, $name) = @_;
	my $and = defined $name ? "AND name = '$name'" : '';
	return $node->safe_psql('postgres',
		"SELECT coalesce(string_agg(name || ':' || mode || ':' || scope || ':' || state, ' ' ORDER BY name, mode), '') FROM zk_locks WHERE pid = $pid $and"
	);
}

sub state_of
{
	my ($node, $pid, $name, $mode) = @_;
	return $node->safe_psql('postgres',
		"SELECT coalesce((SELECT state FROM zk_locks WHERE pid = $pid AND name = '$name' AND mode = '$mode'), 'none')");
}

# True once cluster $node can take $name exclusive (then released again).
sub free_in
{
	my ($node, $name) = @_;
	return $node->safe_psql('postgres', "SELECT zk_lock_try('$name') AND zk_lock_release('$name')") eq 't';
}

sub active
{
	my ($node, $pid) = @_;
	return $node->safe_psql('postgres', "SELECT state FROM pg_stat_activity WHERE pid = $pid") eq 'active';
}

my $zk = zk_start(1);
my $a = zklock_node('a', $zk, session_timeout => '21s');
my $b = zklock_node('b', $zk, session_timeout => '10s');
$a->safe_psql('postgres', 'CREATE TABLE work (tag text)');

###########################################################################
# (1) zk_lock_try_xact_shared.
###########################################################################

{
	my ($sa, $pa) = session($a);
	is($sa->query_safe("BEGIN; SELECT zk_lock_try_xact_shared('r')"), 't', '(1) A takes r with zk_lock_try_xact_shared');
	is(rows_of($a, $pa), 'r:shared:transaction:held', '(1) ... a shared transaction-scope hold');
	is($b->safe_psql('postgres', "SELECT zk_lock_try_shared('r') AND zk_lock_release_shared('r')"), 't',
		'(1) a reader of B shares r');
	is($b->safe_psql('postgres', "SELECT zk_lock_try('r')"), 'f', '(1) a writer of B is kept out');
	is($sa->query_safe("SELECT zk_lock_try_xact_shared('r')"), 't', '(1) a second try of A stacks');
	is(zk_nchildren($zk, '/zklock/r'), 1, '(1) ... on the same node');
	$sa->query_safe('COMMIT');
	ok(wait_until(sub { free_in($b, 'r') }, 15, 'r free after the COMMIT'), '(1) the COMMIT ends both holds: B takes r');
	is(rows_of($a, $pa), '', '(1) A keeps nothing of r');

	is($sa->query_safe("SELECT zk_lock_try_xact_shared('r')"), 't', '(1) outside a transaction block the try succeeds');
	ok(wait_until(sub { free_in($b, 'r') }, 15, 'r free after the statement'), '(1) ... and the hold ends with the statement');

	my ($hb, $hb_pid) = session($b);
	is($hb->query_safe("SELECT zk_lock_acquire('r2', '5s') > 0"), 't', '(1) B holds r2 exclusive');
	is($sa->query_safe("BEGIN; SELECT zk_lock_try_xact_shared('r2')"), 'f', '(1) A\'s shared try fails while a writer holds r2');
	$sa->query_safe('ROLLBACK');
	is($hb->query_safe("SELECT zk_lock_release('r2') AND zk_lock_acquire_shared('r2', '5s') > 0"), 't',
		'(1) B holds r2 shared instead');
	my ($wb, $wb_pid) = session($b);
	bg_start($wb, "SELECT 'writer', zk_lock_acquire('r2', '30s') > 0");
	wait_until(sub { state_of($b, $wb_pid, 'r2', 'exclusive') eq 'waiting' && zk_nchildren($zk, '/zklock/r2') == 2 },
		15, 'a writer of B queued for r2');
	is($sa->query_safe("BEGIN; SELECT zk_lock_try_xact_shared('r2')"), 'f',
		'(1) A\'s shared try fails while a writer waits for r2');
	ok(wait_until(sub { zk_nchildren($zk, '/zklock/r2') == 2 }, 15, 'the failed try\'s node gone'),
		'(1) ... and leaves no node behind');
	$sa->query_safe('ROLLBACK');
	$hb->query_safe("SELECT zk_lock_release_shared('r2')");
	my ($out) = bg_collect($wb);
	like($out, qr/^writer\|t$/m, '(1) the writer is granted once the reader left');
	$wb->query_safe("SELECT zk_lock_release('r2')");
	$_->quit for ($sa, $hb, $wb);
}

###########################################################################
# (2) zk_lock_release_all.
###########################################################################

{
	my ($s, $pid) = session($a);
	is($s->query_safe("SELECT zk_lock_acquire('e', '5s') > 0 AND zk_lock_acquire('e', '5s') > 0"
			  . " AND zk_lock_acquire_shared('s', '5s') > 0 AND zk_lock_acquire_shared('s', '5s') > 0"
			  . " AND zk_lock_acquire('m', '5s') > 0 AND zk_lock_acquire_shared('m', '5s') > 0"
			  . " AND zk_lock_acquire(ARRAY['set2', 'set1'], '5s') IS NOT NULL"),
		't', '(2) A holds e twice, s shared twice, m in both modes and the set {set1, set2}, all in session scope');
	is($s->query_safe("BEGIN; SELECT zk_lock_acquire_xact('tx', '5s') > 0 AND zk_lock_acquire_xact('e', '5s') > 0"),
		't', '(2) ... and, in an open transaction, tx and e in transaction scope');
	is(rows_of($a, $pid),
		'e:exclusive:session+transaction:held m:exclusive:session:held m:shared:session:held s:shared:session:held '
		  . 'set1:exclusive:session:held set2:exclusive:session:held tx:exclusive:transaction:held',
		'(2) zk_locks shows them');
	$s->query_safe('SELECT zk_lock_release_all()');
	is($a->safe_psql('postgres',
			"SELECT string_agg(name || ':' || mode || ':' || scope, ' ' ORDER BY name) FROM zk_locks WHERE pid = $pid AND state <> 'releasing'"),
		'e:exclusive:transaction tx:exclusive:transaction',
		'(2) after zk_lock_release_all only the transaction holds are left');
	is($s->query_safe("SELECT zk_lock_token('s') IS NULL AND zk_lock_token('m') IS NULL AND zk_lock_token('set1') IS NULL"
			  . " AND zk_lock_token('e') IS NOT NULL"), 't', '(2) ... as zk_lock_token sees too');
	for my $name (qw(s m set1 set2))
	{
		ok(wait_until(sub { free_in($b, $name) }, 15, "$name free"), "(2) B takes $name at once (both modes of it dropped)");
	}
	is($b->safe_psql('postgres', "SELECT zk_lock_try('tx')::int + zk_lock_try('e')::int"), '0',
		'(2) B cannot take tx nor e while the transaction is open');
	$s->query_safe('COMMIT');
	ok(wait_until(sub { free_in($b, 'tx') && free_in($b, 'e') }, 15, 'tx and e free'), '(2) after COMMIT B takes tx and e');
	is(rows_of($a, $pid), '', '(2) A holds nothing');
	$s->quit;
	wait_until(sub { !grep { zk_nchildren($zk, "/zklock/$_") } qw(e s m set1 set2 tx) }, 15, 'no node left');
}

###########################################################################
# (3) A NULL timeout with lock_timeout = 0 waits for ever; '0' not at all.
###########################################################################

{
	my ($hb) = session($b);
	is($hb->query_safe("SELECT zk_lock_acquire('w', '5s') > 0"), 't', '(3) B holds w');
	my ($sw, $pw) = session($a);
	$sw->query_safe("SET lock_timeout = 0; SET zklock.connect_timeout = '1s'; SET statement_timeout = '60s'");
	bg_start($sw, "SELECT 'granted', zk_lock_acquire('w', NULL) > 0");
	wait_until(sub { state_of($a, $pw, 'w', 'exclusive') eq 'waiting' && zk_nchildren($zk, '/zklock/w') == 2 }, 15, 'A waits for w');
	sleep 5;
	is(state_of($a, $pw, 'w', 'exclusive'), 'waiting', '(3) with a NULL timeout and lock_timeout = 0, A still waits after 5 s');
	is($a->safe_psql('postgres', "SELECT wait_event_type FROM pg_stat_activity WHERE pid = $pw"), 'Extension',
		'(3) ... as wait_event_type Extension');
	is($hb->query_safe("SELECT zk_lock_release('w')"), 't', '(3) B releases w');
	my ($out, $err) = bg_collect($sw);
	like($out, qr/^granted\|t$/m, '(3) A is granted w') or diag($err);
	is($sw->query_safe("SELECT zk_lock_release('w')"), 't', '(3) A releases w');

	is($hb->query_safe("SELECT zk_lock_acquire('w', '5s') > 0"), 't', '(3) B holds w again');
	$sw->query_safe("SET statement_timeout = '20s'");
	my $t0 = time;
	is(scalar(bg_sqlstate($sw, "SELECT zk_lock_acquire('w', '0')")), '55P03',
		'(3) an explicit \'0\' timeout fails with 55P03 while B holds w (lock_timeout = 0 notwithstanding)');
	is(scalar(bg_sqlstate($sw, "SELECT zk_lock_acquire_shared('w', '0')")), '55P03', '(3) ... so does a shared acquire');
	is(scalar(bg_sqlstate($sw, "SELECT zk_lock_acquire(ARRAY['w0', 'w'], '0')")), '55P03', '(3) ... and a set');
	my $elapsed = time - $t0;
	cmp_ok($elapsed, '<', 15, sprintf('(3) ... all three at once (%.2f s in all; a wait would last 20 s each)', $elapsed));
	is($sw->query_safe("SELECT zk_lock_token('w0') IS NULL AND zk_lock_token('w') IS NULL"), 't', '(3) A holds nothing of them');
	ok(wait_until(sub { zk_nchildren($zk, '/zklock/w') == 1 && zk_nchildren($zk, '/zklock/w0') == 0 }, 15, 'only B\'s node'),
		'(3) no node of the failed requests is left');
	$hb->query_safe("SELECT zk_lock_release('w')");
	$_->quit for ($hb, $sw);
}

###########################################################################
# (4) Two sessions upgrade shared -> exclusive.
###########################################################################

{
	my ($ua, $pa) = session($a);
	my ($ub, $pb) = session($b);
	is($ua->query_safe("SELECT zk_lock_acquire_shared('u', '5s') > 0"), 't', '(4) A reads u');
	is($ub->query_safe("SELECT zk_lock_acquire_shared('u', '5s') > 0"), 't', '(4) B reads u');
	bg_start($ua, "SELECT 'upgraded', zk_lock_acquire('u', '60s') > 0");
	wait_until(sub { state_of($a, $pa, 'u', 'exclusive') eq 'waiting' && zk_nchildren($zk, '/zklock/u') == 3 }, 15,
		'A\'s upgrade queued');
	is(state_of($a, $pa, 'u', 'exclusive'), 'waiting', '(4) A\'s upgrade waits for B\'s reader');
	my $t0 = time;
	my ($st, $err) = bg_sqlstate($ub, "SELECT zk_lock_acquire('u', '30s')");
	my $elapsed = time - $t0;
	is($st, '40P01', '(4) B\'s upgrade, the second one, fails with 40P01') or diag($err);
	cmp_ok($elapsed, '<', 20, sprintf('(4) ... at once (%.2f s; its timeout was 30 s)', $elapsed));
	ok(wait_until(sub { zk_nchildren($zk, '/zklock/u') == 3 }, 15, 'u has three nodes'), '(4) B\'s failed request left no node');
	is(rows_of($b, $pb), 'u:shared:session:held', '(4) B keeps its shared hold only');
	is(state_of($a, $pa, 'u', 'exclusive'), 'waiting', '(4) A\'s upgrade still waits');
	is($ub->query_safe("SELECT zk_lock_release_shared('u')"), 't', '(4) B drops its shared hold');
	my ($out, $aerr) = bg_collect($ua);
	like($out, qr/^upgraded\|t$/m, '(4) A\'s upgrade is granted') or diag($aerr);
	is($ua->query_safe("SELECT zk_lock_release('u') AND zk_lock_release_shared('u')"), 't', '(4) A releases both');
	$_->quit for ($ua, $ub);
	wait_until(sub { zk_nchildren($zk, '/zklock/u') == 0 }, 15, 'no node of u left');
}

###########################################################################
# (5) One timeout for a whole set; a set cancelled part way.
###########################################################################

{
	my ($hb) = session($b);
	is($hb->query_safe("SELECT zk_lock_acquire(ARRAY['t1', 't2', 't3'], '5s') IS NOT NULL"), 't', '(5) B holds t1, t2, t3');
	my ($sa, $pa) = session($a);
	my $t0 = time;
	bg_start($sa, "SELECT 'set', zk_lock_acquire(ARRAY['t3', 't1', 't2'], '6s')");
	wait_until(sub { state_of($a, $pa, 't1', 'exclusive') eq 'waiting' }, 15, 'A waits for t1');
	sleep(4 - (time - $t0)) if time - $t0 < 4;
	is($hb->query_safe("SELECT zk_lock_release('t1')"), 't', sprintf('(5) B releases t1 (%.1f s after the request)', time - $t0));
	wait_until(sub { state_of($a, $pa, 't2', 'exclusive') eq 'waiting' }, 10, 'A gets t1 and waits for t2');
	sleep(8 - (time - $t0)) if time - $t0 < 8;
	my $at = time - $t0;
	ok(!active($a, $pa), sprintf('(5) %.1f s after the request, before t2 is released, A\'s set acquire has ended: '
			  . 'the 6 s timeout covered the whole set', $at));
	is($hb->query_safe("SELECT zk_lock_release('t2') AND zk_lock_release('t3')"), 't', '(5) B releases t2 and t3 only now');
	my ($out, $err) = bg_collect($sa);
	like($err, qr/could not obtain ZooKeeper lock "t2"/, '(5) A failed on t2') or diag("out: $out\nerr: $err");
	unlike($out, qr/^set\|\{/m, '(5) ... and got no tokens');
	wait_until(sub { rows_of($a, $pa) eq '' }, 15, 'A\'s set gone');
	is(rows_of($a, $pa), '', '(5) A keeps nothing of the set');
	ok(wait_until(sub { !grep { zk_nchildren($zk, "/zklock/$_") } qw(t1 t2 t3) }, 15, 'no node of t1..t3'),
		'(5) no node of the set is left');

	# A set cancelled part way.
	is($hb->query_safe("SELECT zk_lock_acquire('c3', '5s') > 0"), 't', '(5) B holds c3');
	bg_start($sa, "SELECT zk_lock_acquire(ARRAY['c4', 'c2', 'c3', 'c1'])");
	wait_until(sub { rows_of($a, $pa) eq 'c1:exclusive:transaction:held c2:exclusive:transaction:held c3:exclusive:transaction:waiting' },
		15, 'A holds c1, c2 and waits for c3');
	is(join(',', map { zk_nchildren($zk, "/zklock/$_") } qw(c1 c2 c3 c4)), '1,1,2,0', '(5) ZooKeeper has A\'s nodes of c1, c2, c3');
	is($a->safe_psql('postgres', "SELECT pg_cancel_backend($pa)"), 't', '(5) A\'s set is cancelled');
	$sa->query('\set VERBOSITY verbose');
	($out, $err) = bg_collect($sa);
	like($err, qr/canceling statement due to user request/, '(5) the set was cancelled');
	ok(wait_until(sub { join(',', map { zk_nchildren($zk, "/zklock/$_") } qw(c1 c2 c3 c4)) eq '0,0,1,0' }, 15, 'A\'s nodes gone'),
		'(5) none of A\'s nodes is left in ZooKeeper (c3 keeps B\'s only)');
	ok(active($a, $pa) || $a->safe_psql('postgres', "SELECT count(*) FROM pg_stat_activity WHERE pid = $pa") eq '1',
		'(5) ... while A\'s session lives on');
	is(rows_of($a, $pa), '', '(5) A keeps nothing of the set');
	ok(free_in($b, 'c1') && free_in($b, 'c2'), '(5) B takes c1 and c2 at once');
	$hb->query_safe("SELECT zk_lock_release('c3')");
	$_->quit for ($hb, $sa);
}

###########################################################################
# (6) Releases and COMMIT do not wait for ZooKeeper.
###########################################################################

my $zkpid = slurp_file("$zk->{dir}/zk1.pid") =~ s/\s+//gr;

# ZooKeeper slow: the server process frozen.
{
	my ($s1, $p1) = session($a);
	my ($s2, $p2) = session($a);
	$_->query_safe("SET statement_timeout = '20s'") for ($s1, $s2);
	is($s1->query_safe("SELECT zk_lock_acquire('slow', '5s') > 0"), 't', '(6) A holds slow in session scope');
	is($s2->query_safe("BEGIN; SELECT zk_lock_acquire_xact('slow-x', '5s') > 0; INSERT INTO work VALUES ('slow-x')"), 't',
		'(6) A holds slow-x in a transaction that inserted a row');
	# The COMMIT needs proof of the session (an answer less than 7 s old):
	# freeze ZooKeeper right after a heartbeat's answer.
	my $lc0 = zk_status_of($a)->{last_contact};
	wait_until(sub { zk_status_of($a)->{last_contact} ne $lc0 }, 20, 'a fresh heartbeat answer');
	ok(kill('STOP', $zkpid), '(6) SIGSTOP to the ZooKeeper server');
	$zk_frozen = $zkpid;
	my ($o1, $f1) = $s1->query("SELECT zk_lock_release('slow')");
	my $st1 = proc_state($zkpid);
	is(($f1 ? $s1->{stderr} : '') . $o1, 't', '(6) zk_lock_release returns');
	is($st1, 'T', '(6) ... while ZooKeeper is still stopped');
	my ($o2, $f2) = $s2->query('COMMIT');
	my $st2 = proc_state($zkpid);
	is($f2 ? $s2->{stderr} : 'ok', 'ok', '(6) the COMMIT of the transaction holding slow-x returns without error');
	is($st2, 'T', '(6) ... while ZooKeeper is still stopped');
	is(committed($a, 'slow-x'), '1', '(6) ... and its row is committed');
	is($a->safe_psql('postgres', "SELECT string_agg(name || ':' || state, ' ' ORDER BY name) FROM zk_locks WHERE pid IN ($p1, $p2)"),
		'slow:releasing slow-x:releasing', '(6) zk_locks shows both locks releasing while ZooKeeper does not answer');
	is(proc_state($zkpid), 'T', '(6) ... (ZooKeeper was still stopped)');
	ok(kill('CONT', $zkpid), '(6) SIGCONT to the ZooKeeper server');
	$zk_frozen = undef;
	ok(wait_until(sub { $a->safe_psql('postgres', "SELECT count(*) FROM zk_locks WHERE pid IN ($p1, $p2)") eq '0' }, 20,
			'releases done'), '(6) once ZooKeeper answers, the releases complete');
	is(zk_nchildren($zk, '/zklock/slow') + zk_nchildren($zk, '/zklock/slow-x'), 0, '(6) ... and the nodes are gone');
	$_->quit for ($s1, $s2);
}

# ZooKeeper down: the server stopped.
{
	my ($rel, $prel) = session($a);
	my ($ro, $pro) = session($a);
	my ($chk, $pchk) = session($a);
	$_->query_safe("SET statement_timeout = '20s'") for ($rel, $ro, $chk);
	is($rel->query_safe("SELECT zk_lock_acquire('down', '5s') > 0"), 't', '(6) A holds down in session scope');
	is($ro->query_safe("BEGIN; SELECT zk_lock_acquire_xact('down-ro', '5s') > 0"), 't',
		'(6) A holds down-ro in a transaction that writes nothing');
	is($chk->query_safe("SELECT zk_lock_acquire('chk', '5s') > 0; SELECT zk_lock_check('chk')"), "t\nt",
		'(6) A holds chk and zk_lock_check(chk) is true');
	my $session = zk_status_of($a)->{session_id};

	zk_stop_one($zk, 1);
	ok(!zk_running($zk, 1), '(6) ZooKeeper is down');
	my ($o, $f) = $rel->query("SELECT zk_lock_release('down')");
	my $down = !zk_running($zk, 1);
	is(($f ? $rel->{stderr} : '') . $o, 't', '(6) zk_lock_release returns');
	ok($down, '(6) ... while ZooKeeper is down');
	($o, $f) = $ro->query('COMMIT');
	$down = !zk_running($zk, 1);
	is($f ? $ro->{stderr} : 'ok', 'ok', '(6) the read-only transaction\'s COMMIT returns without error');
	ok($down, '(6) ... while ZooKeeper is down');
	is($a->safe_psql('postgres',
			"SELECT string_agg(name || ':' || state, ' ' ORDER BY name) FROM zk_locks WHERE pid IN ($prel, $pro)"),
		'down:releasing down-ro:releasing', '(6) zk_locks shows both locks releasing');
	ok(wait_until(sub { zk_status_of($a)->{state} eq 'suspended' }, 15, 'A suspended'), '(6) A\'s session is suspended');

	ok(wait_until(sub { $chk->query_safe("SELECT zk_lock_check('chk')") eq 'f' }, 30, 'zk_lock_check false'),
		'(6) zk_lock_check(chk) turns false while ZooKeeper is down');
	ok(!zk_running($zk, 1), '(6) ... (ZooKeeper was still down)');
	is(state_of($a, $pchk, 'chk', 'exclusive'), 'suspended',
		'(6) ... the hold itself is not lost: zk_locks shows it suspended, not held');

	zk_start_one($zk, 1);
	ok(wait_until(sub { zk_status_of($a)->{state} eq 'connected' }, 30, 'A connected again'), '(6) ZooKeeper is back');
	is(zk_status_of($a)->{session_id}, $session, '(6) ... A kept its session');
	ok(wait_until(sub { $chk->query_safe("SELECT zk_lock_check('chk')") eq 't' }, 30, 'zk_lock_check true'),
		'(6) zk_lock_check(chk) is true again');
	ok(wait_until(sub { $a->safe_psql('postgres', "SELECT count(*) FROM zk_locks WHERE pid IN ($prel, $pro)") eq '0' },
			30, 'releases done'), '(6) both releases complete');
	is(join(',', map { zk_nchildren($zk, "/zklock/$_") } qw(down down-ro)), '0,0', '(6) ... and their nodes are gone');
	is($chk->query_safe("SELECT zk_lock_release('chk')"), 't', '(6) chk is released normally');
	$_->quit for ($rel, $ro, $chk);
}

# Releases do not wait for ZooKeeper: the last one may still be 'releasing'.
my $left = '';
wait_until(sub { ($left = $a->safe_psql('postgres', 'SELECT count(*) FROM zk_locks')
		  . $b->safe_psql('postgres', 'SELECT count(*) FROM zk_locks')) eq '00' }, 30, 'releases done');
is($left, '00', 'A and B hold nothing at the end');

done_testing();
