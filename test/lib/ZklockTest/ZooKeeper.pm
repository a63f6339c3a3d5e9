# Throw-away ZooKeeper servers for the tests (through test/zkserver.sh) and an
# independent view of them (through test/tools/zkutil, so that what a test
# sees does not depend on the extension): zk_start and the other server
# controls, zkutil, zk_ls/zk_get/zk_stat/zk_create/zk_delete, zk_wait_empty
# and zk_base, foreign lock holders (zk_hold and its ZklockTest::Holder
# objects), four-letter words (zk_fourlw, zk_mntr) and watch maps (zk_wchc,
# zk_wchp).  Servers and holders are stopped at exit by ZklockTest::Cleanup.
package ZklockTest::ZooKeeper;

use strict;
use warnings FATAL => 'all';

use Exporter 'import';
use IPC::Run;
use Time::HiRes qw(sleep time);
use PostgreSQL::Test::Utils;
use Test::More;
use ZklockTest::Cleanup qw(@zk_all @holders);
use ZklockTest::Command qw(_fatal _run $zkserver $tools_dir $zkutil);
use ZklockTest::Poll;

our @EXPORT = qw(
  zk_start zk_stop zk_stop_one zk_start_one zk_start_all zk_running zk_cut zk_heal
  zk_set_counter zk_next_sequence
  zkutil zk_ls zk_nchildren zk_get zk_stat zk_create zk_delete zk_hold
  zk_session_counts
  zk_fourlw zk_mntr zk_wchc zk_wchp zk_wait_empty zk_base
);

=pod

=head1 ZooKeeper servers

=over

=item zk_start($n, %opts)

Start $n servers (1: standalone; 3: ensemble) on free loopback ports in a
fresh temporary directory.  Returns a hash:
C<< { connect => '127.0.0.1:p1,...', n => $n, dir => ..., ports => [...] } >>.
Options: tick_time (ms) and sync_limit (ticks) of every server; relayed =>
$i: server $i and its peers reach each other through relays that zk_cut
silences.

=item zk_cut($zk) / zk_heal($zk)

Silence the relays of the server started as relayed (it stays up and
keeps its clients, but hears nothing from its peers, nor they from it,
until their own timeouts tell them), or let them through again.

=cut

