# One session of the checker, run in a forked child of the test process
# (_session_child never returns to the test's code: the child leaves by
# POSIX::_exit and runs no END block).  It drives its own psql through the
# checker's transactions, starts a new psql when the connection is lost, and
# writes what it saw to <tag>.result, and what went wrong to <tag>.notes, in
# the run's log directory, where ZklockChecker::Results reads them.
package ZklockChecker::Session;

use strict;
use warnings FATAL => 'all';

use Exporter 'import';
use IPC::Run;
use POSIX ();
use Time::HiRes qw(time sleep);
use ZklockChecker::Schema qw(_lit);

our @EXPORT_OK = qw(_child_note _session_child);

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
1;
