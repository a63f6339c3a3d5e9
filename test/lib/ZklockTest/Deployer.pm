# Deployers for the recipe tests (041 and 112 alembic, 114 Django and the
# wrapper of the other tools): a deployer is a process a test starts in the
# background and waits for, as a deploy pipeline would start a migration
# tool on each host.  deployer_start runs a command and returns its record
# ({name}, {h}, {out}, {err}); deployer_finish waits for it and sets {rc}
# (-1: stopped after its time limit) and {upgrades}, alembic's "Running
# upgrade" lines as "from->to" words; deployer_ended tells whether it has
# ended without waiting.  Whatever way a test ends, the deployers still
# running are stopped by pid, before ZklockTest::Cleanup's END block stops
# the servers they talk to.
package ZklockTest::Deployer;

use strict;
use warnings FATAL => 'all';

use Exporter 'import';
use IPC::Run;
use Test::More;
use ZklockTest::Cleanup qw($owner_pid);

our @EXPORT = qw(deployer_start deployer_finish deployer_ended);

# The recipes' Python writes no __pycache__ into the tree it is run from.
$ENV{PYTHONDONTWRITEBYTECODE} = 1;

my @running;

# Compiled after Cleanup.pm's END (loaded above), so it runs before it.
END
{
	if ($$ == $owner_pid)
	{
		eval { $_->{h}->kill_kill(grace => 2) } for @running;
	}
}

# Start @$cmd in the background as deployer $name.  %opt: env (a hash of
# environment variables set for this process only), dir (its working
# directory), timeout (seconds before deployer_finish stops it; 90).
sub deployer_start
{
	my ($name, $cmd, %opt) = @_;
	my $d = { name => $name, out => '', err => '' };
	my %env = %{ $opt{env} // {} };
	local @ENV{ keys %env } = values %env;
	my @init = defined $opt{dir} ? (init => sub { chdir $opt{dir} or die "chdir $opt{dir}: $!" }) : ();
	$d->{h} = IPC::Run::start($cmd, '<', \undef, '>', \$d->{out}, '2>', \$d->{err}, @init,
		IPC::Run::timeout($opt{timeout} // 90));
	push @running, $d;
	return $d;
}

# Wait for deployer $d to end; its output goes to the test's log.
sub deployer_finish
{
	my ($d) = @_;
	if (eval { $d->{h}->finish; 1 })
	{
		$d->{rc} = $d->{h}->full_result(0) >> 8;
	}
	else
	{
		diag("$d->{name}: $@");
		eval { $d->{h}->kill_kill(grace => 2) };
		$d->{rc} = -1;
	}
	@running = grep { $_ != $d } @running;
	$d->{upgrades} = join ' ', map { s/\s+//gr } $d->{err} =~ /Running upgrade\s*(\S*\s*->\s*\S+),/g;
	note("$d->{name} exited with $d->{rc}; its output:\n$d->{out}\n$d->{err}");
	return $d;
}

# True once deployer $d has ended (its pipes closed), so that a wait for it
# to queue gives up at once.
sub deployer_ended
{
	my ($d) = @_;
	eval { $d->{h}->pump_nb if $d->{h}->pumpable; 1 };
	return !$d->{h}->pumpable;
}

1;