sub zk_start
{
	my ($n, %opts) = @_;
	$n //= 1;
	my $dir = PostgreSQL::Test::Utils::tempdir('zk');
	local $ENV{ZK_TICK_TIME} = $opts{tick_time} if $opts{tick_time};
	local $ENV{ZK_SYNC_LIMIT} = $opts{sync_limit} if $opts{sync_limit};
	local $ENV{ZK_RELAYED} = $opts{relayed} if $opts{relayed};
	my ($rc, $out, $err) = _run([ 'bash', $zkserver, 'start', $dir, $n ], 120);
	if ($rc != 0)
	{
		# zkserver.sh stops what it started when start fails.
		_fatal("could not start ZooKeeper ($n servers):\n$err");
	}
	chomp $out;
	my $zk = {
		connect => $out,
		n       => $n,
		dir     => $dir,
		ports   => [ map { slurp_file("$dir/zk$_.port") =~ s/\s+//gr } 1 .. $n ],
	};
	push @zk_all, $zk;
	note "ZooKeeper ($n) at $zk->{connect}, files in $dir";
	return $zk;
}

=item zk_stop($zk)

Stop every server of $zk (TERM, then KILL) and wait for them to exit.

=item zk_stop_one($zk, $i) / zk_start_one($zk, $i, no_quorum_wait => 1)

Stop or restart server $i (1-based), keeping its data.  zk_start_one waits
until the server serves requests, unless no_quorum_wait is given (needed when
it cannot form a quorum yet).

=item zk_start_all($zk)

Restart every stopped server of $zk, then wait until all serve requests.

=item zk_running($zk, $i)

True if server $i's process is alive.

=cut

sub zk_stop
{
	my ($zk) = @_;
	my ($rc, $out, $err) = _run([ 'bash', $zkserver, 'stop', $zk->{dir} ]);
	_fatal("could not stop ZooKeeper in $zk->{dir}: $err") if $rc != 0;
	return;
}

sub zk_stop_one
{
	my ($zk, $i) = @_;
	my ($rc, $out, $err) =
	  _run([ 'bash', $zkserver, 'stop-one', $zk->{dir}, $i ]);
	_fatal("could not stop ZooKeeper server $i: $err") if $rc != 0;
	note "ZooKeeper server $i stopped";
	return;
}

sub zk_start_one
{
	my ($zk, $i, %opts) = @_;
	my @cmd = ('bash', $zkserver, 'start-one', $zk->{dir}, $i);
	push @cmd, '--no-quorum-wait' if $opts{no_quorum_wait};
	my ($rc, $out, $err) = _run(\@cmd, 120);
	_fatal("could not restart ZooKeeper server $i:\n$err") if $rc != 0;
	note "ZooKeeper server $i started";
	return;
}

=item zk_set_counter($zk, $path, $next)

Stop the standalone server of $zk, set the child counter of $path (the
number its next sequential child gets) to $next in its data directory with
ZooKeeper's own classes (test/tools/ZkSetCversion.java), and start it again.
Clients see their sessions' connection drop meanwhile.

=item zk_next_sequence($zk, $path)

The number the next sequential child of $path gets, from its Stat (the
cversion is twice the count of creates less the children, in 32 bits).

=cut

sub zk_set_counter
{
	my ($zk, $path, $next) = @_;
	_fatal('zk_set_counter needs a standalone server') if $zk->{n} != 1;
	my $cp = join ':', map { "/usr/share/java/$_.jar" } qw(zookeeper zookeeper-jute slf4j-api slf4j-nop);
	my $classes = PostgreSQL::Test::Utils::tempdir('zkset');
	my ($rc, $out, $err) =
	  _run([ 'javac', '-nowarn', '-cp', $cp, '-d', $classes, "$tools_dir/ZkSetCversion.java" ], 120);
	_fatal("could not compile ZkSetCversion.java:\n$out$err") if $rc != 0;
	zk_stop_one($zk, 1);
	($rc, $out, $err) = _run([ 'java', '-cp', "$classes:$cp", 'ZkSetCversion', "$zk->{dir}/zk1/data", $path, $next ], 120);
	_fatal("ZkSetCversion failed (exit $rc):\n$out$err") if $rc != 0;
	chomp $out;
	note "child counter of $path: $out (before, after)";
	zk_start_one($zk, 1);
	return;
}

sub zk_next_sequence
{
	my ($zk, $path) = @_;
	my $st = zk_stat($zk, $path);
	return undef unless defined $st;
	return (($st->{cversion} % 2**32) + $st->{numChildren}) / 2;
}

sub _relay_command
{
	my ($zk, $what) = @_;
	my ($rc, $out, $err) = _run([ 'bash', $zkserver, $what, $zk->{dir} ]);
	_fatal("zkserver.sh $what: $err") if $rc != 0;
	note "ZooKeeper relays: $what";
	return;
}

sub zk_cut { _relay_command($_[0], 'cut') }
sub zk_heal { _relay_command($_[0], 'heal') }

sub zk_running
{
	my ($zk, $i) = @_;
	my $pidfile = "$zk->{dir}/zk$i.pid";
	return 0 unless -f $pidfile;
	my $pid = slurp_file($pidfile) =~ s/\s+//gr;
	return kill(0, $pid) ? 1 : 0;
}

sub zk_start_all
{
	my ($zk) = @_;
	my @stopped = grep { !zk_running($zk, $_) } 1 .. $zk->{n};
	# Alone, a restarted member cannot serve; wait for quorum once all are up.
	zk_start_one($zk, $_, no_quorum_wait => 1) for @stopped;
	wait_until(
		sub {
			!grep { (zk_fourlw($zk, 'srvr', $_) // '') !~ /^Mode: (standalone|leader|follower)/m }
			  1 .. $zk->{n};
		},
		60,
		'ZooKeeper servers serving again') or _fatal('ZooKeeper did not recover');
	return;
}

=back

=head1 Looking at ZooKeeper

These use test/tools/zkutil (built on first use if missing), so what they
show does not depend on the extension.

=over

=item zkutil($zk_or_hosts, @args)

Run zkutil; returns (exit status, stdout, stderr).  Status 3 means the node
does not exist, 2 that ZooKeeper could not be reached.

=cut

sub _ensure_zkutil
{
	return if -x $zkutil;
	my ($rc, $out, $err) = _run([ 'make', '-s', '-C', $tools_dir ], 120);
	_fatal("could not build $zkutil:\n$out$err") if $rc != 0;
}

sub zkutil
{
	my ($zk, @args) = @_;
	_ensure_zkutil();
	my $hosts = ref $zk ? $zk->{connect} : $zk;
	return _run([ $zkutil, $hosts, @args ], 60);
}

# zkutil that must succeed or report a missing node (returns undef then).
sub _zkutil_or_nonode
{
	my ($zk, @args) = @_;
	my ($rc, $out, $err) = zkutil($zk, @args);
	return undef if $rc == 3;
	_fatal("zkutil @args failed (exit $rc): $err") if $rc != 0;
	return $out;
}

=item zk_ls($zk, $path)

Children of $path, sorted; an empty list when $path does not exist.

=item zk_get($zk, $path)

The node's data, or undef when it does not exist.

=item zk_stat($zk, $path)

Hash ref (czxid, ephemeralOwner (hex string), numChildren, version, ...), or
undef when the node does not exist.

=item zk_create($zk, $path, $data, @flags)

Create a node (flags as zkutil's: '--ephemeral-sequential', '--parents', ...)
and return the created path.  Ephemeral nodes vanish at once, since zkutil's
session ends: use zk_hold for a holder that stays.

=item zk_delete($zk, $path)

Delete $path; returns false if it did not exist.

=cut

sub zk_ls
{
	my ($zk, $path) = @_;
	my $out = _zkutil_or_nonode($zk, 'ls', $path);
	return () unless defined $out;
	return split /\n/, $out;
}

sub zk_nchildren
{
	my @kids = zk_ls(@_);
	return scalar(@kids);
}

sub zk_get
{
	my ($zk, $path) = @_;
	return _zkutil_or_nonode($zk, 'get', $path);
}

sub zk_stat
{
	my ($zk, $path) = @_;
	my $out = _zkutil_or_nonode($zk, 'stat', $path);
	return undef unless defined $out;
	return { map { split /=/, $_, 2 } split /\n/, $out };
}

sub zk_create
{
	my ($zk, $path, $data, @flags) = @_;
	my @args = ('create', $path);
	push @args, $data if defined $data;
	my ($rc, $out, $err) = zkutil($zk, @args, @flags);
	_fatal("zkutil create $path failed (exit $rc): $err") if $rc != 0;
	chomp $out;
	return $out;
}

sub zk_delete
{
	my ($zk, $path) = @_;
	return defined _zkutil_or_nonode($zk, 'delete', $path);
}

=item zk_hold($zk, $path, %opts)

A foreign lock holder: a zkutil process creates $path (ephemeral sequential
by default, parents created as container nodes, like Curator) and keeps its
session open.  Options: data, session_timeout (ms, default 10000), hold
(seconds, default 3600), flags (array ref replacing the default flags).
Returns an object with ->{path} (the created node), ->release (clean close:
the node goes at once), ->crash (SIGKILL: the node stays until the session
expires) and ->alive.

=cut

sub zk_hold
{
	my ($zk, $path, %opts) = @_;
	_ensure_zkutil();
	my @flags = $opts{flags} ? @{ $opts{flags} } : ('--ephemeral-sequential', '--parents');
	my @cmd = ($zkutil, $zk->{connect}, 'create', $path);
	push @cmd, $opts{data} if defined $opts{data};
	push @cmd, @flags, '--hold', $opts{hold} // 3600;
	push @cmd, '--session-timeout', $opts{session_timeout} if $opts{session_timeout};

	my ($out, $err) = ('', '');
	my $timer = IPC::Run::timer(30);
	my $h = IPC::Run::start(\@cmd, '<', \undef, '>', \$out, '2>', \$err, $timer);
	my $holder = bless { run => $h, out => \$out, err => \$err }, 'ZklockTest::Holder';
	push @holders, $holder;
	$h->pump until $out =~ /\n/ || !$h->pumpable || $timer->is_expired;
	unless ($out =~ /^(\S+)\n/)
	{
		$holder->crash;
		_fatal("zk_hold $path: no node created: $err");
	}
	$holder->{path} = $1;
	# Only creation was bounded; the hold itself lasts as long as asked.
	$timer->reset;
	note "foreign holder has $holder->{path}";
	return $holder;
}

=item zk_fourlw($zk, $word, $i)

Raw reply of four-letter word $word from server $i (default: the first that
is running); undef if it cannot be reached.

=item zk_session_counts($zk, $session_id)

ZooKeeper's own counts for one client session (its id as zk_status shows
it, 0x...), from the cons word of the server it is connected to: requests
(the last request's xid: libzookeeper numbers its requests one by one, and
pings, watch events and authentication do not count), received (packets
from the client, pings included) and sent (answers, pings' included, and
watch notifications).  Between two readings, sent - received is the number
of notifications once every request sent has been answered.  undef if no
running server has the session.

=item zk_mntr($zk, $i)

The mntr output as a hash ref (zk_znode_count => ..., ...).

=item zk_wchc($zk) / zk_wchp($zk)

Watches summed over every running server: wchc as hash ref session id =>
[paths], wchp as hash ref path => [session ids].

=cut

sub zk_fourlw
{
	my ($zk, $word, $i) = @_;
	$i //= (grep { zk_running($zk, $_) } 1 .. $zk->{n})[0] // 1;
	$word = 'stat4' if $word eq 'stat';
	my ($rc, $out, $err) = zkutil("127.0.0.1:$zk->{ports}[$i - 1]", $word);
	return $rc == 0 ? $out : undef;
}

sub zk_session_counts
{
	my ($zk, $session_id) = @_;
	my $want = lc($session_id) =~ s/^0x0*//r;
	for my $i (grep { zk_running($zk, $_) } 1 .. $zk->{n})
	{
		my $out = zk_fourlw($zk, 'cons', $i) // next;
		for my $line (split /\n/, $out)
		{
			my ($fields) = $line =~ /\((.*)\)\s*$/ or next;
			my %f = map { /^(\w+)=(.*)$/ ? ($1 => $2) : () } split /,/, $fields;
			next unless defined $f{sid} && (lc($f{sid}) =~ s/^0x0*//r) eq $want;
			return {
				requests => hex($f{lcxid}),
				received => $f{recved},
				sent     => $f{sent},
				server   => $i,
			};
		}
	}
	return undef;
}

sub zk_mntr
{
	my ($zk, $i) = @_;
	my $out = zk_fourlw($zk, 'mntr', $i);
	_fatal('mntr: ZooKeeper not reachable') unless defined $out;
	return { map { /^(\S+)\t(.*)$/ ? ($1 => $2) : () } split /\n/, $out };
}

# Parse wchc/wchp replies: a key line, then tab-indented values.
sub _watch_map
{
	my ($zk, $word) = @_;
	my %map;
	for my $i (grep { zk_running($zk, $_) } 1 .. $zk->{n})
	{
		my $out = zk_fourlw($zk, $word, $i) // next;
		my $key;
		for my $line (split /\n/, $out)
		{
			if ($line =~ /^\t(.+)$/) { push @{ $map{$key} }, $1 if defined $key }
			elsif ($line =~ /^(\S+)$/) { $key = $1; $map{$key} //= [] }
		}
	}
	return \%map;
}

sub zk_wchc { return _watch_map($_[0], 'wchc') }
sub zk_wchp { return _watch_map($_[0], 'wchp') }

=back

=head1 Small helpers on ZooKeeper paths

=over

=item zk_wait_empty($zk, $path, $what)

Wait until ZooKeeper has no child under $path; a test assertion.

=item zk_base($path)

The last component of a ZooKeeper path: the name under which zk_ls lists
the node.

=back

=cut

sub zk_wait_empty
{
	my ($zk, $path, $what) = @_;
	local $Test::Builder::Level = $Test::Builder::Level + 1;
	return wait_until(sub { !zk_ls($zk, $path) }, 15, "no node under $path $what");
}

sub zk_base
{
	my ($path) = @_;
	return (split m{/}, $path)[-1];
}

package ZklockTest::Holder;

use IPC::Run;

sub alive
{
	my ($self) = @_;
	return $self->{run}->pumpable ? 1 : 0;
}

sub _end
{
	my ($self, $signal) = @_;
	my $h = $self->{run};
	return if $self->{done}++;
	eval { $h->signal($signal) if $h->pumpable; 1 };
	# kill_kill: TERM, then KILL after the grace period; reaps the child.
	eval { $h->kill_kill(grace => 5); 1 };
	eval { $h->finish; 1 };
	return;
}

sub release { $_[0]->_end('TERM') }
sub crash   { $_[0]->_end('KILL') }

1;
