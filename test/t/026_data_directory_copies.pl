# Copies of a data directory never act on the original's ZooKeeper session,
# while a crash restart of the same data directory still closes its dead
# incarnation's session at once.
#
# zklock's worker records its session (id and password) in zklock.session in
# the data directory, so that after a crash restart the new worker can close
# the dead incarnation's session and free its locks now.  Every copy of the
# data directory carries that file; the copy must recognise that the file is
# not its own, log that it ignores it and start a session of its own,
# instead of closing the original's live session (which would take every
# lock of the original away).
#
# (1) A standby made with pg_basebackup -R from primary A, started on the
#     same host while a session of A holds a session-scope lock and an open
#     transaction of A holds a transaction-scope lock.  The backup did carry
#     zklock.session.  The standby's worker connects with its own session;
#     A's session id is unchanged, A's nodes are still in ZooKeeper with A's
#     session as ephemeralOwner, A's backends still hold, a third cluster C
#     cannot take the locks, and A's transaction COMMITs (a commit after a
#     loss fails with ZK002).  zklock works on the hot standby: a read-only
#     session there takes a lock that A then cannot take.  The standby's log
#     says it ignored the recorded session and never closed one.
# (2) A new pg_basebackup of A (without -R), taken while other sessions of A
#     hold a session-scope and a transaction-scope lock, restored as an
#     independent primary (a file-level restore; it even has A's system
#     identifier): the same checks.
# (3) A cleanly stopped cluster D copied with cp -a into E, both started
#     with E carrying D's live zklock.session: each works and takes a lock
#     the other cannot take, the session ids differ and stay the same, no
#     lock is lost.
# (4) pg_ctl -m immediate stop and start of one data directory (30 s session
#     timeout, lock held, a waiter of C queued with a 20 s timeout): the
#     restarted worker logs that it closed the previous incarnation's
#     session, whose node is gone as soon as the new worker is connected,
#     and C's waiter is granted before its 20 s timeout.
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::RealBin/../lib";
use ZklockTest;
use Test::More;
use File::Copy qw(copy);
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Time::HiRes qw(time);

my $IGNORES = qr/ignoring the ZooKeeper session recorded in "zklock\.session"/;
my $CLOSED = qr/closed ZooKeeper session/;

# Nodes this file builds from copies are not known to ZklockTest, whose END
# stops its own nodes and then ZooKeeper; this END runs before it (END blocks
# run in reverse order of compilation), so these are stopped first too.
my @copies;
END
{
	my $exit_code = $?;
	eval { $_->teardown_node; 1 } for @copies;
	$? = $exit_code;
}

my $zk = zk_start(1);
# A must serve pg_basebackup and a streaming standby; ZklockTest's node
# starts from Cluster.pm's wal_level = minimal, which these lines override.
my $a = zklock_node('a', $zk,
	conf => [ 'wal_level = replica', 'max_wal_senders = 4', 'hot_standby = on' ]);
my $c = zklock_node('c', $zk);

sub wait_connected
{
	my ($node, $what) = @_;
	local $Test::Builder::Level = $Test::Builder::Level + 1;
	return wait_until(sub { zk_status_of($node)->{state} eq 'connected' }, 30,
		"$what\'s zklock worker to be connected");
}

sub sysid
{
	my ($node) = @_;
	return $node->safe_psql('postgres', 'SELECT system_identifier FROM pg_control_system()');
}

