# Curator's two lock layouts mixed in one lock directory (issue 41,
# point 7).  zklock waits for nodes of every layout, but Curator's
# InterProcessMutex reads only "-lock-" nodes and its
# InterProcessReadWriteLock only "__READ__"/"__WRIT__" ones, and
# zklock.exclusive_layout is per session: a zklock writer in the mutex
# layout holds beside a Curator reader or writer, as if neither saw the
# other.  The worker warns, once per directory, when an exclusive request's
# listing finds a node of the other layout:
#  (1) "rw": a foreign Curator reader (a __READ__ node) and a zklock try
#      in the default mutex layout: one WARNING naming the directory, not a
#      second for a second try;
#  (2) "mx": a foreign Curator mutex node and a zklock try in the
#      readwrite layout (__WRIT__): one WARNING;
#  (3) "same": a foreign Curator writer and a zklock try in the readwrite
#      layout, and a zklock shared try beside a foreign mutex node ("rd"):
#      no warning (one layout, or a reader, whose layout has no choice).
# Each try is refused (the foreign node is ahead).  Before the fix nothing
# at run time said so.
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::RealBin/../lib";
use PostgreSQL::Test::Utils;
use ZklockTest;
use Test::More;

my $zk = zk_start(1);
my $a = zklock_node('a', $zk);
my $pattern = qr/lock directory "([^"]*)" mixes the mutex and the read-write lock layouts of Curator/;

sub warned
{
	my %n;
	my $log = slurp_file($a->logfile);
	$n{$1}++ while $log =~ /$pattern/g;
	return \%n;
}

my $reader = zk_hold($zk, '/zklock/rw/_c_00000000-0000-0000-0000-000000000001-__READ__');
my $mutex = zk_hold($zk, '/zklock/mx/_c_00000000-0000-0000-0000-000000000002-lock-');
my $writer = zk_hold($zk, '/zklock/same/_c_00000000-0000-0000-0000-000000000003-__WRIT__');
my $mutex2 = zk_hold($zk, '/zklock/rd/_c_00000000-0000-0000-0000-000000000004-lock-');

# (1)
is($a->safe_psql('postgres', "SELECT zk_lock_try('rw')"), 'f', '(1) a try in the mutex layout waits for the Curator reader');
wait_until(sub { (warned()->{'/zklock/rw'} // 0) == 1 }, 10, '(1) the worker warns of the mixed layouts');
is($a->safe_psql('postgres', "SELECT zk_lock_try('rw')"), 'f', '(1) a second try is refused too');

# (2)
is($a->safe_psql('postgres', "SET zklock.exclusive_layout = 'readwrite'; SELECT zk_lock_try('mx')"),
	'f', '(2) a try in the readwrite layout waits for the Curator mutex node');
wait_until(sub { (warned()->{'/zklock/mx'} // 0) == 1 }, 10, '(2) the worker warns of the mixed layouts');

# (3)
is($a->safe_psql('postgres', "SET zklock.exclusive_layout = 'readwrite'; SELECT zk_lock_try('same')"),
	'f', '(3) a try in the readwrite layout waits for the Curator writer');
is($a->safe_psql('postgres', "SELECT zk_lock_try_shared('rd')"),
	'f', '(3) a shared try waits for the Curator mutex node');
# A marker after them: the worker handled both listings before it.
is($a->safe_psql('postgres', "SELECT zk_lock_try('rw')"), 'f', '(1) a third try is refused');

my $w = warned();
is($w->{'/zklock/rw'}, 1, '(1) one warning for rw, whatever the tries');
is($w->{'/zklock/mx'}, 1, '(2) one warning for mx');
ok(!$w->{'/zklock/same'}, '(3) no warning where one layout is used');
ok(!$w->{'/zklock/rd'}, '(3) no warning for a reader');
like(slurp_file($a->logfile), qr/HINT:\s+Give zklock.exclusive_layout the layout/, 'the warning says what to set');

$_->release for $reader, $mutex, $writer, $mutex2;
is($a->safe_psql('postgres', "SELECT count(*) FROM zk_locks"), '0', 'no request left');
done_testing();
