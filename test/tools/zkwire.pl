#!/usr/bin/perl
# zkwire.pl: a TCP relay on loopback between ZooKeeper clients and one
# ZooKeeper server that reads the client protocol as it passes, so that a
# test can see which requests a client sent, in which order, and can lose
# the answer to one of them (the request reaches the server and is carried
# out; its answer never reaches the client, whose connection is closed).
#
#   zkwire.pl LISTEN TARGET DIR
#
# Listens on 127.0.0.1:LISTEN and forwards every connection to
# 127.0.0.1:TARGET.  Every request a client sends is logged to DIR/ops, one
# line each: "CONN OP PATH" (CONN numbers the connections from 1, OP is the
# request's type number from ZooKeeper's protocol, PATH its path, or "-"
# for a request that has none).  A multi (14) is followed by a line per
# operation in it, "CONN 14.OP PATH", and is armed by (matched against)
# its operations' paths joined by spaces.  A file DIR/arm holding "OPS REGEX" (OPS a
# comma-separated list of type numbers) arms the relay: the next request of
# one of those types whose path matches REGEX is forwarded, and when its
# answer comes back, the answer is dropped and both ends of that connection
# are closed.  DIR/arm is removed and DIR/fired written ("CONN OP PATH")
# when the request passes.  While a file DIR/refuse exists, new connections
# are closed at once (as a server that does not answer), those open go on.
# SIGTERM ends the relay.
use strict;
use warnings;

use IO::Select;
use IO::Socket::INET;

my ($listen, $target, $dir) = @ARGV;
die "usage: zkwire.pl LISTEN TARGET DIR\n" unless defined $dir;

my $stop = 0;
$SIG{TERM} = $SIG{INT} = sub { $stop = 1 };

my $l = IO::Socket::INET->new(
	LocalAddr => '127.0.0.1',
	LocalPort => $listen,
	Listen    => 16,
	ReuseAddr => 1,
	Proto     => 'tcp') or die "zkwire.pl: cannot listen on $listen: $!\n";
my $sel = IO::Select->new($l);

# Per socket: the socket at the other end, the bytes not yet forwarded,
# whether it is the client's side, whether its first frame (the connect
# request or response, which has no header) has passed, its connection's
# number; per connection, the xid whose answer is to be lost.
my (%peer, %buf, %is_client, %started, %conn_of, %lose_xid);
my $nconn = 0;

open my $ops, '>>', "$dir/ops" or die "zkwire.pl: $dir/ops: $!\n";
$ops->autoflush(1);

# Request types whose body starts with a path.
my %has_path = map { $_ => 1 } (1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 13, 15, 16, 19, 20, 21, 104, 106);

sub drop
{
	my ($s) = @_;
	my $p = delete $peer{$s};
	for my $x ($s, $p ? $p : ())
	{
		delete $peer{$x};
		delete $buf{$x};
		delete $is_client{$x};
		delete $started{$x};
		delete $conn_of{$x};
		$sel->remove($x);
		close $x;
	}
}

sub armed
{
	open my $f, '<', "$dir/arm" or return;
	my $line = <$f>;
	close $f;
	return unless defined $line && $line =~ /^([\d,-]+)\s+(.*?)\s*$/;
	return ({ map { $_ => 1 } split /,/, $1 }, $2);
}

# The operations of a multi request's body: [type, path] each.  Each is a
# header (type, done, err) and the operation's record; a header with done
# set ends the list.
sub multi_ops
{
	my ($body) = @_;
	my $off = 0;
	my @ops;
	my $int = sub {
		my $v = unpack('l>', substr($body, $off, 4));
		$off += 4;
		return $v;
	};
	my $bytes = sub {
		my $len = $int->();
		my $v = $len > 0 ? substr($body, $off, $len) : '';
		$off += $len if $len > 0;
		return $v;
	};
	while ($off + 9 <= length $body)
	{
		my $type = $int->();
		my $done = unpack('C', substr($body, $off, 1));
		$off += 1;
		$int->();
		last if $done || $type == -1;
		my $path = $bytes->();
		push @ops, [ $type, $path ];
		if ($type == 1 || $type == 15 || $type == 19 || $type == 21)
		{
			$bytes->();
			my $nacl = $int->();
			for (1 .. ($nacl > 0 ? $nacl : 0))
			{
				$int->();
				$bytes->();
				$bytes->();
			}
			$int->();
			$off += 8 if $type == 21;
		}
		elsif ($type == 5)
		{
			$bytes->();
			$int->();
		}
		else
		{
			$int->();			# delete, check: the version
		}
	}
	return @ops;
}

