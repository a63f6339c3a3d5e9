# PostgreSQL nodes with zklock for the tests, and looking at them:
# zklock_node (a started PostgreSQL::Test::Cluster with zklock preloaded and
# the extension created), bg_session, sql_result and bg_result, the zklock
# worker as a process (worker_pid, worker_pid_os, proc_state), what zklock
# shows (zk_status_of, lock_state, held_znode, committed, diag_locks),
# waiters (queue_waiter, bg_collect, waiter_grant), and the check, made when
# the test calls done_testing, that no node's server log tells of a crash
# the test did not declare (expect_in_log, expect_crash_restart).  Nodes are
# stopped at exit by ZklockTest::Cleanup.
package ZklockTest::Node;

use strict;
use warnings FATAL => 'all';

use Carp;
use Exporter 'import';
use File::Basename qw(basename);
use Scalar::Util qw(refaddr);
use Test2::API ();
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use ZklockTest::Cleanup qw($owner_pid @nodes);
use ZklockTest::Poll;
use ZklockTest::ZooKeeper;

our @EXPORT = qw(
  zklock_node bg_session sql_result bg_result
  worker_pid worker_pid_os proc_state freeze_worker thaw_worker
  zk_status_of lock_state committed queue_waiter bg_start bg_collect waiter_grant held_znode diag_locks
  sqlstate_of sql_sqlstate bg_sqlstate
  expect_in_log expect_crash_restart zklock_wait_event fdw_loop
);

=head1 PostgreSQL nodes

=over

=item zklock_node($name, $zk, %opts)

A started PostgreSQL::Test::Cluster node with zklock preloaded, pointed at
$zk, and C<CREATE EXTENSION zklock> done in database postgres.  Options:
session_timeout (default '10s'), hosts (default $zk->{connect}), root,
conf (extra postgresql.conf text or array ref of lines), start => 0 (only
init and configure), extension => 0 (skip CREATE EXTENSION), install_path
(the PostgreSQL installation to run, default the suite's), init (a hash
ref of options for init).

=cut