# The holds of one cluster: name => { pid, znode }.  Checks that the
# cluster's session is still $session, that each hold's node still exists
# in ZooKeeper and belongs to that session, that the backend still holds,
# that the cluster's count of lost locks is still $lost and that cluster
# $other cannot take the lock.
sub check_undisturbed
{
	my ($when, $node, $session, $lost, $holds, $other) = @_;
	local $Test::Builder::Level = $Test::Builder::Level + 1;
	my $who = uc $node->name;
	my $ok = 1;
	my $st = zk_status_of($node);
	$ok &= is($st->{session_id}, $session, "$when: $who still runs ZooKeeper session $session");
	$ok &= is($st->{state}, 'connected', "$when: $who\'s worker is connected");
	$ok &= is($st->{lost}, $lost, "$when: $who counted no lost lock");
	for my $name (sort keys %$holds)
	{
		my $h = $holds->{$name};
		my $stat = zk_stat($zk, $h->{znode});
		$ok &= ok(defined $stat, "$when: $who\'s node of $name ($h->{znode}) is still in ZooKeeper");
		$ok &= is($stat && $stat->{ephemeralOwner}, $session,
			"$when: ... and still belongs to $who\'s session");
		$ok &= is(lock_state($node, $h->{pid}, $name), 'held', "$when: $who\'s backend still holds $name");
		$ok &= is($other->safe_psql('postgres', "SELECT zk_lock_try('$name')"), 'f',
			"$when: " . uc($other->name) . " cannot take $name");
	}
	diag_locks("$when: $who disturbed", $zk, [ sort keys %$holds ], $node) unless $ok;
	return $ok;
}

# A hold taken by background session $s of $node; returns { pid, znode }.
sub hold
{
	my ($node, $s, $name, $sql) = @_;
	local $Test::Builder::Level = $Test::Builder::Level + 1;
	my $pid = $s->query_safe('SELECT pg_backend_pid()');
	is($s->query_safe($sql), 't', uc($node->name) . " takes $name");
	return { pid => $pid, znode => held_znode($node, $pid, $name) };
}

# Checks on the log of copy $node (called $who), from its first start.
sub check_copy_log
{
	my ($node, $who, $orig_session) = @_;
	local $Test::Builder::Level = $Test::Builder::Level + 1;
	my $log = slurp_file($node->logfile);
	like($log, $IGNORES, "$who\'s log says it ignored the session recorded in zklock.session");
	unlike($log, $CLOSED, "$who\'s worker closed no ZooKeeper session");
	unlike($log, qr/reattaching to ZooKeeper session \Q$orig_session\E/,
		"$who\'s worker did not reattach to the original's session $orig_session");
	return;
}

# ---------------------------------------------------------------------
# (1) A standby made with pg_basebackup -R while A holds locks.
# ---------------------------------------------------------------------
my $a_sess = bg_session($a);
my $a_xact = bg_session($a);
my %a_holds = (
	'a-session' => hold($a, $a_sess, 'a-session', "SELECT zk_lock_acquire('a-session', '10s') > 0"),
	'a-xact' => hold($a, $a_xact, 'a-xact', "BEGIN; SELECT zk_lock_acquire_xact('a-xact', '10s') > 0"));
my $a_session = zk_status_of($a)->{session_id};
like($a_session, qr/^0x[0-9a-f]+$/, "A runs ZooKeeper session $a_session");
for my $name (sort keys %a_holds)
{
	is(zk_stat($zk, $a_holds{$name}{znode})->{ephemeralOwner}, $a_session, "A's node of $name belongs to A's session");
}
ok(-s $a->data_dir . '/zklock.session', "A's worker recorded its session in zklock.session");
my $a_lost = zk_status_of($a)->{lost};
my $a_log_offset = -s $a->logfile;

$a->backup('b1', backup_options => ['-R']);
ok(-f $a->backup_dir . '/b1/zklock.session', 'pg_basebackup -R copied zklock.session into the backup');

my $standby = PostgreSQL::Test::Cluster->new('standby');
push @copies, $standby;
$standby->init_from_backup($a, 'b1', has_streaming => 1);
ok(-f $standby->data_dir . '/zklock.session',
	"the standby's data directory holds A's zklock.session before the standby starts");
# postgresql.conf is part of the backup, so the zklock settings came along.
$standby->append_conf('postgresql.conf',
	"shared_preload_libraries = 'zklock'\nzklock.hosts = '$zk->{connect}'\n")
  unless slurp_file($standby->data_dir . '/postgresql.conf') =~ /^zklock\.hosts/m;