# One complete frame from the client: log it, and arm the connection if it
# is the request whose answer is to be lost.
sub client_frame
{
	my ($s, $frame) = @_;
	if (!$started{$s})
	{
		$started{$s} = 1;
		return;
	}
	return if length($frame) < 8;
	my ($xid, $type) = unpack('l> l>', $frame);
	my $path = '-';
	if ($has_path{$type} && length($frame) >= 12)
	{
		my $len = unpack('l>', substr($frame, 8, 4));
		$path = substr($frame, 12, $len) if $len >= 0 && length($frame) >= 12 + $len;
	}
	my $c = $conn_of{$s};
	print $ops "$c $type $path\n";
	# A multi: each of its operations on a line of its own, and the
	# multi matched against all their paths.
	my $match = $path;
	if ($type == 14)
	{
		my @inner = multi_ops(substr($frame, 8));
		print $ops "$c 14.$_->[0] $_->[1]\n" for @inner;
		$match = join ' ', map { $_->[1] } @inner;
	}
	my ($types, $re) = armed();
	if ($types && $types->{$type} && $match =~ /$re/)
	{
		$lose_xid{$c} = $xid;
		unlink "$dir/arm";
		open my $f, '>', "$dir/fired.tmp" or die "zkwire.pl: $dir/fired.tmp: $!\n";
		print $f "$c $type $path\n";
		close $f;
		rename "$dir/fired.tmp", "$dir/fired";
	}
	return;
}

# Whether a complete frame from the server is the answer to lose.
sub lose_server_frame
{
	my ($s, $frame) = @_;
	if (!$started{$s})
	{
		$started{$s} = 1;
		return 0;
	}
	my $c = $conn_of{$s};
	return 0 unless defined $lose_xid{$c} && length($frame) >= 4;
	return unpack('l>', $frame) == $lose_xid{$c};
}

until ($stop)
{
	my @ready = $sel->can_read(0.2);
	for my $s (@ready)
	{
		if ($s == $l)
		{
			my $c = $l->accept or next;
			if (-e "$dir/refuse")
			{
				close $c;
				next;
			}
			my $t = IO::Socket::INET->new(
				PeerAddr => '127.0.0.1',
				PeerPort => $target,
				Proto    => 'tcp');
			if (!$t)
			{
				close $c;
				next;
			}
			$nconn++;
			@peer{ $c, $t } = ($t, $c);
			@buf{ $c, $t } = ('', '');
			@is_client{ $c, $t } = (1, 0);
			@started{ $c, $t } = (0, 0);
			@conn_of{ $c, $t } = ($nconn, $nconn);
			$sel->add($c, $t);
			next;
		}
		next unless $peer{$s};
		my $n = sysread($s, my $data, 65536);
		if (!$n)
		{
			drop($s);
			next;
		}
		$buf{$s} .= $data;
		my $lost = 0;
		while (length($buf{$s}) >= 4)
		{
			my $len = unpack('l>', $buf{$s});
			last if length($buf{$s}) < 4 + $len;
			my $whole = substr($buf{$s}, 0, 4 + $len, '');
			my $frame = substr($whole, 4);
			if ($is_client{$s})
			{
				client_frame($s, $frame);
			}
			elsif (lose_server_frame($s, $frame))
			{
				delete $lose_xid{ $conn_of{$s} };
				$lost = 1;
				last;
			}
			my $p = $peer{$s};
			my $off = 0;
			while ($off < length $whole)
			{
				my $w = syswrite($p, $whole, length($whole) - $off, $off);
				last unless defined $w;
				$off += $w;
			}
		}
		drop($s) if $lost;
	}
}
