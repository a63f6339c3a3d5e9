# Fault: the ZooKeeper server our worker talks to is cut off from the rest
# of the ensemble, and goes on answering reads until it notices.
#
# A three-server ensemble (tickTime 1 s, syncLimit 20: a follower notices a
# silent leader only after 20 s); server 3 reaches its peers through relays
# the test silences (a partition between ZooKeeper servers, not between
# PostgreSQL and ZooKeeper).  The cluster is connected to server 3 alone,
# with zklock.session_timeout 3 s, well below syncLimit x tickTime.  A
# backend holds a lock in a transaction that wrote a row.  After the cut the
# leader hears nothing of our session, expires it and deletes our node; a
# kazoo client on servers 1 and 2 takes the lock.  Server 3 still serves
# reads from its stale copy, so a heartbeat that is a plain read would keep
# proving the session.  Asserted:
#   (1) the precondition: server 3 still follows (it has not noticed), the
#       majority has deleted our node and kazoo holds the lock;
#   (2) zk_status() does not say "connected" with a fresh proof (a
#       last_contact younger than a third of the negotiated timeout);
#   (3) the holder's COMMIT fails with ZK002 and its row is not there;
#   (4) once the relays let server 3 through again, the worker gets a new
#       session and the lock can be taken from SQL again.
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::RealBin/../lib";
use ZklockTest;
use PostgreSQL::Test::Utils;
use Test::More;

my $zk = zk_start(3, tick_time => 1000, sync_limit => 20, relayed => 3);
my $s3 = "127.0.0.1:$zk->{ports}[2]";
my $majority = "127.0.0.1:$zk->{ports}[0],127.0.0.1:$zk->{ports}[1]";

sub mode_of
{
	my ($i) = @_;
	return (zk_fourlw($zk, 'srvr', $i) // '') =~ /^Mode: (\w+)$/m ? $1 : 'down';
}

# Server 3 must follow: a leader cut off steps down instead.  At the first
# start the highest id usually leads; restarted, it joins the others' leader.
if (mode_of(3) eq 'leader')
{
	zk_stop_one($zk, 3);
	wait_until(sub { grep { mode_of($_) eq 'leader' } 1, 2 }, 60, 'server 1 or 2 leads');
	zk_start_one($zk, 3);
}
wait_until(sub { mode_of(3) eq 'follower' }, 60, 'server 3 follows');

my $a = zklock_node('a', $zk, hosts => $s3, session_timeout => '3s');
wait_until(sub { zk_status_of($a)->{state} eq 'connected' }, 30, 'A is connected to server 3');
is(zk_status_of($a)->{server}, $s3, 'A talks to server 3');
$a->safe_psql('postgres', 'CREATE TABLE work (v text)');
my $dir = $a->safe_psql('postgres', "SELECT zk_lock_path('isolated')");

my $session_before = zk_status_of($a)->{session_id};
my $s = bg_session($a);
$s->query_safe('BEGIN');
$s->query_safe("SELECT zk_lock_acquire_xact('isolated')");
$s->query_safe("INSERT INTO work VALUES ('under the lock')");
my @ours = zk_ls($majority, $dir);
is(scalar(@ours), 1, 'the holder has its node, seen by the majority');

my $kazoo = kazoo_peer({ connect => $majority });
is($kazoo->cmd("lock_try $dir"), 'false', 'kazoo on servers 1 and 2 cannot take the lock yet');

zk_cut($zk);

# (1) The leader expires our session; the majority deletes our node.
wait_until(sub { !grep { $_ eq $ours[0] } zk_ls($majority, $dir) }, 30,
	'(1) the majority has deleted the holder\'s node');
peer_gets($kazoo, $dir, 'lock');
my $mode = mode_of(3);
is($mode, 'follower', '(1) server 3 still follows: it has not noticed the cut');

# (2) No fresh proof.
my $status = $a->safe_psql('postgres',
	"SELECT state, state = 'connected' AND last_contact > now() - negotiated_timeout / 3 * interval '1 ms'"
	  . ' FROM zk_status()');
my ($state, $fresh) = split /\|/, $status;
note "zk_status: state $state, fresh proof: $fresh";
is($fresh, 'f', '(2) zk_status() does not say connected with a fresh proof');

# (3) The commit fails.
my ($st, $err) = bg_sqlstate($s, 'COMMIT');
is($st, 'ZK002', '(3) the holder\'s COMMIT fails with ZK002') or diag($err);
is($a->safe_psql('postgres', 'SELECT count(*) FROM work'), '0', '(3) its row was not committed');
is(mode_of(3), 'follower', '(3) server 3 still followed when the commit was answered')
  if $mode eq 'follower';
$s->quit;

# (4) Healed: a new session, and the lock works again once kazoo lets go.
zk_heal($zk);
is($kazoo->cmd("lock_release $dir"), 'ok', '(4) kazoo releases the lock');
wait_until(sub { my $st = zk_status_of($a); $st->{state} eq 'connected' && $st->{session_id} ne $session_before },
	90, '(4) A is connected again, in a new session');
$a->safe_psql('postgres',
	"BEGIN; SELECT zk_lock_acquire_xact('isolated'); INSERT INTO work VALUES ('again'); COMMIT;");
is($a->safe_psql('postgres', 'SELECT count(*) FROM work'), '1',
	'(4) the lock is taken and a transaction under it commits');
$kazoo->quit;

done_testing();
