# FIFO across clusters: five waiters from two clusters, queued one after
# another behind a holder, are granted in the order they asked, and each
# one's fencing token is its node's czxid as ZooKeeper reports it to a
# client of its own (zkutil), not a number zklock makes up.
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::RealBin/../lib";
use ZklockTest;
use Test::More;

my $zk = zk_start(1);
my %node = (a => zklock_node('a', $zk), b => zklock_node('b', $zk));
my $dir = $node{a}->safe_psql('postgres', "SELECT zk_lock_path('fifo')");

my $holder = bg_session($node{a});
$holder->query_safe("SELECT zk_lock_acquire('fifo')");

# Each waiter, once granted, records its grant time and token, holds the
# lock briefly and releases it.
my @order = qw(a b a b b);
my @waiters;
my @czxid;    # of each waiter's node, read with zkutil while it is queued
my %seen = map { $_ => 1 } zk_ls($zk, $dir);
for my $i (0 .. $#order)
{
	my $s = bg_session($node{ $order[$i] });
	$s->query_until(qr/waiting/,
		"\\echo waiting\n"
		  . "SELECT $i AS waiter, zk_lock_acquire('fifo') AS token, extract(epoch FROM clock_timestamp()) AS granted_at, pg_sleep(0.1);\n"
		  . "SELECT zk_lock_release('fifo');\n");
	# The next waiter asks only once this one is queued in ZooKeeper.
	wait_until(sub { scalar(zk_ls($zk, $dir)) == $i + 2 }, 30, "waiter $i queued");
	my ($mine) = grep { !$seen{$_}++ } zk_ls($zk, $dir);
	$czxid[$i] = zk_stat($zk, "$dir/$mine")->{czxid};
	push @waiters, $s;
}

is(scalar(zk_ls($zk, $dir)), 6, 'one holder and five waiters in the lock directory');
$holder->query_safe("SELECT zk_lock_release('fifo')");

my @grants;
for my $i (0 .. $#waiters)
{
	my $out = $waiters[$i]->query_safe("SELECT 'done'");
	my ($w, $token, $at) = split /\|/, (split /\n/, $out)[0];
	is($w, $i, "waiter $i reports");
	push @grants, { waiter => $i, token => $token, at => $at };
	$waiters[$i]->quit;
}

my @by_time = map { $_->{waiter} } sort { $a->{at} <=> $b->{at} } @grants;
is_deeply(\@by_time, [ 0 .. 4 ], 'granted in the order they asked');
is_deeply([ map { $_->{token} } @grants ], \@czxid,
	"each waiter's token is the czxid ZooKeeper reports for its node");

$holder->quit;
wait_until(sub { !zk_ls($zk, $dir) }, 30, 'no contender node left');
done_testing();
