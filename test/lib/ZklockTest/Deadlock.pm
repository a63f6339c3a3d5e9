# Sessions that wait on each other, for the deadlock tests (t/043, t/050):
# a transaction holding locks, a wait started in it, its outcome.  Not
# re-exported by ZklockTest.pm: a test that makes cycles says
# "use ZklockTest::Deadlock".
package ZklockTest::Deadlock;

use strict;
use warnings FATAL => 'all';

use Exporter 'import';
use Test::More;
use ZklockTest::Node;
use ZklockTest::Poll;

our @EXPORT = qw(holder start_wait start_row_wait finish_wait end_all);

=head1 Waiting sessions

=over

=item holder($node, [{ dbname => ... },] @locks)

A background session in a transaction that holds the given zklock locks
(exclusive, or shared for "name:shared"), with verbose errors; its
backend's pid in ->{pid}.

=item start_wait($s, $node, $lock, $shared)

Start a waiting acquire of $lock (exclusive, or shared if $shared) in
session $s; returns once zk_locks shows it waiting with its node created in
ZooKeeper, or once the acquire has already ended (the wait that closes a
cycle can be found and broken within a short deadlock_timeout, before a
poll sees it waiting: t/123 once, on 18).  A wait counts as waiting from
the moment the backend posts it, before its worker creates the node: on a
loaded machine a wait started later in another cluster could get the
older czxid, and the victim rule (the newest request of a cycle gives up)
would then pick the other member than the test expects (t/069 at N = 14
once: X, not Y, gave up, and Y, still behind the decoys' shared holds,
timed out after 60 s).

=item start_row_wait($s, $node, $delta)

Start "UPDATE rows SET v = v + $delta WHERE id = 1" in session $s;
returns once it waits for a row lock.

=item finish_wait($s)

The outcome of the wait started in $s: 'granted' or its SQLSTATE; the
error (with its detail) in ->{last_err}.

=item end_all(@sessions)

Roll back and close each session.

=back

=cut

sub holder
{
	my ($node, @locks) = @_;
	my %opts = ref $locks[0] eq 'HASH' ? %{ shift @locks } : ();
	my $s = bg_session($node, %opts);
	$s->query_safe("\\set VERBOSITY verbose");
	$s->query_safe('BEGIN');
	for my $l (@locks)
	{
		my ($name, $shared) = split /:/, $l;
		my $fn = $shared ? 'zk_lock_acquire_xact_shared' : 'zk_lock_acquire_xact';
		$s->query_safe("SELECT $fn('$name')");
	}
	$s->{pid} = $s->query_safe('SELECT pg_backend_pid()');
	return $s;
}

my $start_waits = 0;

sub start_wait
{
	my ($s, $node, $lock, $shared) = @_;
	my $fn = $shared ? 'zk_lock_acquire_xact_shared' : 'zk_lock_acquire_xact';
	$s->{stderr} = '';
	# A mark of this call, so that the statement's text in pg_stat_activity
	# is never an earlier acquire's of the same lock in the same session.
	$start_waits++;
	my $sql = "SELECT $fn('$lock') > 0 AS granted /* start_wait $start_waits */;";
	$s->query_until(qr/started/, "\\echo started\n$sql\n\\echo done\n");
	(my $quoted = $sql) =~ s/'/''/g;
	wait_until(sub {
		$node->safe_psql('postgres',
			"SELECT (SELECT count(*) FROM zk_locks WHERE pid = $s->{pid} AND name = '$lock'"
			  . " AND state = 'waiting' AND znode IS NOT NULL)"
			  . " + (SELECT count(*) FROM pg_stat_activity WHERE pid = $s->{pid}"
			  . " AND query = '$quoted' AND state <> 'active')") > 0
	}, 30, "" . $node->name . " pid $s->{pid} waits for $lock, its node created, or its wait has ended");
}

sub start_row_wait
{
	my ($s, $node, $delta) = @_;
	$s->{stderr} = '';
	$s->query_until(qr/started/, "\\echo started\nUPDATE rows SET v = v + $delta WHERE id = 1;\n\\echo done\n");
	wait_until(sub {
		$node->safe_psql('postgres', "SELECT wait_event_type FROM pg_stat_activity WHERE pid = $s->{pid}") eq 'Lock'
	}, 30, $node->name . " pid $s->{pid} waits for the row lock");
}

sub finish_wait
{
	my ($s) = @_;
	my $out = $s->query_until(qr/done/, '');
	$s->{last_err} = $s->{stderr};
	$s->{stderr} = '';
	return 'granted' if $out =~ /\bt\b/;
	return sqlstate_of($s->{last_err});
}

sub end_all
{
	for my $s (@_)
	{
		$s->query('ROLLBACK');
		$s->quit;
	}
}

1;
