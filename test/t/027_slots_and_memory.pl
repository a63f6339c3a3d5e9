# Shared slots are never stranded, and a long-lived session does not grow.
#
# 1. However a request ends, its shared slot comes back: after each case
#    below, once its sessions are gone, zk_status().slots_used is 0 again and
#    ZooKeeper keeps no node in the lock directories involved (checked with
#    zkutil, not through the extension); after a cancel or a timeout the slot
#    is back already while the session stays connected:
#    (a) zk_lock_contenders cancelled (statement_timeout, pg_cancel_backend)
#        while ZooKeeper is down, as the session's first zklock call (the
#        backend has no local lock table and no exit hook yet) and as a later
#        one; ZooKeeper is then started again;
#    (b) a waiting acquire cancelled, and one ended by statement_timeout;
#    (c) a backend terminated (FATAL) while waiting, while holding, and inside
#        zk_lock_contenders with ZooKeeper down;
#    (d) lock timeouts (timeout argument, lock_timeout, '0') and tries that
#        find the lock busy, more tries than the cluster has slots;
#    (e) errors part way through a lock set (timeout, cancel, in a
#        transaction and in a savepoint).
# 2. Memory soak: one session acquires and releases 100,000 distinct names
#    after a warm-up of 2,000; the private resident memory (RssAnon) of the
#    backend and of the zklock worker grows by less than 10 MB each.
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::RealBin/../lib";
use ZklockTest;
use Test::More;
use PostgreSQL::Test::Utils;
use Time::HiRes qw(time);

my $SOAK_N = 100_000;
my $WARMUP_N = 2_000;
my $MAX_GROWTH_KB = 10 * 1024;

my $zk = zk_start(1);
my $node = zklock_node('a', $zk, session_timeout => '10s');
my $slots_total = zk_status_of($node)->{slots_total};

sub slots_used { return zk_status_of($node)->{slots_used} }

sub sql { return $node->safe_psql('postgres', $_[0]) }

# The case's sessions are gone: every slot comes back and the directories
# of @names have no child left.
sub all_back
{
	my ($what, @names) = @_;
	local $Test::Builder::Level = $Test::Builder::Level + 1;
	wait_until(sub { slots_used() == 0 }, 30, "slots_used back to 0 after $what");
	is(slots_used(), 0, "$what: no shared slot stranded")
	  or diag('zk_locks: ' . sql('SELECT pid, name, mode, scope, state FROM zk_locks'));
	is(sql('SELECT count(*) FROM zk_locks'), '0', "$what: zk_locks is empty");
	for my $name (@names)
	{
		my $dir = "/zklock/$name";
		wait_until(sub { !zk_ls($zk, $dir) }, 30, "no node left under $dir after $what");
		is(join(',', zk_ls($zk, $dir)), '', "$what: no node left under $dir");
	}
	return;
}

# A session ready to be interrupted: its pid, after @setup ran.
sub session
{
	my (@setup) = @_;
	my $s = bg_session($node);
	my $pid = $s->query_safe('SELECT pg_backend_pid()');
	$s->query_safe($_) for @setup;
	return ($s, $pid);
}

# Run $sql in session $s without waiting for it; returns once $ready says
# the statement is where the test wants it.
sub start_blocking
{
	my ($s, $sql, $ready, $what) = @_;
	local $Test::Builder::Level = $Test::Builder::Level + 1;
	$s->query_until(qr/started\n/, "\\echo started\n$sql;\n");
	return wait_until($ready, 30, $what);
}

# End the statement session $s (pid $pid) runs: 'cancel', 'terminate', or
# 'timeout' (its statement_timeout does it).  Checks the error it got and,
# when the session survives, that its slot comes back while it is still
# connected (slots_used back to $before); then ends the session.
sub interrupt
{
	my ($s, $pid, $how, $what, $before) = @_;
	local $Test::Builder::Level = $Test::Builder::Level + 1;
	if ($how eq 'terminate')
	{
		is(sql("SELECT pg_terminate_backend($pid)"), 't', "$what: backend terminated");
		wait_until(sub { sql("SELECT count(*) FROM pg_stat_activity WHERE pid = $pid") eq '0' },
			30, "backend $pid gone");
		eval { $s->quit; 1 };
		return;
	}
	is(sql("SELECT pg_cancel_backend($pid)"), 't', "$what: cancel sent") if $how eq 'cancel';
	my ($out, $err) = bg_collect($s);
	my $re = $how eq 'cancel' ? qr/canceling statement due to user request/
	  : qr/canceling statement due to statement timeout/;
	like($err, $re, "$what: the statement was ended by the $how");
	wait_until(sub { slots_used() <= $before }, 30, "the slot of $what to come back");
	cmp_ok(slots_used(), '<=', $before, "$what: the slot comes back while the session is still connected");
	$s->quit;
	return;
}