sub zklock_node
{
	my ($name, $zk, %opts) = @_;
	my $node = PostgreSQL::Test::Cluster->new($name,
		defined $opts{install_path} ? (install_path => $opts{install_path}) : ());
	push @nodes, $node;
	$node->init(%{ $opts{init} // {} });

	my $hosts = $opts{hosts} // $zk->{connect};
	my $timeout = $opts{session_timeout} // '10s';
	my $conf = "shared_preload_libraries = 'zklock'\n"
	  . "zklock.hosts = '$hosts'\n"
	  . "zklock.session_timeout = '$timeout'\n";
	$conf .= "zklock.root = '$opts{root}'\n" if defined $opts{root};
	if (defined $opts{conf})
	{
		$conf .= ref $opts{conf} ? join("\n", @{ $opts{conf} }) : $opts{conf};
	}
	$node->append_conf('postgresql.conf', $conf);

	return $node if defined $opts{start} && !$opts{start};
	$node->start;
	$node->safe_psql('postgres', 'CREATE EXTENSION zklock')
	  unless defined $opts{extension} && !$opts{extension};
	return $node;
}

=item fdw_loop($node, $dbname)

A database $dbname of $node made for postgres_fdw to reach, and in
database postgres the extension postgres_fdw, its server C<loop> pointing
at $dbname of the same cluster and the current user's mapping: the tests
of the commit path create their own tables on either side.

=cut

sub fdw_loop
{
	my ($node, $dbname) = @_;
	my ($host, $port) = ($node->host, $node->port);
	$node->safe_psql('postgres', "CREATE DATABASE $dbname");
	$node->safe_psql(
		'postgres', qq{
CREATE EXTENSION postgres_fdw;
CREATE SERVER loop FOREIGN DATA WRAPPER postgres_fdw OPTIONS (host '$host', port '$port', dbname '$dbname');
CREATE USER MAPPING FOR CURRENT_USER SERVER loop;
});
	return;
}

=item bg_session($node, %opts)

A PostgreSQL::Test::BackgroundPsql session on database postgres (or
$opts{dbname}) that keeps going after SQL errors, so a test can check them:
C<< my ($out, $failed) = $s->query($sql) >>, C<< $s->{stderr} >>.  Call
C<< $s->quit >> when done.  Other %opts go to background_psql.

=cut

sub bg_session
{
	my ($node, %opts) = @_;
	my $db = delete $opts{dbname} // 'postgres';
	$opts{on_error_stop} //= 0;
	return $node->background_psql($db, %opts);
}

=back

=head1 Small helpers of the interop tests

=over

=item sql_result($node, $sql) / bg_result($session, $sql)

The output of $sql, in a fresh session of $node that ends at once
(releasing what it took), or in background session $session.  When $sql
fails, the result is "ERROR SQLSTATE: message" (the first error's), which
no query's output can be taken for; the session's psql reports errors
verbosely from then on (\set VERBOSITY verbose), so that the SQLSTATE is
known.

=item sqlstate_of($stderr)

The SQLSTATE of the first ERROR or FATAL in psql's verbose stderr, or 'ok'.

=item sql_sqlstate($node, $sql) / bg_sqlstate($session, $sql)

The SQLSTATE $sql ends with ('ok' when it raised no error), in a fresh
session of $node or in background session $session (which then reports
errors verbosely); bg_sqlstate in list context also returns the stderr.

=back

=cut

sub sqlstate_of
{
	my ($err) = @_;
	return $err =~ /(?:ERROR|FATAL):\s+([0-9A-Z]{5}):/ ? $1 : 'ok';
}

sub sql_sqlstate
{
	my ($node, $sql) = @_;
	my ($ret, $out, $err) = $node->psql('postgres', "\\set VERBOSITY verbose\n$sql");
	my $st = sqlstate_of($err);
	return $st eq 'ok' && $ret != 0 ? "failed: $err" : $st;
}

sub bg_sqlstate
{
	my ($s, $sql) = @_;
	$s->{stderr} = '';
	$s->query("\\set VERBOSITY verbose\n$sql");
	my $err = $s->{stderr};
	$s->{stderr} = '';
	return wantarray ? (sqlstate_of($err), $err) : sqlstate_of($err);
}

# "ERROR SQLSTATE: message" of the first error in psql's verbose stderr.
sub _error_result
{
	my ($err) = @_;
	return "ERROR $1: $2" if $err =~ /(?:ERROR|FATAL|PANIC):\s+([0-9A-Z]{5}): ([^\n]*)/;
	return 'ERROR (no SQLSTATE): ' . ($err =~ s/\s+$//r);
}

sub sql_result
{
	my ($node, $sql) = @_;
	my ($ret, $out, $err) = $node->psql('postgres', "\\set VERBOSITY verbose\n$sql");
	return $ret == 0 ? $out : _error_result($err);
}

sub bg_result
{
	my ($s, $sql) = @_;
	$s->{stderr} = '';
	my ($out, $failed) = $s->query("\\set VERBOSITY verbose\n$sql");
	return $failed ? _error_result($s->{stderr}) : $out;
}


=head1 The zklock worker as a process

=over

=item worker_pid_os($node)

The pid of the postmaster's child titled "zklock worker", from /proc; ''
when there is none (or the cluster is down).

=item worker_pid($node)

pg_stat_activity's pid of the worker if the cluster answers and shows it,
else worker_pid_os's.

=item proc_state($pid)

The process state letter from /proc (R, S, T for stopped, ...), '' when
the process is gone.

=item freeze_worker($pid), thaw_worker($pid)

Stop the worker with SIGSTOP (and wait until /proc says it is stopped), so
that the requests posted meanwhile reach it in one pass; let it go on with
SIGCONT.  A worker still frozen when the test ends is let go then.

=back

=cut

sub worker_pid_os
{
	my ($node) = @_;
	my $pm = $node->{_pid} // return '';
	for my $stat (glob '/proc/[0-9]*/stat')
	{
		my ($pid) = $stat =~ m{/proc/(\d+)/stat};
		open(my $fh, '<', $stat) or next;
		my $line = <$fh> // '';
		close $fh;
		my ($ppid) = $line =~ /\)\s+\S+\s+(\d+)/ or next;
		next unless $ppid == $pm;
		open(my $ch, '<', "/proc/$pid/cmdline") or next;
		my $cmd = do { local $/; <$ch> } // '';
		close $ch;
		return $pid if $cmd =~ /zklock worker/;
	}
	return '';
}

sub worker_pid
{
	my ($node) = @_;
	my ($ret, $pid) = $node->psql('postgres',
		"SELECT pid FROM pg_stat_activity WHERE backend_type = 'zklock worker'");
	return $pid if $ret == 0 && defined $pid && $pid ne '';
	return worker_pid_os($node);
}

my %frozen;
END { kill('CONT', $_) for keys %frozen; }

sub freeze_worker
{
	my ($pid) = @_;
	kill('STOP', $pid) or die "SIGSTOP: $!";
	$frozen{$pid} = 1;
	wait_until(sub { proc_state($pid) eq 'T' }, 5, 'the worker is stopped');
	return;
}

sub thaw_worker
{
	my ($pid) = @_;
	kill('CONT', $pid);
	delete $frozen{$pid};
	return;
}

sub proc_state
{
	my ($pid) = @_;
	open(my $fh, '<', "/proc/$pid/stat") or return '';
	my $line = <$fh> // '';
	close $fh;
	return $line =~ /\)\s+(\S)/ ? $1 : '';
}


=head1 Small helpers of the fault tests

=over

=item zk_status_of($node)

Every column of $node's zk_status() as a hash ref (state, session_id,
negotiated_timeout, lost, ...), as psql prints them; a NULL reads as ''.

=item lock_state($node, $pid, $name)

The state zk_locks shows for lock $name of backend $pid of $node ('held',
'waiting', 'lost', ...), or 'none' when it has no such entry.

=item committed($node, $tag)

How many rows of table work in $node carry tag $tag (as text).

=item queue_waiter($node, $zk, $name, $timeout)

Start a session of $node that waits for lock $name (C<$timeout> an interval
such as '20s') and wait until zk_locks shows it waiting and the lock's
directory in ZooKeeper has two children (the holder and this waiter); a
test assertion when that does not happen within 15 s.  The session prints
C<granted|t|epoch of the grant> once granted: read it with
C<< $w->{s}->query("SELECT 'sync'") >>.  Returns
C<< { s => $session, pid => $backend_pid } >>.

=item bg_collect($session)

Wait for what background session $session is running, and return what it
printed since its last query and its errors: C<($out, $err)>.  Its stderr
is cleared.

=item waiter_grant($waiter)

Wait for a waiter started by queue_waiter and return C<($at, $out, $err)>:
$at is the epoch at which it was granted (undef if it was not), $out and
$err as bg_collect's.

=item held_znode($node, $pid, $name)

The znode by which backend $pid of $node holds lock $name, as zk_locks
shows it; '' when it does not hold it.

=item diag_locks($what, $zk, \@names, @nodes)

For a failed test: diag the children of each lock's directory in ZooKeeper
and the zk_locks of each node, headed by $what.

=item zklock_wait_event($node, $name)

What pg_stat_activity.wait_event shows on $node for zklock's wait $name
(ZklockAcquire, ZklockSession, ZklockCommit, ZklockWorkerMain): $name from
PostgreSQL 17 on (custom wait events), 'Extension' before.

=back

=cut

sub zk_status_of
{
	my ($node) = @_;
	# Expanded unaligned output: one "column|value" line per column.
	my $out = $node->safe_psql('postgres', 'SELECT * FROM zk_status()', extra_params => ['-x']);
	return { map { split /\|/, $_, 2 } split /\n/, $out };
}

sub lock_state
{
	my ($node, $pid, $name) = @_;
	return $node->safe_psql('postgres',
		"SELECT coalesce((SELECT state FROM zk_locks WHERE pid = $pid AND name = '$name'), 'none')");
}

sub zklock_wait_event
{
	my ($node, $name) = @_;
	return $node->pg_version >= 17 ? $name : 'Extension';
}

sub committed
{
	my ($node, $tag) = @_;
	return $node->safe_psql('postgres', "SELECT count(*) FROM work WHERE tag = '$tag'");
}

sub queue_waiter
{
	my ($node, $zk, $name, $timeout) = @_;
	local $Test::Builder::Level = $Test::Builder::Level + 1;
	my $s = bg_session($node);
	my $pid = $s->query_safe('SELECT pg_backend_pid()');
	$s->query_until(qr/waiting\n/,
		"\\echo waiting\nSELECT 'granted', zk_lock_acquire('$name', '$timeout') > 0, extract(epoch FROM clock_timestamp());\n");
	wait_until(sub { lock_state($node, $pid, $name) eq 'waiting' && zk_ls($zk, "/zklock/$name") == 2 },
		15, uc($node->name) . " queued for $name");
	return { s => $s, pid => $pid };
}

# query_until returns all the output it read, so what a fast statement
# printed right after the banner would be lost: kept for bg_collect.
sub bg_start
{
	my ($s, $sql) = @_;
	my $got = $s->query_until(qr/started\n/, "\\echo started\n$sql;\n");
	$s->{zkl_early} = ($got =~ /started\n(.*)\z/s) ? $1 : '';
	return;
}

sub bg_collect
{
	my ($s) = @_;
	my ($out) = $s->query("SELECT 'sync'");
	$out = (delete $s->{zkl_early} // '') . $out;
	my $err = $s->{stderr};
	$s->{stderr} = '';
	return ($out, $err);
}

sub waiter_grant
{
	my ($w) = @_;
	my ($out, $err) = bg_collect($w->{s});
	my ($at) = $out =~ /^granted\|t\|([\d.]+)$/m;
	return ($at, $out, $err);
}

sub held_znode
{
	my ($node, $pid, $name) = @_;
	return $node->safe_psql('postgres',
		"SELECT coalesce((SELECT znode FROM zk_locks WHERE pid = $pid AND name = '$name' AND state = 'held'), '')");
}

sub diag_locks
{
	my ($what, $zk, $names, @nodes) = @_;
	diag("$what: ZooKeeper children of /zklock/$_: " . join(', ', zk_ls($zk, "/zklock/$_"))) for @$names;
	for my $node (@nodes)
	{
		my ($ret, $out) = $node->psql('postgres', 'SELECT pid, name, scope, state, znode FROM zk_locks ORDER BY pid');
		diag('zk_locks of ' . $node->name . ":\n$out");
	}
	return;
}

=head1 Crashes in the server logs

When the test calls done_testing (or, should it die first, at exit), every
node made by zklock_node gets one assertion, "no crash in the log of node
NAME": none of its server logs (the current one and, should the log have
been rotated, the earlier ones) has a line telling of a crash (a process
"terminated by signal", a PANIC, an assertion's TRAP, the postmaster's
"terminating any other active server processes" and "all server processes
terminated; reinitializing") that the test did not declare.  A failure
shows the lines.  An immediate shutdown is not a crash.  The sessions of
ZklockChecker live through crash restarts; this check is what still sees
those restarts.

A test that kills processes on purpose declares what that logs:

=over

=item expect_in_log($node, qr/pattern/, $count)

Lines of $node's server logs that match the pattern are expected: none of
them is taken for a crash.  $count is undef (any number, none included), a
number (exactly that many matching lines, counted over all lines of the
logs) or C<[$min, $max]> ($max undef: no upper bound); a count not met
fails the node's assertion.

=item expect_crash_restart($node, qr/cause/, $count)

$count crash restarts of $node, each caused by a process whose death the
postmaster logs in a line matching the cause (e.g. C<qr/server process
\(PID $pid\) was terminated by signal 9: Killed/>): expect_in_log of the
cause, of "terminating any other active server processes" and of "all
server processes terminated; reinitializing", $count times each.

=back

=cut

# A line that tells of a crash.
my $CRASH_LINE = qr/terminated by signal|\bPANIC:|\bTRAP:|all server processes terminated; reinitializing|terminating any other active server processes/;

# What each node's logs are expected to show: refaddr of the node =>
# [ { re => qr//, count => undef, n or [min, max], at => 'file line n' } ].
my %expected;

sub _expect
{
	my ($node, $re, $count, $at) = @_;
	croak "expect_in_log: not a node of this test (at $at)"
	  unless ref $node
	  && grep { refaddr($_) == refaddr($node) } @nodes, @PostgreSQL::Test::Cluster::all_nodes;
	croak "expect_in_log: the pattern must be a qr// (at $at)" unless ref $re eq 'Regexp';
	croak "expect_in_log: the count must be undef, a number or [min, max] (at $at)"
	  unless !defined $count
	  || (ref $count eq 'ARRAY' && @$count == 2)
	  || (!ref $count && $count =~ /^\d+$/);
	push @{ $expected{ refaddr($node) } }, { re => $re, count => $count, at => $at };
	return;
}

sub expect_in_log
{
	my ($node, $re, $count) = @_;
	_expect($node, $re, $count, sprintf('%s line %d', (caller)[ 1, 2 ]));
	return;
}

sub expect_crash_restart
{
	my ($node, $cause, $count) = @_;
	my $at = sprintf('%s line %d', (caller)[ 1, 2 ]);
	_expect($node, $_, $count, $at)
	  for ($cause, qr/terminating any other active server processes/,
		qr/all server processes terminated; reinitializing/);
	return;
}

# The server logs of $node, oldest first: Cluster.pm writes to
# $node->logfile, which rotate_logfile moves on from <base>.log to
# <base>_1.log, <base>_2.log, ...
sub _server_logs
{
	my ($node) = @_;
	my @logs;
	if (defined $node->{_logfile_base})
	{
		push @logs, "$node->{_logfile_base}.log",
		  map { "$node->{_logfile_base}_$_.log" } 1 .. ($node->{_logfile_generation} // 0);
	}
	push @logs, $node->logfile;
	my %seen;
	return grep { !$seen{$_}++ && -f $_ } @logs;
}

# One assertion on $node's logs.
sub _check_node_log
{
	my ($node) = @_;
	local $Test::Builder::Level = $Test::Builder::Level + 1;
	my $name = $node->name;
	my @expect = @{ $expected{ refaddr($node) } // [] };
	my @seen = (0) x @expect;
	my @crashes;
	for my $log (_server_logs($node))
	{
		open(my $fh, '<', $log) or croak "could not read $log: $!";
		while (my $line = <$fh>)
		{
			chomp $line;
			my $declared = 0;
			for my $i (0 .. $#expect)
			{
				next unless $line =~ $expect[$i]{re};
				$seen[$i]++;
				$declared = 1;
			}
			push @crashes, basename($log) . ":$.: $line" if !$declared && $line =~ $CRASH_LINE;
		}
		close $fh;
	}
	my @unmet;
	for my $i (0 .. $#expect)
	{
		my $count = $expect[$i]{count} // next;
		my ($min, $max) = ref $count ? @$count : ($count, $count);
		next if $seen[$i] >= ($min // 0) && (!defined $max || $seen[$i] <= $max);
		push @unmet, sprintf('%s: %d lines, expected %s (declared at %s)', $expect[$i]{re}, $seen[$i],
			ref $count ? sprintf('%d to %s', $min // 0, $max // 'any') : $count, $expect[$i]{at});
	}
	my $ok = ok(!@crashes && !@unmet,
		"no crash in the log of node $name" . (@expect ? ' but the declared ones' : ''));
	if (@crashes)
	{
		my $more = @crashes > 30 ? sprintf("\n  ... and %d more", @crashes - 30) : '';
		diag("node $name: lines that tell of a crash the test did not declare (expect_in_log):\n  "
			  . join("\n  ", @crashes[ 0 .. ($#crashes < 29 ? $#crashes : 29) ]) . $more);
	}
	diag("node $name: declared lines not seen as often as declared:\n  " . join("\n  ", @unmet)) if @unmet;
	return $ok;
}

# Registered once, in the process that loads this module, on the root hub:
# done_testing runs the follow-ups before it emits the plan, so the
# assertions are counted in it.
my $logs_checked = 0;
Test2::API::test2_stack()->top->follow_up(
	sub {
		my ($trace, $hub) = @_;
		return if $$ != $owner_pid || $logs_checked++;
		return if ($hub->plan // '') eq 'SKIP';
		# Every node the test made, through zklock_node or straight from
		# Cluster.pm (a standby, a restored backup): Cluster.pm lists them.
		my %seen;
		_check_node_log($_)
		  for grep { !$seen{ refaddr($_) }++ } @nodes, @PostgreSQL::Test::Cluster::all_nodes;
	});

1;
