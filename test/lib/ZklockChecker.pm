# A mutual-exclusion checker for zklock: many sessions in several PostgreSQL
# clusters increment one shared counter under one zklock lock, and what was
# committed is then checked for the properties a mutex must guarantee.
#
#   use ZklockTest;
#   use ZklockChecker;
#
#   my @nodes = map { zklock_node($_, $zk, conf => checker_conf()) } qw(a b c);
#   my $res = run_checker(nodes => \@nodes, zk => $zk, sessions => 8,
#                         iterations => 100, duration => 60);
#   check_invariants($res);                 # TAP assertions (a) to (d) and more
#
# or, to inject faults while the sessions run:
#
#   my $run = start_checker(nodes => \@nodes, zk => $zk, ...);
#   wait_until(sub { checker_progress($run) >= 100 }, 60, 'holds committed');
#   ... stop a ZooKeeper server, restart it ...
#   my $res = finish_checker($run);
#   check_invariants($res);
#
# What the checker commits where and why, and what each check proves:
# test/README.md.
#
# The checker is in ZklockChecker/, one concern each (each file says what
# it holds; perldoc ZklockChecker::Run and so on):
#   ZklockChecker::Schema   the tables and zkc_read() in every cluster,
#                           checker_conf
#   ZklockChecker::Session  one session, in a forked child: its psql loop
#   ZklockChecker::Run      start_checker, stop_checker, checker_progress,
#                           stopping sessions left at exit
#   ZklockChecker::Results  finish_checker, run_checker: what the run did
#   ZklockChecker::Verdict  check_invariants
# This module loads them all and exports everything they export.
package ZklockChecker;

use strict;
use warnings FATAL => 'all';

use Exporter 'import';
use ZklockTest;
use ZklockChecker::Schema;
use ZklockChecker::Run;
use ZklockChecker::Results;
use ZklockChecker::Verdict;

our @EXPORT = (
	@ZklockChecker::Schema::EXPORT,  @ZklockChecker::Run::EXPORT,
	@ZklockChecker::Results::EXPORT, @ZklockChecker::Verdict::EXPORT,
);

1;