# A holder of $name in its own session.
sub holder
{
	my ($name) = @_;
	my ($h) = session();
	is($h->query_safe("SELECT zk_lock_acquire('$name', '30s') > 0"), 't', "a holder has $name");
	return $h;
}

sub waiting_on
{
	my ($pid, $name, $nodes) = @_;
	return sub {
		lock_state($node, $pid, $name) eq 'waiting' && zk_ls($zk, "/zklock/$name") == $nodes;
	};
}

###########################################################################
# (a), (c) zk_lock_contenders with ZooKeeper down.
###########################################################################

# Sessions that have used zklock before ZooKeeper goes away.
my @used;
for (1 .. 2)
{
	my ($s, $pid) = session();
	is($s->query_safe("SELECT zk_lock_try('warm') AND zk_lock_release('warm')"), 't',
		'a session takes and releases a lock before ZooKeeper goes away');
	push @used, [ $s, $pid ];
}
all_back('the warm-up', 'warm');

zk_stop($zk);
wait_until(sub { zk_status_of($node)->{state} ne 'connected' }, 30, 'the worker notices ZooKeeper is gone');

# Each contenders call takes a reserve slot while it waits (067 shows that a
# session cannot pile them up); the read blocks because
# ZooKeeper is away (zklock.connect_timeout is raised so that it does not
# give up by itself).
my $n_blocked = 0;
for my $case (
	[ 'first call, statement_timeout', 'timeout', 0 ],
	[ 'first call, pg_cancel_backend', 'cancel', 0 ],
	[ 'first call, pg_terminate_backend', 'terminate', 0 ],
	[ 'later call, pg_cancel_backend', 'cancel', 1 ],
	[ 'later call, pg_terminate_backend', 'terminate', 1 ])
{
	my ($label, $how, $later) = @$case;
	my ($s, $pid) = $later ? @{ shift @used } : session();
	$s->query_safe("SET zklock.connect_timeout = '300s'");
	$s->query_safe("SET statement_timeout = '3s'") if $how eq 'timeout';
	my $before = slots_used();
	# A read takes a reserve slot, which slots_used does not count: it is
	# seen waiting in pg_stat_activity instead.
	ok(start_blocking($s, "SELECT count(*) FROM zk_lock_contenders('x')",
			sub { sql("SELECT wait_event_type FROM pg_stat_activity WHERE pid = $pid") eq 'Extension' },
			"contenders ($label) waits for the worker"),
		"ZooKeeper down: contenders ($label) waits for the worker");
	interrupt($s, $pid, $how, "ZooKeeper down: contenders, $label", $before);
	$n_blocked++;
}
note "slots in use while ZooKeeper is down, after $n_blocked interrupted reads: " . slots_used();

zk_start_all($zk);
wait_until(sub { zk_status_of($node)->{state} eq 'connected' }, 60, 'the worker reconnects');
all_back('contenders interrupted while ZooKeeper was down', 'x');
is(sql("SELECT count(*) FROM zk_lock_contenders('x')"), '0', 'contenders works again');

###########################################################################
# (b) A waiting acquire cancelled, or ended by statement_timeout.
###########################################################################

for my $case (
	[ 'cancelled', 'cancel', [] ],
	[ 'statement_timeout', 'timeout', ["SET statement_timeout = '2s'"] ],
	[ 'cancelled (transaction scope)', 'cancel', ['BEGIN'], 'zk_lock_acquire_xact' ],
	[ 'cancelled (shared)', 'cancel', [], 'zk_lock_acquire_shared' ])
{
	my ($label, $how, $setup, $fn) = @$case;
	$fn //= 'zk_lock_acquire';
	my $h = holder('busy');
	my ($s, $pid) = session(@$setup);
	my $before = slots_used();
	ok(start_blocking($s, "SELECT $fn('busy')", waiting_on($pid, 'busy', 2), "the waiter ($label) queued"),
		"a waiting acquire ($label) is queued in ZooKeeper");
	interrupt($s, $pid, $how, "waiting acquire $label", $before);
	$h->quit;
	all_back("a waiting acquire $label", 'busy');
}

