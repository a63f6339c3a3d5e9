# A relay between zklock and one ZooKeeper server that reads the client
# protocol (test/tools/zkwire.pl): zk_wire starts it; the object shows the
# requests that went through (->ops) and loses the answer to one request
# chosen by type and path (->lose_answer, ->fired).  Stopped at exit with
# the other foreign processes (ZklockTest::Cleanup's @holders).
package ZklockTest::Wire;

use strict;
use warnings FATAL => 'all';

use Exporter 'import';
use IO::Socket::INET;
use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use ZklockTest::Cleanup qw(@holders);
use ZklockTest::Command qw(_fatal $tools_dir);
use ZklockTest::Poll;

our @EXPORT = qw(zk_wire %ZK_OP);

# ZooKeeper's request type numbers (its protocol's OpCode).
our %ZK_OP = (
	create => 1, delete => 2, exists => 3, getData => 4, setData => 5, getChildren => 8, sync => 9,
	getChildren2 => 12, multi => 14, create2 => 15, createContainer => 19, createTTL => 21,
);

=head1 ZklockTest::Wire

=over

=item zk_wire($zk, $i)

Start a relay to server $i (default 1) of $zk; returns an object with
->{connect} (the host:port to give zklock.hosts).

=item $w->ops

Every request relayed so far, in order: a list of [connection number, type
number, path].  A multi (type 14) is followed by one entry per operation in
it, of type 14.OP (14.1 a create in it, 14.2 a delete).

=item $w->pause / $w->resume

Stop the relay (every connection through it closes) and start it again on
the same port.

=item $w->lose_answer(\@types, $regex) / $w->fired

Arm the relay: the next request of one of @types whose path matches $regex
goes through, its answer is dropped and its connection closed.  ->fired is
[connection, type, path] once that request has passed, undef before.

=item $w->refuse / $w->admit

From refuse on, new connections are closed at once (those open go on),
until admit.

=back

=cut

sub zk_wire
{
	my ($zk, $i) = @_;
	$i //= 1;
	my $dir = PostgreSQL::Test::Utils::tempdir('wire');
	my $port = PostgreSQL::Test::Cluster::get_free_port();
	my $tool = "$tools_dir/zkwire.pl";
	my $h = IPC::Run::start([ 'perl', $tool, $port, $zk->{ports}[ $i - 1 ], $dir ],
		'<', \undef, '>>', "$dir/out", '2>>', "$dir/out");
	my $w = bless { run => $h, dir => $dir, port => $port, target => $zk->{ports}[ $i - 1 ],
		connect => "127.0.0.1:$port" },
	  'ZklockTest::Wire';
	push @holders, $w;
	wait_until(sub { IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $port) }, 30,
		'the wire relay listens') or _fatal("zkwire.pl did not start: " . slurp_file("$dir/out"));
	return $w;
}

sub ops
{
	my ($self) = @_;
	return () unless -f "$self->{dir}/ops";
	return map { [ split / /, $_, 3 ] } split /\n/, slurp_file("$self->{dir}/ops");
}

sub lose_answer
{
	my ($self, $types, $regex) = @_;
	unlink "$self->{dir}/fired";
	open my $f, '>', "$self->{dir}/arm.tmp" or die "$self->{dir}/arm.tmp: $!";
	print $f join(',', @$types) . " $regex\n";
	close $f;
	rename "$self->{dir}/arm.tmp", "$self->{dir}/arm" or die "arm: $!";
	return;
}

sub fired
{
	my ($self) = @_;
	return undef unless -f "$self->{dir}/fired";
	return [ split / /, slurp_file("$self->{dir}/fired") =~ s/\n$//r, 3 ];
}

# Stop the relay (its connections close) and start it again on the same
# port: meanwhile no client reaches ZooKeeper through it.
sub pause
{
	my ($self) = @_;
	eval { $self->{run}->kill_kill(grace => 5); 1 };
	eval { $self->{run}->finish; 1 };
	return;
}

sub resume
{
	my ($self) = @_;
	$self->{run} = IPC::Run::start([ 'perl', "$tools_dir/zkwire.pl", $self->{port}, $self->{target}, $self->{dir} ],
		'<', \undef, '>>', "$self->{dir}/out", '2>>', "$self->{dir}/out");
	wait_until(sub { IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $self->{port}) }, 30,
		'the wire relay listens again');
	return;
}

sub refuse
{
	my ($self) = @_;
	open my $f, '>', "$self->{dir}/refuse" or die "$self->{dir}/refuse: $!";
	close $f;
	return;
}

sub admit
{
	my ($self) = @_;
	unlink "$self->{dir}/refuse";
	return;
}

sub crash
{
	my ($self) = @_;
	return if $self->{done}++;
	eval { $self->{run}->kill_kill(grace => 5); 1 };
	eval { $self->{run}->finish; 1 };
	return;
}

1;