$standby->start;
wait_connected($standby, 'the standby');
is($standby->safe_psql('postgres', 'SELECT pg_is_in_recovery()'), 't', 'the standby is in recovery');
my $sb_session = zk_status_of($standby)->{session_id};
like($sb_session, qr/^0x[0-9a-f]+$/, "the standby's worker runs ZooKeeper session $sb_session");
isnt($sb_session, $a_session, "the standby's session is not A's");

# Had the standby's worker closed A's session, it would have done so before
# opening its own: A's nodes would already be gone from ZooKeeper now.
check_undisturbed('(1) the standby connected', $a, $a_session, $a_lost, \%a_holds, $c);

# zklock on the hot standby: a read-only session takes a session-scope lock.
my $sb = bg_session($standby);
is($sb->query_safe('SHOW transaction_read_only'), 'on', "the standby's session is read-only");
my $sb_hold = hold($standby, $sb, 'standby-lock', "SELECT zk_lock_acquire('standby-lock', '10s') > 0");
is(zk_stat($zk, $sb_hold->{znode})->{ephemeralOwner}, $sb_session,
	"the standby's node of standby-lock belongs to the standby's session");
is($a->safe_psql('postgres', "SELECT zk_lock_try('standby-lock')"), 'f',
	'A cannot take standby-lock while the standby holds it');
is($sb->query_safe("SELECT zk_lock_release('standby-lock')"), 't', 'the standby releases standby-lock');
wait_until(sub { $a->safe_psql('postgres', "SELECT zk_lock_try('standby-lock')") eq 't' }, 30,
	'A to take standby-lock once the standby released it');
$sb->quit;

check_undisturbed('(1) after the standby used its lock', $a, $a_session, $a_lost, \%a_holds, $c);
is(zk_status_of($standby)->{session_id}, $sb_session, "(1) the standby still runs its session $sb_session");

# A COMMIT after a loss fails with ZK002: a commit proves nothing was lost.
$a_xact->{stderr} = '';
my (undef, $failed) = $a_xact->query('COMMIT');
ok(!$failed && $a_xact->{stderr} eq '', "(1) A's transaction holding a-xact commits")
  or diag("COMMIT: $a_xact->{stderr}");
$a_xact->{stderr} = '';
check_copy_log($standby, 'the standby', $a_session);
unlike(slurp_file($a->logfile, $a_log_offset), qr/session \Q$a_session\E (ended|suspended)/,
	"(1) A's log shows no end or suspension of its session");
$standby->stop;
$a_xact->quit;
$a_sess->quit;

# ---------------------------------------------------------------------
# (2) A new pg_basebackup restored as an independent primary.
# ---------------------------------------------------------------------
# New holds and a new backup, so that this case does not depend on (1).
$a_sess = bg_session($a);
$a_xact = bg_session($a);
%a_holds = (
	'a2-session' => hold($a, $a_sess, 'a2-session', "SELECT zk_lock_acquire('a2-session', '10s') > 0"),
	'a2-xact' => hold($a, $a_xact, 'a2-xact', "BEGIN; SELECT zk_lock_acquire_xact('a2-xact', '10s') > 0"));
$a_session = zk_status_of($a)->{session_id};
$a_lost = zk_status_of($a)->{lost};    # counts what (1) may have lost
for my $name (sort keys %a_holds)
{
	is(zk_stat($zk, $a_holds{$name}{znode})->{ephemeralOwner}, $a_session, "A's node of $name belongs to A's session");
}
$a_log_offset = -s $a->logfile;
$a->backup('b2');
ok(-f $a->backup_dir . '/b2/zklock.session', 'pg_basebackup copied zklock.session into the backup');
my $restored = PostgreSQL::Test::Cluster->new('restored');
push @copies, $restored;
$restored->init_from_backup($a, 'b2');
ok(-f $restored->data_dir . '/zklock.session',
	"the restored data directory holds A's zklock.session before it starts");
