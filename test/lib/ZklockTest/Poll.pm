# Polling for the TAP tests: wait_until calls a condition until it holds or
# a time limit passes, and fails a test only on timeout.
package ZklockTest::Poll;

use strict;
use warnings FATAL => 'all';

use Exporter 'import';
use Time::HiRes qw(sleep time);
use Test::More;

our @EXPORT = qw(wait_until);

=head1 Polling

=over

=item wait_until($code, $timeout_s, $what)

Call $code every 0.1 s until it returns true, and return true.  On timeout
(default 60 s) fail a test naming $what and return false.  Emits no test
when it succeeds, so plans do not depend on timing.

=cut

sub wait_until
{
	my ($code, $timeout, $what) = @_;
	$timeout //= 60;
	$what //= 'condition';
	my $deadline = time + $timeout;
	while (1)
	{
		return 1 if $code->();
		last if time >= $deadline;
		sleep 0.1;
	}
	local $Test::Builder::Level = $Test::Builder::Level + 1;
	fail("timed out after ${timeout}s waiting for $what");
	return 0;
}

=back

=cut

1;
