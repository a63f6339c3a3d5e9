# The checker's verdict: check_invariants makes TAP assertions of a finished
# run's result (ZklockChecker::Results), one per property a mutex must
# guarantee: (a) no two committed holds overlap, (b) no lost update, (c)
# fencing tokens rise and a fencing store would accept every write, what
# the sessions saw is what was committed, no session hung, and (d) no
# orphan in ZooKeeper or in any cluster.  What each check proves:
# test/README.md.
package ZklockChecker::Verdict;

use strict;
use warnings FATAL => 'all';

use Exporter 'import';
use Time::HiRes qw(time sleep);
use Test::More;
use ZklockTest;
use ZklockChecker::Schema qw(_lit);

our @EXPORT = qw(check_invariants);

=head1 ZklockChecker::Verdict

=over

=item check_invariants($res, %opts)

The checks described at the top of this file, as TAP assertions (each one
names the property; a failure lists the offending holds).  Option:
orphan_wait (seconds to wait for the lock directory to empty, default 30:
ephemeral nodes of an expired session go when ZooKeeper expires it).

=back

=cut

sub _fmt_hold
{
	my ($h) = @_;
	return sprintf('%s/%s/%s token %s read %s wrote %s seen %s t_start %.6f t_end %.6f t_commit %s',
		@$h{qw(cluster session iter token read written seen)}, $h->{ts} / 1e6, $h->{te} / 1e6,
		defined $h->{tc} && $h->{tc} ne '' ? sprintf('%.6f', $h->{tc} / 1e6) : 'NULL');
}

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

1;