###########################################################################
# (c) A backend terminated while waiting, and while holding.
###########################################################################

{
	my $h = holder('busy');
	my ($s, $pid) = session();
	ok(start_blocking($s, "SELECT zk_lock_acquire('busy')", waiting_on($pid, 'busy', 2), 'the waiter queued'),
		'a waiter to terminate is queued');
	interrupt($s, $pid, 'terminate', 'terminated while waiting', undef);
	$h->quit;
	all_back('a waiter terminated', 'busy');
}

{
	my ($s, $pid) = session();
	is($s->query_safe("SELECT zk_lock_acquire('held-s') > 0 AND zk_lock_acquire_shared('held-r') > 0"),
		't', 'the victim holds a session lock, exclusive and shared');
	is($s->query_safe("BEGIN; SELECT zk_lock_acquire_xact('held-x') > 0"), 't',
		'... and a transaction lock in an open transaction');
	is(sql("SELECT count(*) FROM zk_locks WHERE pid = $pid AND state = 'held'"), '3', 'it holds three');
	interrupt($s, $pid, 'terminate', 'terminated while holding', undef);
	all_back('a holder terminated', qw(held-s held-r held-x));
}

###########################################################################
# (d) Timeouts and tries that find the lock busy.
###########################################################################

{
	my $h = holder('busy');
	my ($s, $pid) = session();
	for my $sql (
		"SELECT zk_lock_acquire('busy', '1s')",
		"SELECT zk_lock_acquire('busy', '0')",
		"SET lock_timeout = '1s'; SELECT zk_lock_acquire('busy')",
		"RESET lock_timeout; SELECT zk_lock_acquire_xact('busy', '500ms')",
		"SELECT zk_lock_acquire_shared('busy', '500ms')",
		"SELECT zk_lock_acquire_xact_shared('busy', '0')")
	{
		like(bg_result($s, $sql), qr/^ERROR 55P03: /, "busy: $sql fails with 55P03");
	}
	is(bg_result($s, "SELECT zk_lock_try('busy'), zk_lock_try_xact('busy'), zk_lock_try_shared('busy'), "
			. "zk_lock_try_xact_shared('busy')"),
		'f|f|f|f', 'busy: every kind of try says false');

	# More failed tries than the cluster has slots: a try that left its slot
	# behind would run the cluster out of slots.
	my $tries = $slots_total + 100;
	is(bg_result($s, "SELECT count(*) FILTER (WHERE zk_lock_try('busy')) FROM generate_series(1, $tries)"),
		'0', "busy: $tries tries in a row (the cluster has $slots_total slots) all say false, none fails");
	wait_until(sub { sql("SELECT count(*) FROM zk_locks WHERE pid = $pid") eq '0' }, 30,
		'the failed requests leave zk_locks');
	is(join(',', zk_ls($zk, '/zklock/busy')), zk_base(held_znode($node, $h->query_safe('SELECT pg_backend_pid()'), 'busy')),
		'only the holder\'s node is left for busy while the session that timed out is still there');
	$s->quit;
	$h->quit;
	all_back('timeouts and busy tries', 'busy');
}

###########################################################################
# (e) Errors part way through a lock set.
###########################################################################

