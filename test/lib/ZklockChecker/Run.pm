# Starting and stopping a checker run: start_checker sets up the schema
# (ZklockChecker::Schema) and forks the sessions (ZklockChecker::Session),
# stop_checker asks them to start no new transaction, checker_progress
# counts the committed holds.  The END block stops, by pid, sessions still
# running when the test ends, in the test's process only.
package ZklockChecker::Run;

use strict;
use warnings FATAL => 'all';

use Carp;
use Exporter 'import';
use File::Path qw(make_path);
use POSIX ();
use Time::HiRes qw(time sleep);
use PostgreSQL::Test::Utils;
use Test::More;
# Loaded before the END block below is compiled: END blocks run in reverse
# order of compilation, so the sessions are stopped before ZklockTest stops
# the servers.
use ZklockTest;
use ZklockChecker::Schema qw(_setup);
use ZklockChecker::Session qw(_child_note _session_child);

our @EXPORT = qw(start_checker stop_checker checker_progress);
our @EXPORT_OK = qw(@live_children _basename_noext);

my $owner_pid = $$;
our @live_children;
my $run_seq = 0;

=head1 ZklockChecker::Run

=over

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

=back

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
