# Helpers for zklock's TAP tests: throw-away ZooKeeper servers (through
# test/zkserver.sh), PostgreSQL nodes with zklock loaded, an independent view
# of ZooKeeper (through test/tools/zkutil) and polling.
#
# Usage, from a test in test/t/ run by prove from the repository top with
# PERL5LIB including PGXS's src/test/perl:
#
#   use FindBin;
#   use lib "$FindBin::RealBin/../lib";
#   use ZklockTest;
#
#   my $zk = zk_start(3);                       # ensemble; stopped at exit
#   my $a  = zklock_node('a', $zk);             # started, extension created
#   my $s  = bg_session($a);                    # BackgroundPsql handle
#   $s->query_safe("SELECT zk_lock_acquire('x')");
#   my @kids = zk_ls($zk, '/zklock/x');
#   wait_until(sub { !zk_ls($zk, '/zklock/x') }, 30, 'lock node removed');
#
# Everything this module starts (ZooKeeper servers, foreign holders made with
# zk_hold) is stopped by pid in an END block, whatever way the test ends.
package ZklockTest;

use strict;
use warnings FATAL => 'all';

use Carp;
use Cwd qw(abs_path);
use Exporter 'import';
use File::Basename qw(dirname);
use IPC::Run;
use Time::HiRes qw(sleep time);
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

our @EXPORT = qw(
  zk_start zk_stop zk_stop_one zk_start_one zk_start_all zk_running
  zklock_node
  zkutil zk_ls zk_get zk_stat zk_create zk_delete zk_hold
  zk_fourlw zk_mntr zk_wchc zk_wchp
  wait_until bg_session
);

my $test_dir = abs_path(dirname(__FILE__) . '/..');
my $zkserver = "$test_dir/zkserver.sh";
my $tools_dir = "$test_dir/tools";
my $zkutil = "$tools_dir/zkutil";

# What to clean up at exit; only the process that started things does it
# (IPC::Run children that fail to exec also run END blocks).
my $owner_pid = $$;
my @zk_all;
my @holders;
my @nodes;

# A runner giving up on us (run_all.sh's stage timeout, Ctrl-C) sends a
# signal: exit through END blocks so servers are stopped, not orphaned.
for my $sig (qw(TERM INT HUP))
{
	$SIG{$sig} = sub { diag("caught SIG$sig, stopping servers"); exit 1; };
}

# Report on the TAP stream too: plain STDERR goes to the test's log file.
sub _fatal
{
	my ($msg) = @_;
	diag($msg);
	croak $msg;
}