{
	my $h = holder('set-m');
	my ($s, $pid) = session();
	like(bg_result($s, "SELECT zk_lock_acquire(ARRAY['set-z', 'set-m', 'set-a'], '1s')"),
		qr/^ERROR 55P03: /, 'a session set with one busy name times out');
	like(bg_result($s, "BEGIN; SELECT zk_lock_acquire_xact(ARRAY['set-a', 'set-m'], '1s')"),
		qr/^ERROR 55P03: /, 'a transaction set with one busy name times out');
	bg_result($s, 'ROLLBACK');
	like(bg_result($s, "BEGIN; SELECT zk_lock_acquire_xact('set-pre') > 0; SAVEPOINT sp; "
			. "SELECT zk_lock_acquire(ARRAY['set-a', 'set-m', 'set-z'], '500ms')"),
		qr/^ERROR 55P03: /, 'a set inside a savepoint times out');
	is(bg_result($s, 'ROLLBACK TO SAVEPOINT sp; SELECT zk_lock_token(\'set-pre\') > 0, zk_lock_token(\'set-a\') IS NULL'),
		't|t', 'after ROLLBACK TO SAVEPOINT the earlier hold stays and no lock of the set is held');
	bg_result($s, 'COMMIT');

	# A set cancelled while it waits for its second name, the first held.
	ok(start_blocking($s, "SELECT zk_lock_acquire(ARRAY['set-a', 'set-m', 'set-z'])", waiting_on($pid, 'set-m', 2),
			'the set waits for set-m'),
		'a set waits for its busy name, holding the one before it');
	is(lock_state($node, $pid, 'set-a'), 'held', '... holding set-a meanwhile');
	is(sql("SELECT pg_cancel_backend($pid)"), 't', 'the waiting set is cancelled');
	my ($out, $err) = bg_collect($s);
	like($err, qr/canceling statement due to user request/, 'the set was cancelled');
	wait_until(sub { sql("SELECT count(*) FROM zk_locks WHERE pid = $pid") eq '0' }, 30,
		'the set leaves zk_locks while its session lives');
	is(sql("SELECT count(*) FROM zk_locks WHERE pid = $pid"), '0', 'the session that failed its sets holds nothing');
	$s->quit;
	$h->quit;
	all_back('errors part way through lock sets', qw(set-a set-m set-z set-pre));
}

###########################################################################
# 2. Memory soak.
###########################################################################

# VmRSS and RssAnon of a process, in kB.
sub rss_of
{
	my ($pid) = @_;
	my $status = slurp_file("/proc/$pid/status");
	my %kb = map { /^(\w+):\s+(\d+) kB/ ? ($1 => $2) : () } split /\n/, $status;
	return { VmRSS => $kb{VmRSS}, RssAnon => $kb{RssAnon} };
}

{
	my $s = bg_session($node, timeout => 1800);
	my $backend = $s->query_safe('SELECT pg_backend_pid()');
	my $worker = worker_pid($node);
	ok($worker, "the worker's pid is $worker");
	my $loop = sub {
		my ($prefix, $n) = @_;
		return "DO \$\$ BEGIN FOR i IN 1..$n LOOP "
		  . "PERFORM zk_lock_acquire('$prefix' || i); PERFORM zk_lock_release('$prefix' || i); "
		  . "END LOOP; END \$\$";
	};
	$s->query_safe($loop->('warm-', $WARMUP_N));
	wait_until(sub { slots_used() == 0 }, 30, 'the warm-up releases are done');
	my %before = (backend => rss_of($backend), worker => rss_of($worker));

	my $t0 = time;
	$s->query_safe($loop->('soak-', $SOAK_N));
	my $elapsed = time - $t0;
	wait_until(sub { slots_used() == 0 }, 60, 'the soak releases are done');
	my %after = (backend => rss_of($backend), worker => rss_of($worker));

	diag(sprintf('soak: %d acquire/release cycles of distinct names in %.1f s (%.0f cycles/s)',
			$SOAK_N, $elapsed, $SOAK_N / $elapsed));
	for my $who (qw(backend worker))
	{
		diag(sprintf('soak: %s (pid %d) VmRSS %d -> %d kB (%+d), RssAnon %d -> %d kB (%+d)',
				$who, $who eq 'backend' ? $backend : $worker,
				$before{$who}{VmRSS}, $after{$who}{VmRSS}, $after{$who}{VmRSS} - $before{$who}{VmRSS},
				$before{$who}{RssAnon}, $after{$who}{RssAnon},
				$after{$who}{RssAnon} - $before{$who}{RssAnon}));
		cmp_ok($after{$who}{RssAnon} - $before{$who}{RssAnon}, '<', $MAX_GROWTH_KB,
			"soak: the $who\'s private memory (RssAnon) grew by less than 10 MB over $SOAK_N names");
	}
	is(sql("SELECT count(*) FROM zk_locks"), '0', 'soak: nothing left in zk_locks');
	$s->quit;
	all_back('the soak', map { "soak-$_" } 1, 50_000, $SOAK_N);
}

done_testing();
