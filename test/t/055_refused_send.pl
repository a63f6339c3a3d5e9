# A request the ZooKeeper client library refuses at once never leaves the
# worker: no answer will ever come for it.  zklock.root passes zklock's own
# check but holds a "." component, which the library refuses in every path
# (ZBADARGUMENTS) before sending anything.  Asserted: an acquire, a try and
# zk_lock_contenders fail at once with ZK000 naming the library's answer,
# instead of waiting for an answer (until statement_timeout: 57014); no
# slot stays in use; the worker says so in the log.
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::RealBin/../lib";
use ZklockTest;
use PostgreSQL::Test::Utils;
use Test::More;

my $zk = zk_start(1);
my $a = zklock_node('a', $zk, root => '/zk/./refused');
wait_until(sub { zk_status_of($a)->{state} eq 'connected' }, 30, 'A is connected');

for my $call ("zk_lock_acquire('x')", "zk_lock_try('x')", "zk_lock_acquire_shared('x')", "zk_semaphore_try('x', 2)",
	"count(*) FROM zk_lock_contenders('x')")
{
	my ($ret, $out, $err) = $a->psql('postgres',
		"\\set VERBOSITY verbose\nSET statement_timeout = '20s';\nSELECT $call");
	is(sqlstate_of($err), 'ZK000', "$call fails at once with ZK000") or diag($err);
	like($err, qr/bad arguments/, "$call: the error names the library's answer");
}
is(zk_status_of($a)->{slots_used}, '0', 'no slot stays in use');
like(slurp_file($a->logfile), qr/the ZooKeeper client library refused a request of lock "x": bad arguments/,
	'the worker logs the refusal');

done_testing();
