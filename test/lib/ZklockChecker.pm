# A mutual-exclusion checker for zklock: many sessions in several PostgreSQL
# clusters increment one shared counter under one zklock lock, and what was
# committed is then checked for the properties a mutex must guarantee.
#
#   use ZklockTest;
#   use ZklockChecker;
#
#   my @nodes = map { zklock_node($_, $zk, conf => checker_conf()) } qw(a b c);
#   my $res = run_checker(nodes => \@nodes, zk => $zk, sessions => 8,
#                         iterations => 100, duration => 60);
#   check_invariants($res);                 # TAP assertions (a) to (d) and more
#
# or, to inject faults while the sessions run:
#
#   my $run = start_checker(nodes => \@nodes, zk => $zk, ...);
#   wait_until(sub { checker_progress($run) >= 100 }, 60, 'holds committed');
#   ... stop a ZooKeeper server, restart it ...
#   my $res = finish_checker($run);
#   check_invariants($res);
#
# What the checker commits where and why, and what each check proves:
# test/README.md.

package ZklockChecker;

use strict;
use warnings FATAL => 'all';

use Carp;
use Exporter 'import';
use File::Path qw(make_path);
use IPC::Run;
use POSIX ();
use Time::HiRes qw(time sleep);
use PostgreSQL::Test::Utils;
use Test::More;
use ZklockTest;

our @EXPORT = qw(
  checker_conf start_checker stop_checker finish_checker run_checker
  checker_progress check_invariants
);

my $owner_pid = $$;
my @live_children;
my $run_seq = 0;

=pod

=head1 ZklockChecker

=over

=item checker_conf()

postgresql.conf lines the checker needs (commit timestamps); pass them as
C<< zklock_node($name, $zk, conf => checker_conf()) >>.

=cut

sub checker_conf
{
	return "track_commit_timestamp = on\n";
}

sub _lit
{
	my ($s) = @_;
	$s =~ s/'/''/g;
	return "'$s'";
}

# Tables and functions in every cluster; the hold tables start empty.
sub _setup
{
	my ($nodes) = @_;
	for my $node (@$nodes)
	{
		my $tct = $node->safe_psql('postgres', 'SHOW track_commit_timestamp');
		croak 'ZklockChecker: ' . $node->name
		  . ' needs track_commit_timestamp = on (use checker_conf())'
		  unless $tct eq 'on';
		my $peers = join(",\n",
			map { '(' . _lit('zkc_' . $_->name) . ', ' . _lit($_->connstr('postgres')) . ')' }
			  grep { $_ != $node } @$nodes);
		$peers = "INSERT INTO zkc_peer VALUES\n$peers;" if $peers ne '';
		$node->safe_psql('postgres', qq{
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS dblink;
DROP FUNCTION IF EXISTS zkc_read();
DROP TABLE IF EXISTS zkc_hold, zkc_peer;
CREATE TABLE zkc_hold (
	cluster text NOT NULL,
	session int NOT NULL,
	iter int NOT NULL,
	token bigint NOT NULL,
	read_value bigint NOT NULL,
	written_value bigint NOT NULL,
	seen_token bigint NOT NULL,
	t_request timestamptz NOT NULL,
	t_start timestamptz NOT NULL,
	t_end timestamptz NOT NULL,
	PRIMARY KEY (session, iter));
CREATE INDEX ON zkc_hold (written_value);
CREATE INDEX ON zkc_hold (token);
CREATE TABLE zkc_peer (name text PRIMARY KEY, connstr text NOT NULL);
$peers
-- The shared counter: the largest increment committed in any cluster, and
-- the largest token committed with one (what a fencing store would hold).
-- A peer's query runs on the connection this session keeps for it; when
-- that fails (fail_on_error false: a NOTICE and no row), the peer most
-- likely restarted since, so the connection is opened again and the query
-- run once more, now raising its error: a peer is never skipped, and while
-- it is down the read fails and the transaction rolls back.
CREATE FUNCTION zkc_read(OUT read_value bigint, OUT seen_token bigint)
LANGUAGE plpgsql AS \$f\$
DECLARE
	p record;
	w bigint;
	t bigint;
	q constant text := 'SELECT coalesce(max(written_value), 0), coalesce(max(token), 0) FROM zkc_hold';
BEGIN
	SELECT coalesce(max(h.written_value), 0), coalesce(max(h.token), 0)
	  INTO read_value, seen_token FROM zkc_hold h;
	FOR p IN SELECT * FROM zkc_peer ORDER BY name LOOP
		IF p.name <> ALL (coalesce(dblink_get_connections(), '{}')) THEN
			PERFORM dblink_connect(p.name, p.connstr);
		END IF;
		SELECT r.w, r.t INTO w, t FROM dblink(p.name, q, false) AS r(w bigint, t bigint);
		IF NOT FOUND THEN
			PERFORM dblink_disconnect(p.name);
			PERFORM dblink_connect(p.name, p.connstr);
			SELECT r.w, r.t INTO STRICT w, t FROM dblink(p.name, q) AS r(w bigint, t bigint);
		END IF;
		read_value := greatest(read_value, w);
		seen_token := greatest(seen_token, t);
	END LOOP;
END
\$f\$;
});
	}
	return;
}

