# Collecting what a checker run did: finish_checker waits for the sessions
# (stopping, by pid, any that overruns), reads what each saw (the result
# files of ZklockChecker::Session), fetches the committed holds with their
# commit timestamps from every cluster and sums it up, with timing figures;
# run_checker is start_checker and finish_checker in one.
package ZklockChecker::Results;

use strict;
use warnings FATAL => 'all';

use Exporter 'import';
use POSIX ();
use Time::HiRes qw(time sleep);
use PostgreSQL::Test::Utils;
use Test::More;
use ZklockChecker::Run qw(start_checker @live_children _basename_noext);

our @EXPORT = qw(finish_checker run_checker);

=head1 ZklockChecker::Results

=over

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

=back

=cut

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

1;