$restored->start;
wait_connected($restored, 'the restored cluster');
is($restored->safe_psql('postgres', 'SELECT pg_is_in_recovery()'), 'f', 'the restored cluster is a primary');
is(sysid($restored), sysid($a), "the restored cluster has A's system identifier");
my $r_session = zk_status_of($restored)->{session_id};
like($r_session, qr/^0x[0-9a-f]+$/, "the restored cluster's worker runs ZooKeeper session $r_session");
isnt($r_session, $a_session, "the restored cluster's session is not A's");
check_undisturbed('(2) the restored cluster connected', $a, $a_session, $a_lost, \%a_holds, $c);

my $rs = bg_session($restored);
my $r_hold = hold($restored, $rs, 'restored-lock', "SELECT zk_lock_acquire('restored-lock', '10s') > 0");
is(zk_stat($zk, $r_hold->{znode})->{ephemeralOwner}, $r_session,
	"the restored cluster's node of restored-lock belongs to its session");
is($a->safe_psql('postgres', "SELECT zk_lock_try('restored-lock')"), 'f',
	'A cannot take restored-lock while the restored cluster holds it');
is($restored->safe_psql('postgres', "SELECT zk_lock_try('a2-session')"), 'f',
	'the restored cluster cannot take a2-session while A holds it');

check_undisturbed('(2) after the restored cluster used its lock', $a, $a_session, $a_lost, \%a_holds, $c);
is(zk_status_of($restored)->{session_id}, $r_session, "(2) the restored cluster still runs its session $r_session");
$a_xact->{stderr} = '';
(undef, $failed) = $a_xact->query('COMMIT');
ok(!$failed && $a_xact->{stderr} eq '', "(2) A's transaction holding a2-xact commits")
  or diag("COMMIT: $a_xact->{stderr}");
$a_xact->{stderr} = '';
check_copy_log($restored, 'the restored cluster', $a_session);
unlike(slurp_file($a->logfile, $a_log_offset), qr/session \Q$a_session\E (ended|suspended)/,
	"(2) A's log shows no end or suspension of its session");
$rs->quit;
$restored->stop;
$a_xact->quit;
$a_sess->quit;

# ---------------------------------------------------------------------
# (3) A cold copy (cp -a) of a cleanly stopped cluster; both started.
# ---------------------------------------------------------------------
my $d = zklock_node('d', $zk);
$d->stop;
my $clean_stop_left_file = -e $d->data_dir . '/zklock.session' ? 1 : 0;
note "after D's clean stop, zklock.session is " . ($clean_stop_left_file ? 'present' : 'absent');
my $e = PostgreSQL::Test::Cluster->new('e');
push @copies, $e;
PostgreSQL::Test::Utils::system_or_bail('cp', '-a', $d->data_dir, $e->data_dir);
$e->append_conf('postgresql.conf', 'port = ' . $e->port);

$d->start;
wait_connected($d, 'D');
my $d_log_offset = -s $d->logfile;
my $d_session = zk_status_of($d)->{session_id};
my $ds = bg_session($d);
my %d_holds = ('d-lock' => hold($d, $ds, 'd-lock', "SELECT zk_lock_acquire('d-lock', '10s') > 0"));
is(zk_stat($zk, $d_holds{'d-lock'}{znode})->{ephemeralOwner}, $d_session, "D's node of d-lock belongs to D's session");

# A clean stop closes the session and may remove the file, and a file it left
# names a session that is closed already.  A copy taken while the original
# runs (a volume snapshot, a copy of a running server's files) carries the
# file of the live session: put D's live zklock.session into the copy, so
# that E starts with a record of a session that can really be harmed.
copy($d->data_dir . '/zklock.session', $e->data_dir . '/zklock.session')
  or BAIL_OUT("could not copy D's zklock.session into E: $!");
ok(-s $e->data_dir . '/zklock.session', "E's data directory holds D's live zklock.session before E starts");

