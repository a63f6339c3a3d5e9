# pgbouncer in front of a test's PostgreSQL nodes: pgbouncer_start writes a
# pgbouncer.ini into a temporary directory (loopback address, a free port,
# no Unix socket, auth_type trust with an auth_file naming the test's user,
# pidfile, logfile in the test's log directory), runs Debian's pgbouncer in
# the foreground and returns a ZklockTest::Pgbouncer object (this package is
# also that class: ->connstr, ->bg_session, ->psql, ->admin, ->set, ->stop).
# A pgbouncer still running at exit is stopped by pid by ZklockTest::Cleanup.
package ZklockTest::Pgbouncer;

use strict;
use warnings FATAL => 'all';

use Carp;
use Exporter 'import';
use IPC::Run;
use Time::HiRes qw(sleep time);
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use ZklockTest::Cleanup qw(@holders);
use ZklockTest::Command qw(_fatal _run);
use ZklockTest::Node ();

our @EXPORT = qw(pgbouncer_start);

our $pgbouncer = '/usr/sbin/pgbouncer';

=head1 pgbouncer

=over

=item pgbouncer_start($name, $node, %opts)

Start a pgbouncer in front of $node and wait until its admin console
answers.  Its database C<postgres> leads to $node's database postgres with
the pool's settings; %opts:

  pool_mode          ('transaction')
  default_pool_size  (2)
  databases          { alias => 'pool_mode=session pool_size=1', ... }:
                     more entries leading to $node's database postgres,
                     each with its own settings
  conf               { setting => value, ... }: more [pgbouncer] settings
                     (server_reset_query and the like)

The test's user (the one running it, the nodes' superuser) may connect
without a password and is an admin of the console (database pgbouncer).

=item $pgb->connstr($db)

A libpq connection string to $db (default postgres) through this pgbouncer.

=item $pgb->bg_session($db) / $pgb->psql($db, $sql)

ZklockTest::Node's bg_session, and a one-off psql returning
C<($exit_code, $stdout, $stderr)>, both through this pgbouncer.

=item $pgb->admin($command)

Run one command on the admin console (C<SHOW SERVERS>, C<RELOAD>, ...);
returns its rows as hash refs keyed by column name.  Dies on failure.

=item $pgb->set(%settings)

Change [pgbouncer] settings in the ini file and have pgbouncer read it
again (the console's RELOAD, which answers once the file is read).

=item $pgb->stop

Stop pgbouncer (TERM, then KILL) and reap it.  Also done at exit.

=back

=cut

sub pgbouncer_start
{
	my ($name, $node, %opts) = @_;
	my $dir = PostgreSQL::Test::Utils::tempdir("pgbouncer_$name");
	my $port = PostgreSQL::Test::Cluster::get_free_port();
	my $user = getpwuid($<);
	my $self = bless {
		name     => $name,
		node     => $node,
		dir      => $dir,
		port     => $port,
		user     => $user,
		ini      => "$dir/pgbouncer.ini",
		log      => "$PostgreSQL::Test::Utils::log_path/pgbouncer_$name.log",
		stderr   => "$dir/stderr.log",
		settings => {
			listen_addr       => '127.0.0.1',
			listen_port       => $port,
			unix_socket_dir   => '',
			auth_type         => 'trust',
			auth_file         => "$dir/userlist.txt",
			admin_users       => $user,
			pidfile           => "$dir/pgbouncer.pid",
			logfile           => "$PostgreSQL::Test::Utils::log_path/pgbouncer_$name.log",
			pool_mode         => $opts{pool_mode} // 'transaction',
			default_pool_size => $opts{default_pool_size} // 2,
			max_client_conn   => 100,
			%{ $opts{conf} // {} },
		},
		databases => { %{ $opts{databases} // {} } },
	}, 'ZklockTest::Pgbouncer';

	# With auth_type trust the user must still be in the auth_file.
	open my $fh, '>', $self->{settings}{auth_file} or die "auth_file: $!";
	print $fh qq{"$user" ""\n};
	close $fh;
	$self->_write_ini;

	$self->{run} = IPC::Run::start([ $pgbouncer, $self->{ini} ],
		'<', \undef, '>>', $self->{stderr}, '2>>', $self->{stderr});
	push @holders, $self;

	# Ready when the admin console answers.
	my $deadline = time + 30;
	until (eval { $self->admin('SHOW VERSION'); 1 })
	{
		if (!$self->{run}->pumpable || time > $deadline)
		{
			my $err = slurp_file($self->{stderr});
			$self->stop;
			_fatal("pgbouncer $name did not start:\n$err");
		}
		sleep 0.1;
	}
	note "pgbouncer $name listening on 127.0.0.1:$port, in front of node "
	  . $node->name . ", log in $self->{log}";
	return $self;
}

sub _write_ini
{
	my ($self) = @_;
	my $node = $self->{node};
	my $server = 'host=' . $node->host . ' port=' . $node->port . ' dbname=postgres';
	my $ini = "[databases]\npostgres = $server\n";
	$ini .= "$_ = $server $self->{databases}{$_}\n" for sort keys %{ $self->{databases} };
	$ini .= "\n[pgbouncer]\n";
	$ini .= "$_ = $self->{settings}{$_}\n" for sort keys %{ $self->{settings} };
	open my $fh, '>', "$self->{ini}.tmp" or die "pgbouncer.ini: $!";
	print $fh $ini;
	close $fh or die "pgbouncer.ini: $!";
	rename "$self->{ini}.tmp", $self->{ini} or die "pgbouncer.ini: $!";
	return;
}

sub connstr
{
	my ($self, $db) = @_;
	$db //= 'postgres';
	return "host=127.0.0.1 port=$self->{port} dbname=$db user=$self->{user}";
}

# psql takes the last -d it is given: the node's own comes first.
sub bg_session
{
	my ($self, $db) = @_;
	return ZklockTest::Node::bg_session($self->{node},
		extra_params => [ '-d', $self->connstr($db) ]);
}

sub psql
{
	my ($self, $db, $sql) = @_;
	my ($out, $err) = ('', '');
	my $ret = $self->{node}->psql($db // 'postgres', $sql,
		stdout => \$out, stderr => \$err,
		extra_params => [ '-d', $self->connstr($db) ]);
	return ($ret, $out, $err);
}

sub admin
{
	my ($self, $command) = @_;
	my ($rc, $out, $err) = _run(
		[ 'psql', '-X', '-A', '-P', 'footer=off', '-d', $self->connstr('pgbouncer'),
			'-c', $command ], 30);
	croak "pgbouncer $self->{name}: $command: $err" if $rc != 0;
	my ($head, @lines) = split /\n/, $out;
	return () unless defined $head;
	my @cols = split /\|/, $head, -1;
	my @rows;
	for my $line (@lines)
	{
		my @v = split /\|/, $line, -1;
		push @rows, { map { $cols[$_] => $v[$_] } 0 .. $#cols };
	}
	return @rows;
}

sub set
{
	my ($self, %settings) = @_;
	$self->{settings}{$_} = $settings{$_} for keys %settings;
	$self->_write_ini;
	$self->admin('RELOAD');
	return;
}

sub stop
{
	my ($self) = @_;
	my $h = $self->{run};
	return if !$h || $self->{done}++;
	eval { $h->kill_kill(grace => 5) if $h->pumpable; 1 };
	eval { $h->finish; 1 };
	return;
}

# What ZklockTest::Cleanup calls at exit.
sub crash
{
	my ($self) = @_;
	return $self->stop;
}

1;