sub _run
{
	my ($cmd, $timeout) = @_;
	my ($out, $err) = ('', '');
	my $ok = eval {
		IPC::Run::run($cmd, '<', \undef, '>', \$out, '2>', \$err,
			IPC::Run::timeout($timeout // 90));
		1;
	};
	return (-1, $out, "@$cmd: $@") unless $ok;
	return ($? >> 8, $out, $err);
}

=pod

=head1 ZooKeeper servers

=over

=item zk_start($n)

Start $n servers (1: standalone; 3: ensemble) on free loopback ports in a
fresh temporary directory.  Returns a hash:
C<< { connect => '127.0.0.1:p1,...', n => $n, dir => ..., ports => [...] } >>.

=cut

sub zk_start
{
	my ($n) = @_;
	$n //= 1;
	my $dir = PostgreSQL::Test::Utils::tempdir('zk');
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

=head1 PostgreSQL nodes

=over

=item zklock_node($name, $zk, %opts)

A started PostgreSQL::Test::Cluster node with zklock preloaded, pointed at
$zk, and C<CREATE EXTENSION zklock> done in database postgres.  Options:
session_timeout (default '10s'), hosts (default $zk->{connect}), root,
conf (extra postgresql.conf text or array ref of lines), start => 0 (only
init and configure), extension => 0 (skip CREATE EXTENSION).

=cut

sub zklock_node
{
	my ($name, $zk, %opts) = @_;
	my $node = PostgreSQL::Test::Cluster->new($name);
	push @nodes, $node;
	$node->init;

	my $hosts = $opts{hosts} // $zk->{connect};
	my $timeout = $opts{session_timeout} // '10s';
	my $conf = "shared_preload_libraries = 'zklock'\n"
	  . "zklock.hosts = '$hosts'\n"
	  . "zklock.session_timeout = '$timeout'\n";
	$conf .= "zklock.root = '$opts{root}'\n" if defined $opts{root};
	if (defined $opts{conf})
	{
		$conf .= ref $opts{conf} ? join("\n", @{ $opts{conf} }) : $opts{conf};
	}
	$node->append_conf('postgresql.conf', $conf);

	return $node if defined $opts{start} && !$opts{start};
	$node->start;
	$node->safe_psql('postgres', 'CREATE EXTENSION zklock')
	  unless defined $opts{extension} && !$opts{extension};
	return $node;
}

=item bg_session($node, %opts)

A PostgreSQL::Test::BackgroundPsql session on database postgres (or
$opts{dbname}) that keeps going after SQL errors, so a test can check them:
C<< my ($out, $failed) = $s->query($sql) >>, C<< $s->{stderr} >>.  Call
C<< $s->quit >> when done.  Other %opts go to background_psql.

=cut

sub bg_session
{
	my ($node, %opts) = @_;
	my $db = delete $opts{dbname} // 'postgres';
	$opts{on_error_stop} //= 0;
	return $node->background_psql($db, %opts);
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

package ZklockTest;

END
{
	my $exit_code = $?;
	if ($$ == $owner_pid)
	{
		$_->crash for @holders;
		# Nodes first, so their workers do not log a ZooKeeper outage at exit
		# (Cluster.pm's own END runs after this one and finds them stopped).
		eval { $_->teardown_node; 1 } for @nodes;
		for my $zk (@zk_all)
		{
			system('bash', $zkserver, 'stop', $zk->{dir}) == 0
			  or print STDERR "could not stop ZooKeeper in $zk->{dir}\n";
		}
	}
	$? = $exit_code;
}

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

=back

=cut

push @EXPORT, qw(peer_start curator_peer kazoo_peer sql_result bg_result peer_gets zk_wait_empty
  worker_pid worker_pid_os proc_state zk_base zk_status_of lock_state committed queue_waiter
  bg_collect waiter_grant held_znode diag_locks);

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

package ZklockTest::Peer;

use Carp;
use IPC::Run;
use Test::More;

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

package ZklockTest;


=head1 Small helpers of the interop tests

=over

=item sql_result($node, $sql) / bg_result($session, $sql)

The output of $sql, or the error text (trailing blanks cut) when it failed:
in a fresh session of $node that ends at once (releasing what it took), or
in background session $session.

=item peer_gets($peer, $path, $what)

Poll until the peer's "${what}_try $path" answers true (zklock's releases
do not wait for the delete); a test assertion.

=item zk_wait_empty($zk, $path, $what)

Wait until ZooKeeper has no child under $path; a test assertion.

=back

=cut

sub sql_result
{
	my ($node, $sql) = @_;
	my ($ret, $out, $err) = $node->psql('postgres', $sql);
	return $ret == 0 ? $out : ($err =~ s/\s+$//r);
}

sub bg_result
{
	my ($s, $sql) = @_;
	$s->{stderr} = '';
	my ($out, $failed) = $s->query($sql);
	return $failed ? ($s->{stderr} =~ s/\s+$//r) : $out;
}

sub peer_gets
{
	my ($peer, $path, $what) = @_;
	local $Test::Builder::Level = $Test::Builder::Level + 1;
	local $peer->{quiet} = 1;
	return wait_until(sub { $peer->cmd("${what}_try $path") eq 'true' }, 10,
		"the peer to get its $what");
}

sub zk_wait_empty
{
	my ($zk, $path, $what) = @_;
	local $Test::Builder::Level = $Test::Builder::Level + 1;
	return wait_until(sub { !zk_ls($zk, $path) }, 15, "no node under $path $what");
}


=head1 The zklock worker as a process

=over

=item worker_pid_os($node)

The pid of the postmaster's child titled "zklock worker", from /proc; ''
when there is none (or the cluster is down).

=item worker_pid($node)

pg_stat_activity's pid of the worker if the cluster answers and shows it,
else worker_pid_os's.

=item proc_state($pid)

The process state letter from /proc (R, S, T for stopped, ...), '' when
the process is gone.

=back

=cut

sub worker_pid_os
{
	my ($node) = @_;
	my $pm = $node->{_pid} // return '';
	for my $stat (glob '/proc/[0-9]*/stat')
	{
		my ($pid) = $stat =~ m{/proc/(\d+)/stat};
		open(my $fh, '<', $stat) or next;
		my $line = <$fh> // '';
		close $fh;
		my ($ppid) = $line =~ /\)\s+\S+\s+(\d+)/ or next;
		next unless $ppid == $pm;
		open(my $ch, '<', "/proc/$pid/cmdline") or next;
		my $cmd = do { local $/; <$ch> } // '';
		close $ch;
		return $pid if $cmd =~ /zklock worker/;
	}
	return '';
}

sub worker_pid
{
	my ($node) = @_;
	my ($ret, $pid) = $node->psql('postgres',
		"SELECT pid FROM pg_stat_activity WHERE backend_type = 'zklock worker'");
	return $pid if $ret == 0 && defined $pid && $pid ne '';
	return worker_pid_os($node);
}

sub proc_state
{
	my ($pid) = @_;
	open(my $fh, '<', "/proc/$pid/stat") or return '';
	my $line = <$fh> // '';
	close $fh;
	return $line =~ /\)\s+(\S)/ ? $1 : '';
}


=head1 Small helpers of the fault tests

=over

=item zk_base($path)

The last component of a ZooKeeper path: the name under which zk_ls lists
the node.

=item zk_status_of($node)

Every column of $node's zk_status() as a hash ref (state, session_id,
negotiated_timeout, lost, ...), as psql prints them; a NULL reads as ''.

=item lock_state($node, $pid, $name)

The state zk_locks shows for lock $name of backend $pid of $node ('held',
'waiting', 'lost', ...), or 'none' when it has no such entry.

=item committed($node, $tag)

How many rows of table work in $node carry tag $tag (as text).

=item queue_waiter($node, $zk, $name, $timeout)

Start a session of $node that waits for lock $name (C<$timeout> an interval
such as '20s') and wait until zk_locks shows it waiting and the lock's
directory in ZooKeeper has two children (the holder and this waiter); a
test assertion when that does not happen within 15 s.  The session prints
C<granted|t|epoch of the grant> once granted: read it with
C<< $w->{s}->query("SELECT 'sync'") >>.  Returns
C<< { s => $session, pid => $backend_pid } >>.

=item bg_collect($session)

Wait for what background session $session is running, and return what it
printed since its last query and its errors: C<($out, $err)>.  Its stderr
is cleared.

=item waiter_grant($waiter)

Wait for a waiter started by queue_waiter and return C<($at, $out, $err)>:
$at is the epoch at which it was granted (undef if it was not), $out and
$err as bg_collect's.

=item held_znode($node, $pid, $name)

The znode by which backend $pid of $node holds lock $name, as zk_locks
shows it; '' when it does not hold it.

=item diag_locks($what, $zk, \@names, @nodes)

For a failed test: diag the children of each lock's directory in ZooKeeper
and the zk_locks of each node, headed by $what.

=back

=cut

sub zk_base
{
	my ($path) = @_;
	return (split m{/}, $path)[-1];
}

sub zk_status_of
{
	my ($node) = @_;
	# Expanded unaligned output: one "column|value" line per column.
	my $out = $node->safe_psql('postgres', 'SELECT * FROM zk_status()', extra_params => ['-x']);
	return { map { split /\|/, $_, 2 } split /\n/, $out };
}

sub lock_state
{
	my ($node, $pid, $name) = @_;
	return $node->safe_psql('postgres',
		"SELECT coalesce((SELECT state FROM zk_locks WHERE pid = $pid AND name = '$name'), 'none')");
}

sub committed
{
	my ($node, $tag) = @_;
	return $node->safe_psql('postgres', "SELECT count(*) FROM work WHERE tag = '$tag'");
}

sub queue_waiter
{
	my ($node, $zk, $name, $timeout) = @_;
	local $Test::Builder::Level = $Test::Builder::Level + 1;
	my $s = bg_session($node);
	my $pid = $s->query_safe('SELECT pg_backend_pid()');
	$s->query_until(qr/waiting\n/,
		"\\echo waiting\nSELECT 'granted', zk_lock_acquire('$name', '$timeout') > 0, extract(epoch FROM clock_timestamp());\n");
	wait_until(sub { lock_state($node, $pid, $name) eq 'waiting' && zk_ls($zk, "/zklock/$name") == 2 },
		15, uc($node->name) . " queued for $name");
	return { s => $s, pid => $pid };
}

sub bg_collect
{
	my ($s) = @_;
	my ($out) = $s->query("SELECT 'sync'");
	my $err = $s->{stderr};
	$s->{stderr} = '';
	return ($out, $err);
}

sub waiter_grant
{
	my ($w) = @_;
	my ($out, $err) = bg_collect($w->{s});
	my ($at) = $out =~ /^granted\|t\|([\d.]+)$/m;
	return ($at, $out, $err);
}

sub held_znode
{
	my ($node, $pid, $name) = @_;
	return $node->safe_psql('postgres',
		"SELECT coalesce((SELECT znode FROM zk_locks WHERE pid = $pid AND name = '$name' AND state = 'held'), '')");
}

sub diag_locks
{
	my ($what, $zk, $names, @nodes) = @_;
	diag("$what: ZooKeeper children of /zklock/$_: " . join(', ', zk_ls($zk, "/zklock/$_"))) for @$names;
	for my $node (@nodes)
	{
		my ($ret, $out) = $node->psql('postgres', 'SELECT pid, name, scope, state, znode FROM zk_locks ORDER BY pid');
		diag('zk_locks of ' . $node->name . ":\n$out");
	}
	return;
}

1;