$e->start;
wait_connected($e, 'E');
is(sysid($e), sysid($d), "E has D's system identifier");
my $e_session = zk_status_of($e)->{session_id};
like($e_session, qr/^0x[0-9a-f]+$/, "E's worker runs ZooKeeper session $e_session");
isnt($e_session, $d_session, "E's session is not D's");
check_undisturbed('(3) E connected', $d, $d_session, '0', \%d_holds, $c);

my $es = bg_session($e);
my %e_holds = ('e-lock' => hold($e, $es, 'e-lock', "SELECT zk_lock_acquire('e-lock', '10s') > 0"));
is(zk_stat($zk, $e_holds{'e-lock'}{znode})->{ephemeralOwner}, $e_session, "E's node of e-lock belongs to E's session");
check_undisturbed('(3) E holds e-lock', $e, $e_session, '0', \%e_holds, $d);
check_undisturbed('(3) E holds e-lock', $d, $d_session, '0', \%d_holds, $e);
check_copy_log($e, 'E', $d_session);
unlike(slurp_file($d->logfile, $d_log_offset), qr/session \Q$d_session\E (ended|suspended)/,
	"(3) D's log shows no end or suspension of its session");
$es->query_safe("SELECT zk_lock_release('e-lock')");
$ds->query_safe("SELECT zk_lock_release('d-lock')");
$es->quit;
$ds->quit;
$e->stop;
$d->stop;

# ---------------------------------------------------------------------
# (4) pg_ctl -m immediate stop and start: the dead incarnation's session is
#     closed at once.
# ---------------------------------------------------------------------
my $f = zklock_node('f', $zk, session_timeout => '30s');
is(zk_status_of($f)->{negotiated_timeout}, '30000', 'F negotiated a 30 s session timeout');
my $f_session = zk_status_of($f)->{session_id};
my $fs = bg_session($f);
my $f_hold = hold($f, $fs, 'f-lock', "SELECT zk_lock_acquire('f-lock', '10s') > 0");
is(zk_stat($zk, $f_hold->{znode})->{ephemeralOwner}, $f_session, "F's node of f-lock belongs to F's session");
my $waiter = queue_waiter($c, $zk, 'f-lock', '20s');

my $f_log_offset = -s $f->logfile;
my $t_stop = time;
$f->stop('immediate');
ok(-s $f->data_dir . '/zklock.session', 'the immediate stop left zklock.session behind');
$f->start;
wait_connected($f, 'the restarted F');
my $f_log = slurp_file($f->logfile, $f_log_offset);
like($f_log, qr/closed ZooKeeper session \Q$f_session\E of the previous server incarnation/,
	"the restarted F's worker closed the previous incarnation's session $f_session");
unlike($f_log, $IGNORES, 'the restarted F did not ignore its own zklock.session');
ok(!defined zk_stat($zk, $f_hold->{znode}),
	"F's old node of f-lock is gone from ZooKeeper once the restarted worker is connected (session timeout 30 s)")
  or diag_locks('after the restart of F', $zk, ['f-lock'], $f, $c);
isnt(zk_status_of($f)->{session_id}, $f_session, 'the restarted F runs a new session');
my ($at, $out, $err) = waiter_grant($waiter);
ok(defined $at, "C's waiter got f-lock before its 20 s timeout (F's session timeout is 30 s)")
  or diag("C's waiter: $out $err");
diag(sprintf("immediate stop and start: C's waiter got f-lock %.2f s after the stop", $at - $t_stop))
  if defined $at;
is(join(',', zk_ls($zk, '/zklock/f-lock')), zk_base(held_znode($c, $waiter->{pid}, 'f-lock')),
	"only C's node is left for f-lock");
eval { $fs->quit; 1 };
$waiter->{s}->query_safe("SELECT zk_lock_release('f-lock')") if defined $at;
$waiter->{s}->quit;
zk_wait_empty($zk, '/zklock/f-lock', 'after C released f-lock');

done_testing();
