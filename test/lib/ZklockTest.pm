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
# zk_hold) is stopped by pid in an END block (ZklockTest::Cleanup's),
# whatever way the test ends.
#
# The helpers are in ZklockTest/, one concern each (each file says what it
# holds; perldoc ZklockTest::Node and so on):
#   ZklockTest::ZooKeeper  ZooKeeper servers, zkutil's view of ZooKeeper,
#                          foreign holders, four-letter words
#   ZklockTest::Node       PostgreSQL nodes with zklock and what they show;
#                          the crash check of their server logs at
#                          done_testing (expect_in_log)
#   ZklockTest::Peer       lock clients of other libraries (interop tests)
#   ZklockTest::Poll       wait_until
#   ZklockTest::Cleanup    stopping, at exit, what the others started
#   ZklockTest::Command    running the suite's programs (zkserver.sh, zkutil)
#   ZklockTest::Fenced     the fencing tests' fenced table and its writers
#   ZklockTest::Loss       a held lock lost behind its holder's back
# This module loads them all and exports everything they export.
package ZklockTest;

use strict;
use warnings FATAL => 'all';

use Exporter 'import';
use ZklockTest::Cleanup;
use ZklockTest::Poll;
use ZklockTest::ZooKeeper;
use ZklockTest::Node;
use ZklockTest::Peer;
use ZklockTest::Roles;
use ZklockTest::Fenced;
use ZklockTest::Loss;
use ZklockTest::Wire;

our @EXPORT = (
	@ZklockTest::ZooKeeper::EXPORT, @ZklockTest::Node::EXPORT,
	@ZklockTest::Peer::EXPORT,      @ZklockTest::Poll::EXPORT,
	@ZklockTest::Roles::EXPORT,      @ZklockTest::Wire::EXPORT,
	@ZklockTest::Fenced::EXPORT,     @ZklockTest::Loss::EXPORT,
);

1;
