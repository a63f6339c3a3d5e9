#!/usr/bin/perl
# zkrelay.pl: TCP relays on loopback through which one ZooKeeper server of a
# test ensemble reaches its peers (test/zkserver.sh, ZK_RELAYED), so that a
# test can cut that server off from the others without touching its clients.
#
#   zkrelay.pl LISTEN:TARGET ...
#
# Each pair listens on 127.0.0.1:LISTEN and forwards every connection, both
# ways, to 127.0.0.1:TARGET.  SIGUSR1 cuts: the connections stay open and
# new ones are accepted, but nothing gets through any more (what arrives is
# read and dropped), as in a network partition that drops packets: a peer
# notices only through its own timeouts.  SIGUSR2 heals: every connection
# is closed (what was dropped left their streams unusable) and new ones are
# forwarded again.  SIGTERM ends the relays.
use strict;
use warnings;

use IO::Select;
use IO::Socket::INET;

my %target;        # listening socket => target port
my %peer;          # socket => the socket at the other end
my $sel = IO::Select->new;
my ($cut, $heal, $stop) = (0, 0, 0);

$SIG{USR1} = sub { $cut = 1 };
$SIG{USR2} = sub { $heal = 1 };
$SIG{TERM} = $SIG{INT} = sub { $stop = 1 };

for my $pair (@ARGV)
{
	my ($listen, $to) = $pair =~ /^(\d+):(\d+)$/ or die "zkrelay.pl: bad pair '$pair'\n";
	my $l = IO::Socket::INET->new(
		LocalAddr => '127.0.0.1',
		LocalPort => $listen,
		Listen    => 16,
		ReuseAddr => 1,
		Proto     => 'tcp') or die "zkrelay.pl: cannot listen on $listen: $!\n";
	$target{$l} = $to;
	$sel->add($l);
}

sub drop
{
	my ($s) = @_;
	my $p = delete $peer{$s};
	for my $x ($s, $p ? $p : ())
	{
		delete $peer{$x};
		$sel->remove($x);
		close $x;
	}
}

until ($stop)
{
	if ($heal)
	{
		($cut, $heal) = (0, 0);
		drop($_) for grep { defined $peer{$_} } $sel->handles;
	}
	my @ready = $sel->can_read(1);
	for my $s (@ready)
	{
		if (defined $target{$s})
		{
			my $c = $s->accept or next;
			my $t = IO::Socket::INET->new(
				PeerAddr => '127.0.0.1',
				PeerPort => $target{$s},
				Proto    => 'tcp');
			unless ($t)
			{
				close $c;
				next;
			}
			$peer{$c} = $t;
			$peer{$t} = $c;
			$sel->add($c, $t);
			next;
		}
		next unless $peer{$s};
		my $n = sysread($s, my $buf, 65536);
		if (!$n)
		{
			drop($s);
			next;
		}
		next if $cut;
		my $off = 0;
		while ($off < $n)
		{
			my $w = syswrite($peer{$s}, $buf, $n - $off, $off);
			last unless defined $w;
			$off += $w;
		}
	}
}