=item start_checker(%opts)

Set up the tables and start the sessions; returns a run handle at once.
Options: nodes (array ref, required), zk (required for check (d)), lock
('counter'), sessions (per cluster, 8), iterations (per session, 100),
duration (seconds, 60: no new transaction starts after it), acquire_timeout
('5s'), sleep_ms ([1, 3]), batch_timeout (seconds one transaction may take
before its session counts as hung, 30), max_restarts (psql restarts per
session after a lost connection, 5), reconnect_wait (seconds a session keeps
trying, every 0.2 s, to start a psql that connects, 30), session_sql (run
when each session connects, e.g. C<SET zklock.on_lock_lost = 'error'>).

=item checker_progress($run)

Committed holds so far, summed over the clusters.

=item stop_checker($run)

Ask the sessions to start no new transaction (for a test that has seen
enough); finish_checker still waits for the ones under way.

=item finish_checker($run)

Wait for every session to stop by itself (stopping, by pid, any that
overruns duration + batch_timeout + 15 s), and return the result: a hash
with committed (rows), attempts, holds_per_second, elapsed, errors (SQLSTATE
=> count), errors_by_step ("step SQLSTATE" => count), unknown (transactions
whose COMMIT's outcome the session could not see), restarts, hung, figures
(a line of timing medians), holds (the committed rows sorted by grant, as
hashes: cluster, session, iter, token, read, written, seen, and times in
microseconds since the epoch: tq request, ts grant, te before COMMIT, tc
commit) and what check_invariants needs.

=item run_checker(%opts)

start_checker and finish_checker in one.

=cut

sub start_checker
{
	my (%opts) = @_;
	my $nodes = $opts{nodes} or croak 'start_checker: nodes required';
	my $run = {
		nodes           => $nodes,
		zk              => $opts{zk},
		lock            => $opts{lock} // 'counter',
		sessions        => $opts{sessions} // 8,
		iterations      => $opts{iterations} // 100,
		duration        => $opts{duration} // 60,
		acquire_timeout => $opts{acquire_timeout} // '5s',
		sleep_ms        => $opts{sleep_ms} // [ 1, 3 ],
		batch_timeout   => $opts{batch_timeout} // 30,
		max_restarts    => $opts{max_restarts} // 5,
		reconnect_wait  => $opts{reconnect_wait} // 30,
		session_sql     => $opts{session_sql} // '',
	};
	_setup($nodes);

	my $test = _basename_noext($0);
	$run->{dir} = sprintf('%s/%s_checker%d_%d',
		$PostgreSQL::Test::Utils::log_path, $test, ++$run_seq, $$);
	make_path($run->{dir});
	note "checker: $run->{sessions} sessions in each of "
	  . scalar(@$nodes) . " clusters, logs in $run->{dir}";

	$run->{started} = time;
	$run->{deadline} = $run->{started} + $run->{duration};
	# Buffered test output must not be written twice by the children.
	STDOUT->flush;
	STDERR->flush;
	for my $node (@$nodes)
	{
		for my $s (1 .. $run->{sessions})
		{
			my $c = {
				%$run,
				cluster => $node->name,
				session => $s,
				connstr => $node->connstr('postgres'),
				tag     => $node->name . "_$s",
			};
			delete @$c{qw(nodes zk children)};
			my $pid = fork;
			croak "fork: $!" unless defined $pid;
			if ($pid == 0)
			{
				my $rc = 1;
				eval { _session_child($c); $rc = 0; 1 }
				  or _child_note($c, "session died: $@");
				POSIX::_exit($rc);
			}
			push @{ $run->{children} }, { pid => $pid, tag => $c->{tag} };
			push @live_children, $pid;
		}
	}
	return $run;
}

sub _basename_noext
{
	my ($p) = @_;
	$p =~ s{.*/}{};
	$p =~ s/\.[^.]+$//;
	return $p;
}

sub stop_checker
{
	my ($run) = @_;
	open my $fh, '>', "$run->{dir}/STOP" or croak "stop_checker: $!";
	close $fh;
	return;
}

sub checker_progress
{
	my ($run) = @_;
	my $n = 0;
	$n += $_->safe_psql('postgres', 'SELECT count(*) FROM zkc_hold') for @{ $run->{nodes} };
	return $n;
}

# ---------------------------------------------------------------------
# One session (runs in a forked child; never returns to the test's code)
# ---------------------------------------------------------------------

sub _child_note
{
	my ($c, $msg) = @_;
	if (open my $fh, '>>', "$c->{dir}/$c->{tag}.notes")
	{
		printf $fh "%s %s\n", scalar(localtime), $msg;
		close $fh;
	}
	return;
}

# The psql batch for one transaction.  After each statement psql echoes its
# SQLSTATE; after a failed one the transaction is rolled back and the rest
# skipped (\if :ERROR).
sub _iteration_sql
{
	my ($c, $iter) = @_;
	my ($lo, $hi) = @{ $c->{sleep_ms} };
	my $sleep = sprintf('%.4f + random() * %.4f', $lo / 1000, ($hi - $lo) / 1000);
	my @steps = (
		[ acquire => 'SELECT token, statement_timestamp() AS t_request, clock_timestamp() AS t_start'
			  . ' FROM zk_lock_acquire_xact('
			  . _lit($c->{lock}) . ', ' . _lit($c->{acquire_timeout}) . ') AS token \gset' ],
		[ read  => 'SELECT read_value, seen_token FROM zkc_read() \gset' ],
		[ sleep => "SELECT FROM pg_sleep($sleep);" ],
		[ write => 'INSERT INTO zkc_hold VALUES (' . _lit($c->{cluster})
			  . ", $c->{session}, $iter, :token, :read_value, :read_value + 1, :seen_token,"
			  . " :'t_request', :'t_start', clock_timestamp());" ],
		[ commit => 'COMMIT;' ],
	);
	my $sql = "BEGIN;\n";
	for my $i (0 .. $#steps)
	{
		my ($name, $stmt) = @{ $steps[$i] };
		$sql .= "$stmt\n\\echo \@\@S $name :SQLSTATE\n";
		$sql .= "\\if :ERROR\nROLLBACK;\n\\else\n" if $i < $#steps;
	}
	$sql .= "\\endif\n" x $#steps;
	$sql .= "\\echo \@\@END $iter\n";
	return $sql;
}

sub _session_child
{
	my ($c) = @_;
	my ($in, $out) = ('', '');
	my $h;
	my $timer = IPC::Run::timer($c->{batch_timeout});
	my $errfile = "$c->{dir}/$c->{tag}.psql.log";
	my $stop_psql = sub {
		return unless $h;
		eval { $h->kill_kill(grace => 2); 1 };
		eval { $h->finish; 1 };
		undef $h;
	};
	for my $sig (qw(TERM INT HUP))
	{
		$SIG{$sig} = sub { $stop_psql->(); POSIX::_exit(2) };
	}
	$SIG{PIPE} = 'IGNORE';

	my %r = (attempts => 0, committed => [], unknown => [], failed => [],
		errors => {}, restarts => 0, hung => 0);

	# Send $sql, wait for "@@END $tag"; returns false on timeout or exit.
	my $exchange = sub {
		my ($sql, $tag) = @_;
		$out = '';
		$in .= $sql;
		$timer->start($c->{batch_timeout});
		my $done = sub { $out =~ /^\@\@END \Q$tag\E$/m };
		while (!$done->())
		{
			last if !$h->pumpable || $timer->is_expired;
			eval { $h->pump; 1 } or last;
		}
		return $done->() ? 'done' : $timer->is_expired ? 'timeout' : 'exited';
	};

	# One attempt at a connected psql, set up for the session.
	my $try_psql = sub {
		$in = '';
		$h = IPC::Run::start(
			[ 'psql', '-X', '-q', '-A', '-t', '-v', 'ON_ERROR_STOP=0', '-d', $c->{connstr} ],
			'<', \$in, '>', \$out, '2>>', $errfile, $timer);
		my $st = $exchange->("\\set VERBOSITY verbose\n"
			  . "SET application_name = " . _lit("zkc_$c->{tag}") . ";\n"
			  . ($c->{session_sql} ne '' ? "$c->{session_sql};\n" : '')
			  . "\\echo \@\@END init\n", 'init');
		return 'done' if $st eq 'done';
		$stop_psql->();
		return $st;
	};
	my $stopping = sub { time >= $c->{deadline} || -e "$c->{dir}/STOP" };
	# A connected psql, trying again every 0.2 s for up to reconnect_wait
	# seconds: a cluster in a crash restart, or stopped and about to start,
	# refuses connections for a while.  Returns 'started', 'stopping' (the
	# run ended meanwhile) or 'failed'.
	my $start_psql = sub {
		my $t0 = time;
		my ($tries, $st) = (0, '');
		while (1)
		{
			$tries++;
			$st = $try_psql->();
			if ($st eq 'done')
			{
				_child_note($c, sprintf('psql started after %d tries in %.1f s', $tries, time - $t0))
				  if $tries > 1;
				return 'started';
			}
			if ($stopping->())
			{
				_child_note($c, "run ended while psql did not start ($tries tries, last: $st)");
				return 'stopping';
			}
			last if time - $t0 >= $c->{reconnect_wait};
			sleep 0.2;
		}
		_child_note($c, sprintf('psql did not start: %d tries in %.1f s, last: %s', $tries, time - $t0, $st));
		return 'failed';
	};

	# 'stopping' leaves no psql, and the loop below ends at once.
	die "could not start psql\n" if $start_psql->() eq 'failed';
	for my $iter (1 .. $c->{iterations})
	{
		last if $stopping->();
		$r{attempts}++;
		my $st = $exchange->(_iteration_sql($c, $iter), $iter);
		my %state = $out =~ /^\@\@S (\w+) (\w+)$/mg;
		my ($failed_step) = grep { defined $state{$_} && $state{$_} ne '00000' }
		  qw(acquire read sleep write commit);
		if ($st eq 'timeout')
		{
			# A hang: say what the cluster shows, then stop this session.
			$r{hung} = 1;
			push @{ $r{unknown} }, $iter;
			my $steps = join(' ', map { "$_=$state{$_}" } sort keys %state);
			_child_note($c, "iteration $iter hung after $c->{batch_timeout}s (steps done: $steps)");
			_child_note($c, _cluster_state($c));
			last;
		}
		elsif ($failed_step)
		{
			push @{ $r{failed} }, $iter;
			$r{errors}{"$failed_step $state{$failed_step}"}++;
		}
		elsif (($state{commit} // '') eq '00000')
		{
			push @{ $r{committed} }, $iter;
		}
		else
		{
			# psql exited (connection lost) before saying how the
			# transaction ended: the outcome of a COMMIT in flight is unknown.
			my $step = (grep { defined $state{$_} } qw(commit write sleep read acquire))[0] // 'begin';
			push @{ $r{unknown} }, $iter;
			$r{errors}{"after-$step connection"}++;
			_child_note($c, "iteration $iter: psql exited after step $step");
		}
		if ($st ne 'done' || !$h->pumpable)
		{
			$stop_psql->();
			if (++$r{restarts} > $c->{max_restarts})
			{
				_child_note($c, 'giving up: too many restarts');
				last;
			}
			my $started = $start_psql->();
			last if $started eq 'stopping';
			if ($started ne 'started')
			{
				_child_note($c, "giving up: no connection within $c->{reconnect_wait} s");
				last;
			}
		}
	}
	if ($h && !$r{hung})
	{
		$in .= "\\q\n";
		$timer->start(10);
		eval { $h->finish; 1 } or $stop_psql->();
	}
	$stop_psql->();

	open my $fh, '>', "$c->{dir}/$c->{tag}.result.tmp" or die "result: $!";
	print $fh "attempts $r{attempts}\n";
	print $fh "restarts $r{restarts}\n";
	print $fh "hung $r{hung}\n";
	print $fh "$_ @{ $r{$_} }\n" for qw(committed failed unknown);
	print $fh "error $_ $r{errors}{$_}\n" for sort keys %{ $r{errors} };
	close $fh or die "result: $!";
	rename "$c->{dir}/$c->{tag}.result.tmp", "$c->{dir}/$c->{tag}.result"
	  or die "result: $!";
	return;
}

# zk_locks and zk_status() of a session's cluster, through a separate psql.
sub _cluster_state
{
	my ($c) = @_;
	my ($out, $err) = ('', '');
	eval {
		IPC::Run::run(
			[ 'psql', '-X', '-A', '-d', $c->{connstr}, '-c',
				'SELECT now(), * FROM zk_status()', '-c',
				'SELECT l.*, a.application_name, a.state AS backend_state, a.wait_event'
				  . ' FROM zk_locks l LEFT JOIN pg_stat_activity a USING (pid) ORDER BY requested_at' ],
			'<', \undef, '>', \$out, '2>', \$err, IPC::Run::timeout(20));
		1;
	} or $err .= $@;
	return "cluster state:\n$out$err";
}

# ---------------------------------------------------------------------
# Collecting the results
# ---------------------------------------------------------------------

sub finish_checker
{
	my ($run) = @_;
	my $hard = $run->{deadline} + $run->{batch_timeout} + 15;
	my %left = map { $_->{pid} => $_ } @{ $run->{children} };
	my @killed;
	while (%left)
	{
		for my $pid (keys %left)
		{
			my $w = waitpid($pid, POSIX::WNOHANG());
			delete $left{$pid} if $w == $pid || $w == -1;
		}
		last unless %left;
		if (time > $hard)
		{
			for my $pid (keys %left)
			{
				push @killed, $left{$pid}{tag};
				kill 'TERM', $pid;
			}
			my $t = time + 5;
			while (%left && time < $t)
			{
				for my $pid (keys %left)
				{
					delete $left{$pid} if waitpid($pid, POSIX::WNOHANG()) != 0;
				}
				sleep 0.1;
			}
			for my $pid (keys %left)
			{
				kill 'KILL', $pid;
				waitpid($pid, 0);
				delete $left{$pid};
			}
			last;
		}
		sleep 0.1;
	}
	my %gone = map { $_->{pid} => 1 } @{ $run->{children} };
	@live_children = grep { !$gone{$_} } @live_children;
	$run->{elapsed} = time - $run->{started};

	my %res = (
		%$run,
		attempts      => 0,
		restarts      => 0,
		hung          => scalar(@killed),
		errors        => {},
		errors_by_step => {},
		unknown       => 0,
		client_commits => {},
		client_failed => {},
		unknown_keys  => {},
		missing_results => [],
	);
	for my $child (@{ $run->{children} })
	{
		my $file = "$run->{dir}/$child->{tag}.result";
		unless (-f $file)
		{
			push @{ $res{missing_results} }, $child->{tag};
			next;
		}
		my ($cluster, $s) = $child->{tag} =~ /^(.*)_(\d+)$/;
		for my $line (split /\n/, slurp_file($file))
		{
			my ($k, @v) = split / /, $line;
			if ($k eq 'attempts' || $k eq 'restarts' || $k eq 'hung')
			{
				$res{$k} += $v[0];
			}
			elsif ($k eq 'committed' || $k eq 'failed' || $k eq 'unknown')
			{
				my $into = { committed => 'client_commits', failed => 'client_failed',
					unknown => 'unknown_keys' }->{$k};
				$res{$into}{"$cluster/$s/$_"} = 1 for @v;
			}
			elsif ($k eq 'error')
			{
				my ($step, $code, $n) = @v;
				$res{errors}{$code} += $n;
				$res{errors_by_step}{"$step $code"} += $n;
			}
		}
	}
	$res{unknown} = scalar keys %{ $res{unknown_keys} };
	# What went wrong in sessions (hangs, lost connections): the first few
	# in full, the rest are in the log directory.
	my @notes = sort glob("$run->{dir}/*.notes");
	for my $f (@notes[ 0 .. ($#notes < 2 ? $#notes : 2) ])
	{
		my @lines = split /\n/, slurp_file($f);
		splice(@lines, 40, @lines - 40, '...') if @lines > 41;
		diag("checker notes from session " . _basename_noext($f) . ":\n" . join("\n", @lines));
	}
	diag(sprintf('checker notes from %d more sessions in %s', @notes - 3, $run->{dir}))
	  if @notes > 3;

	# What was committed, with commit timestamps, from every cluster.
	my @holds;
	for my $node (@{ $run->{nodes} })
	{
		my $out = $node->safe_psql('postgres', q{
SELECT cluster, session, iter, token, read_value, written_value, seen_token,
       (extract(epoch FROM t_request) * 1000000)::bigint,
       (extract(epoch FROM t_start) * 1000000)::bigint,
       (extract(epoch FROM t_end) * 1000000)::bigint,
       (extract(epoch FROM pg_xact_commit_timestamp(xmin)) * 1000000)::bigint
  FROM zkc_hold});
		for my $line (split /\n/, $out)
		{
			my %h;
			@h{qw(cluster session iter token read written seen tq ts te tc)} = split /\|/, $line;
			push @holds, \%h;
		}
	}
	$res{holds} = [ sort { $a->{ts} <=> $b->{ts} } @holds ];
	$res{committed} = scalar @holds;
	$res{holds_per_second} = $res{elapsed} > 0 ? $res{committed} / $res{elapsed} : 0;
	$res{figures} = _figures($res{holds});
	note sprintf('checker: %d committed of %d attempts in %.1f s; errors: %s',
		$res{committed}, $res{attempts}, $res{elapsed}, _fmt_counts($res{errors_by_step}));
	return \%res;
}

# Medians of the hold time (grant to commit) and of the handoff (one
# commit to the next grant, same cluster or another), and the longest time
# the lock stood idle between two committed holds, in ms.
sub _figures
{
	my ($holds) = @_;
	my (@hold, @same, @cross, $idle);
	my $ok = sub { defined $_[0]{tc} && $_[0]{tc} ne '' };
	for my $i (0 .. $#$holds)
	{
		my $x = $holds->[$i];
		next unless $ok->($x);
		push @hold, ($x->{tc} - $x->{ts}) / 1000;
		my $y = $holds->[ $i + 1 ] // next;
		my $gap = ($y->{ts} - $x->{tc}) / 1000;
		push @{ $x->{cluster} eq $y->{cluster} ? \@same : \@cross }, $gap;
		$idle = $gap if !defined $idle || $gap > $idle;
	}
	my $median = sub {
		my @v = sort { $a <=> $b } @_;
		return @v ? sprintf('%.2f', $v[ int($#v / 2) ]) : '-';
	};
	return sprintf('hold (grant to commit) median %s ms; handoff (commit to next grant) median %s ms'
		  . ' within a cluster (%d), %s ms across clusters (%d); longest idle gap %s ms',
		$median->(@hold), $median->(@same), scalar(@same), $median->(@cross), scalar(@cross),
		defined $idle ? sprintf('%.1f', $idle) : '-');
}

sub run_checker
{
	my (%opts) = @_;
	return finish_checker(start_checker(%opts));
}

sub _fmt_counts
{
	my ($h) = @_;
	return 'none' unless %$h;
	return join(', ', map { "$_: $h->{$_}" } sort keys %$h);
}

sub _fmt_hold
{
	my ($h) = @_;
	return sprintf('%s/%s/%s token %s read %s wrote %s seen %s t_start %.6f t_end %.6f t_commit %s',
		@$h{qw(cluster session iter token read written seen)}, $h->{ts} / 1e6, $h->{te} / 1e6,
		defined $h->{tc} && $h->{tc} ne '' ? sprintf('%.6f', $h->{tc} / 1e6) : 'NULL');
}

=item check_invariants($res, %opts)

The checks described at the top of this file, as TAP assertions (each one
names the property; a failure lists the offending holds).  Option:
orphan_wait (seconds to wait for the lock directory to empty, default 30:
ephemeral nodes of an expired session go when ZooKeeper expires it).

=back

=cut

sub check_invariants
{
	my ($res, %opts) = @_;
	local $Test::Builder::Level = $Test::Builder::Level + 1;
	my @h = @{ $res->{holds} };    # sorted by t_start
	my $n = scalar @h;
	my $show = sub {
		my ($what, @bad) = @_;
		return unless @bad;
		my $more = @bad > 10 ? sprintf("\n  ... and %d more", @bad - 10) : '';
		diag("$what:\n  " . join("\n  ", @bad[ 0 .. ($#bad < 9 ? $#bad : 9) ]) . $more);
	};

	# (a) no two committed holds overlap
	my (@overlaps, @disorder);
	my $prev;    # the hold with the latest t_commit so far
	for my $x (@h)
	{
		if (!defined $x->{tc} || $x->{tc} eq '' || $x->{ts} > $x->{te} || $x->{te} > $x->{tc})
		{
			push @disorder, _fmt_hold($x);
			next;
		}
		if ($prev && $prev->{tc} > $x->{ts})
		{
			push @overlaps, sprintf("%s\n    overlaps %s\n    by %.3f ms",
				_fmt_hold($prev), _fmt_hold($x), ($prev->{tc} - $x->{ts}) / 1000);
		}
		$prev = $x if !$prev || $x->{tc} > $prev->{tc};
	}
	ok(!@overlaps && !@disorder,
		"(a) no two of the $n committed holds overlap in time ([t_start, t_commit], all clusters)");
	$show->('overlapping holds', @overlaps);
	$show->('holds without t_start <= t_end <= t_commit', @disorder);

	# (b) no lost update
	my $counter = 0;
	for my $x (@h) { $counter = $x->{written} if $x->{written} > $counter }
	is($counter, $n, '(b) the committed counter equals the number of committed increments');
	my %seen_read;
	$seen_read{ $_->{read} }++ for @h;
	my @dups = map { "value $_ read $seen_read{$_} times" }
	  sort { $a <=> $b } grep { $seen_read{$_} > 1 } keys %seen_read;
	my @gaps = grep { !$seen_read{$_} } 0 .. $n - 1;
	my @badw = map { _fmt_hold($_) } grep { $_->{written} != $_->{read} + 1 } @h;
	ok(!@dups && !@gaps && !@badw,
		'(b) the values read are 0..N-1, each once, and each hold wrote its read + 1 (no lost update)');
	$show->('values read more than once (lost updates)', @dups);
	$show->('values never read', @gaps);
	$show->('holds that did not write read + 1', @badw);
	if (@dups)
	{
		my %d = map { $_ => 1 } grep { $seen_read{$_} > 1 } keys %seen_read;
		$show->('holds that read a duplicated value', map { _fmt_hold($_) } grep { $d{ $_->{read} } } @h);
	}

	# (c) tokens rise in grant order; the fence condition held
	my @down;
	for my $i (1 .. $#h)
	{
		push @down, _fmt_hold($h[ $i - 1 ]) . "\n    then " . _fmt_hold($h[$i])
		  if $h[$i]{token} <= $h[ $i - 1 ]{token};
	}
	ok(!@down, '(c) fencing tokens strictly increase in grant (t_start) order');
	$show->('tokens not rising in grant order', @down);
	my @unfenced = map { _fmt_hold($_) } grep { $_->{token} <= $_->{seen} } @h;
	ok(!@unfenced, '(c) every committed token exceeds every token committed before its read (a fencing store accepts all)');
	$show->('holds a fencing store would have refused', @unfenced);

	# What the sessions saw is what was committed.
	my %rows = map { ("$_->{cluster}/$_->{session}/$_->{iter}" => 1) } @h;
	my @phantom = grep { !$res->{client_commits}{$_} && !$res->{unknown_keys}{$_} } sort keys %rows;
	my @lost = grep { !$rows{$_} } sort keys %{ $res->{client_commits} };
	ok(!@phantom && !@lost && !@{ $res->{missing_results} },
		'every COMMIT a session saw succeed left its hold, and no failed transaction left one');
	$show->('committed rows whose transaction the session saw fail', @phantom);
	$show->('transactions the session saw commit without a row', @lost);
	$show->('sessions that reported nothing', @{ $res->{missing_results} });
	is($res->{hung}, 0, 'no session hung (every transaction ended within '
		  . "$res->{batch_timeout} s)");

	# (d) no orphan node in ZooKeeper, no leftover request in any cluster
	my $node0 = $res->{nodes}[0];
	my $path = $node0->safe_psql('postgres', 'SELECT zk_lock_path(' . _lit($res->{lock}) . ')');
	my $wait = $opts{orphan_wait} // 30;
	my @left;
	my $deadline = time + $wait;
	while (1)
	{
		@left = zk_ls($res->{zk}, $path);
		last if !@left || time > $deadline;
		sleep 0.2;
	}
	is(scalar(@left), 0, "(d) no node left in ZooKeeper under $path after the run");
	if (@left)
	{
		diag("left under $path:\n"
			  . join("\n", map { "  $_  " . (zk_get($res->{zk}, "$path/$_") // '(gone)') } @left));
		diag("zk_locks in " . $_->name . ":\n"
			  . $_->safe_psql('postgres', 'SELECT * FROM zk_locks')) for @{ $res->{nodes} };
	}
	my @local;
	$deadline = time + 10;
	while (1)
	{
		@local = grep { $_->[1] ne '' } map {
			[ $_->name, $_->safe_psql('postgres',
				'SELECT string_agg(pid || \' \' || state, \', \') FROM zk_locks WHERE name = '
				  . _lit($res->{lock})) ]
		} @{ $res->{nodes} };
		last if !@local || time > $deadline;
		sleep 0.2;
	}
	ok(!@local, '(d) no cluster shows a request for the lock after the run');
	$show->('clusters with zk_locks rows', map { "$_->[0]: $_->[1]" } @local);
	return;
}

END
{
	my $exit_code = $?;
	if ($$ == $owner_pid && @live_children)
	{
		kill 'TERM', $_ for @live_children;
		my $t = time + 5;
		while (@live_children && time < $t)
		{
			@live_children = grep { waitpid($_, POSIX::WNOHANG()) == 0 } @live_children;
			sleep 0.1 if @live_children;
		}
		for my $pid (@live_children)
		{
			kill 'KILL', $pid;
			waitpid($pid, 0);
		}
	}
	$? = $exit_code;
}

1;
