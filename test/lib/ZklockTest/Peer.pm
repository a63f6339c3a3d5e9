# Peer lock clients for the interop tests: programs built on other ZooKeeper
# lock libraries (test/peers/), driven one command at a time over their stdin
# and stdout.  peer_start, curator_peer and kazoo_peer start one and return a
# ZklockTest::Peer object (this package is also that class: ->cmd, ->send,
# ->reply, ->quit, ->crash, ->alive); peer_gets polls a peer.  A peer still
# running at exit is killed by ZklockTest::Cleanup.
package ZklockTest::Peer;

use strict;
use warnings FATAL => 'all';

use Carp;
use Exporter 'import';
use IPC::Run;
use PostgreSQL::Test::Utils;
use Test::More;
use ZklockTest::Cleanup qw(@holders);
use ZklockTest::Command qw(_fatal _run $test_dir);
use ZklockTest::Poll;

our @EXPORT = qw(peer_start curator_peer kazoo_peer peer_gets);

=head1 Peer lock clients

Programs built on other ZooKeeper lock libraries (test/peers/), driven one
command at a time over their stdin and stdout, for the interop tests.

=over

=item peer_start($name, \@cmd)

Start @cmd as a line-protocol peer (one reply line per command line).
Returns an object with ->cmd($line, $timeout_s) (the reply, chomped; the
wait defaults to 60 s, and a peer that dies or stays silent fails the test
script), ->send($line) and ->reply($timeout_s) (the same in two steps, for
a command that blocks until the test does something else), ->quit (the C<quit> command, then TERM and KILL if it does not
exit) and ->alive.  Each command and reply is noted in the test's output
unless ->{quiet} is set (C<< local $peer->{quiet} = 1 >> while polling).
The peer is killed at exit if still running.

=item curator_peer($zk) / kazoo_peer($zk)

A connected peer: test/peers/CuratorPeer.java (compiled with javac into a
temporary directory against Debian's libcurator-recipes-java jars) or
test/peers/kazoo_peer.py (run by /usr/bin/python3 with Debian's
python3-kazoo).  Commands as documented in those files.

=item peer_gets($peer, $path, $what)

Poll until the peer's "${what}_try $path" answers true (zklock's releases
do not wait for the delete); a test assertion.

=back

=cut

my @curator_jars = qw(curator-recipes curator-framework curator-client
  zookeeper zookeeper-jute guava slf4j-api slf4j-nop);

sub peer_start
{
	my ($name, $cmd) = @_;
	my ($in, $out, $err) = ('', '', '');
	my $timer = IPC::Run::timer(60);
	my $h = IPC::Run::start($cmd, '<', \$in, '>', \$out, '2>', \$err, $timer);
	$timer->reset;
	my $peer = bless {
		name  => $name,
		run   => $h,
		in    => \$in,
		out   => \$out,
		err   => \$err,
		timer => $timer,
	}, 'ZklockTest::Peer';
	push @holders, $peer;
	note "$name peer started: @$cmd";
	return $peer;
}

sub _connected_peer
{
	my ($name, $cmd, $zk) = @_;
	my $peer = peer_start($name, $cmd);
	my $reply = $peer->cmd("connect $zk->{connect}");
	_fatal("$name peer could not connect: $reply") unless $reply eq 'ok';
	return $peer;
}

sub curator_peer
{
	my ($zk) = @_;
	my $cp = join ':', map { "/usr/share/java/$_.jar" } @curator_jars;
	my $classes = PostgreSQL::Test::Utils::tempdir('curator');
	my ($rc, $out, $err) = _run(
		[ 'javac', '-nowarn', '-cp', $cp, '-d', $classes, "$test_dir/peers/CuratorPeer.java" ],
		120);
	_fatal("could not compile CuratorPeer.java:\n$out$err") if $rc != 0;
	return _connected_peer('curator', [ 'java', '-cp', "$classes:$cp", 'CuratorPeer' ], $zk);
}

sub kazoo_peer
{
	my ($zk) = @_;
	return _connected_peer('kazoo', [ '/usr/bin/python3', "$test_dir/peers/kazoo_peer.py" ], $zk);
}

sub peer_gets
{
	my ($peer, $path, $what) = @_;
	local $Test::Builder::Level = $Test::Builder::Level + 1;
	local $peer->{quiet} = 1;
	return wait_until(sub { $peer->cmd("${what}_try $path") eq 'true' }, 10,
		"the peer to get its $what");
}

# The methods of a peer (blessed into this package by peer_start).

sub alive
{
	my ($self) = @_;
	return $self->{run}->pumpable ? 1 : 0;
}

sub cmd
{
	my ($self, $line, $timeout) = @_;
	$self->send($line);
	return $self->reply($timeout);
}

# Send one command without waiting for its reply (for a blocking acquire
# that something else must end); ->reply collects it.
sub send
{
	my ($self, $line) = @_;
	croak "$self->{name} peer is not running" if $self->{done};
	croak "$self->{name} peer: '$self->{pending}' not answered yet"
	  if defined $self->{pending};
	${ $self->{in} } .= "$line\n";
	$self->{pending} = $line;
	# Hand the line to the peer now; a peer that died shows in ->reply.
	eval { $self->{run}->pump_nb; 1 };
	return;
}

sub reply
{
	my ($self, $timeout) = @_;
	my $h = $self->{run};
	my $out = $self->{out};
	my $line = delete $self->{pending};
	croak "$self->{name} peer: no command sent" unless defined $line;

	$self->{timer}->start($timeout // 60);
	$h->pump while $$out !~ /\n/ && $h->pumpable && !$self->{timer}->is_expired;
	$self->{timer}->reset;
	unless ($$out =~ s/^(.*)\n//)
	{
		my $why = $h->pumpable ? 'no reply in time' : 'it exited';
		my $err = ${ $self->{err} };
		$self->crash;
		diag("$self->{name} peer: '$line': $why\n$err");
		croak "$self->{name} peer: '$line': $why";
	}
	my $reply = $1;
	note "$self->{name}> $line => $reply" unless $self->{quiet};
	return $reply;
}

# Stop the peer: ask it to quit and give it 10 s to close its session and
# exit, then TERM and KILL; reaps the child.
sub quit
{
	my ($self) = @_;
	my $h = $self->{run};
	return if $self->{done};
	if (eval { $self->cmd('quit', 20) eq 'bye' })
	{
		$self->{timer}->start(10);
		$h->pump while $h->pumpable && !$self->{timer}->is_expired;
		$self->{timer}->reset;
	}
	$self->crash;
	return;
}

sub crash
{
	my ($self) = @_;
	my $h = $self->{run};
	return if $self->{done}++;
	eval { $h->kill_kill(grace => 5) if $h->pumpable; 1 };
	eval { $h->finish; 1 };
	return;
}

1;
