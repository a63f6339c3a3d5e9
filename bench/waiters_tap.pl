# Shape (d) alone, zklock only, as a TAP script on the test library: a
# holder takes one lock in one cluster, N sessions of that cluster queue
# behind it, then the holder releases and each waiter, once granted,
# releases at once.  As zkbench/waiters.py does, the holder releases once
# the worker's session is quiet (ZooKeeper's cons: no request for 0.5 s
# after at least 3N), or after 90 s when it never is; then it may hold
# D_HOLD seconds more (default 0), counting the session's requests each
# second: a queue that waits costs nothing while nobody publishes or ends a
# wait (issue 46, point 2).  Prints, per N, the requests per handoff and per
# acquisition over the whole cycle (ZooKeeper's lcxid, and zk_status()'s
# counters), and the deadlock checks.  No assertion but that it ran: a
# measurement, not a test, kept out of test/t.
#
#   D_NS=10,100 D_HOLD=30 prove -v bench/waiters_tap.pl   (with the test
#   library's environment, as test/t's scripts run: PERL5LIB, PG_CONFIG)
use strict;
use warnings FATAL => 'all';
no warnings 'portable';    # session ids are 64-bit hex

use FindBin;
use lib "$FindBin::RealBin/../test/lib";
use Time::HiRes qw(time sleep);
use ZklockTest;
use Test::More;

my @ns = split /,/, ($ENV{D_NS} // '10,100');
my $hold = $ENV{D_HOLD} // 0;
my $zk = zk_start(1);
my $node = zklock_node('m', $zk, conf => 'max_connections = 150');

# The session's last cxid: how many requests it sent.
sub lcxid
{
	my ($sid) = @_;
	my $out = zk_fourlw($zk, 'cons', 1) // '';
	for my $l (split /\n/, $out)
	{
		next unless $l =~ /sid=(0x[0-9a-f]+)/ && hex($1) == hex($sid);
		my ($c) = $l =~ /lcxid=(0x[0-9a-f]+)/;
		return hex($c);
	}
	die "session $sid not listed by cons";
}

# zkbench's wait_quiet: at least min_new requests, then none for 0.5 s.
sub wait_quiet
{
	my ($sid, $base, $min_new, $timeout) = @_;
	my ($last, $since) = (undef, time);
	my $end = time + $timeout;
	while (time < $end)
	{
		my $cur = lcxid($sid);
		($last, $since) = ($cur, time) if !defined $last || $cur != $last;
		return time if $cur - $base >= $min_new && time - $since >= 0.5;
		sleep 0.1;
	}
	return undef;
}

for my $n (@ns)
{
	my $name = "bench-d$n";
	my $sid = $node->safe_psql('postgres', 'SELECT session_id FROM zk_status()');
	my $s0 = zk_status_of($node);
	my $base = lcxid($sid);
	my $holder = bg_session($node);
	$holder->query_safe("SELECT zk_lock_acquire('$name')");
	my $t0 = time;
	my @w;
	for (1 .. $n)
	{
		my $s = bg_session($node);
		$s->query_until(qr/waiting/,
			"\\echo waiting\nSELECT zk_lock_acquire('$name') > 0, zk_lock_release('$name');\n");
		push @w, $s;
	}
	my $started = time - $t0;
	my $quiet = wait_quiet($sid, $base, 3 * $n, 90);
	my $settled = lcxid($sid) - $base;
	my @samples;
	for my $i (1 .. $hold)
	{
		sleep 1;
		push @samples, sprintf('%d', lcxid($sid) - $base);
	}
	my $s1 = zk_status_of($node);
	my $queued = lcxid($sid);
	diag(sprintf('N = %d: waiters started in %.1f s; %s; %d requests then%s',
		$n, $started,
		defined $quiet ? sprintf('session quiet %.1f s after the holder', $quiet - $t0)
		: 'session never quiet for 0.5 s in 90 s',
		$settled, $hold ? "; each second of $hold more: @samples" : ''));
	$holder->query_safe("SELECT zk_lock_release('$name')");
	for my $s (@w)
	{
		$s->query_safe("SELECT 'done'");
		$s->quit;
	}
	$holder->quit;
	wait_until(sub { $node->safe_psql('postgres', 'SELECT slots_used FROM zk_status()') == 0 },
		30, 'every slot free');
	my $s2 = zk_status_of($node);
	my $end = lcxid($sid);
	diag(sprintf('N = %d: %.2f requests per handoff; whole cycle: %.2f requests per acquisition '
		  . '(lcxid), %.2f (zk_requests); %d deadlock checks, %d while queued',
		$n, ($end - $queued) / $n, ($end - $base) / ($n + 1),
		($s2->{zk_requests} - $s0->{zk_requests}) / ($n + 1),
		$s2->{deadlock_checks} - $s0->{deadlock_checks},
		$s1->{deadlock_checks} - $s0->{deadlock_checks}));
}
ok(1, 'measured');
done_testing();
