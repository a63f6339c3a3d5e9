# Running the test suite's own programs, for the other ZklockTest modules:
# where they are (test/zkserver.sh, test/tools/zkutil, test/peers/), _run
# (a command with a time limit; returns its exit status, stdout and stderr)
# and _fatal (a diag on the TAP stream, then croak).
package ZklockTest::Command;

use strict;
use warnings FATAL => 'all';

use Carp;
use Cwd qw(abs_path);
use Exporter 'import';
use File::Basename qw(dirname);
use IPC::Run;
use Test::More;

our @EXPORT_OK = qw(_fatal _run $test_dir $zkserver $tools_dir $zkutil);

# This file is test/lib/ZklockTest/Command.pm: test/ is two levels up.
our $test_dir = abs_path(dirname(__FILE__) . '/../..');
our $zkserver = "$test_dir/zkserver.sh";
our $tools_dir = "$test_dir/tools";
our $zkutil = "$tools_dir/zkutil";

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

1;
