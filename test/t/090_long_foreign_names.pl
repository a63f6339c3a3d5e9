# Another client's node names may be as long as ZooKeeper takes (issue 41,
# point 1): zklock never cuts one short.
#  (1) A kazoo node ahead of zklock's, named "p" x 100 . "-lock-<seq>"
#      (116 bytes, longer than a slot's node buffer) and unreadable (its
#      ACL grants every right but READ): the waiter watches it by exists,
#      on its whole name.  Before the fix that name was cut to 95 bytes,
#      the watch answered ZNONODE and the lock was granted while the peer
#      held it.  Now the acquire waits until lock_timeout, and
#      zk_lock_contenders never shows two holders.
#  (2) zk_lock_revoke asks a holder with such a name: the unreadable one
#      (its ACL lets anyone write), and a readable one of 200 bytes, whose
#      data becomes Curator's revocation message.  Before, it skipped any
#      holder whose name did not fit the slot and returned 0.
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::RealBin/../lib";
use ZklockTest;
use ZklockTest::Command qw($test_dir);
use Test::More;

my $zk = zk_start(1);
my $a = zklock_node('a', $zk);

my $kz = peer_start('kazoo-nodes', [ '/usr/bin/python3', "$test_dir/peers/kazoo_nodes.py" ]);
is($kz->cmd("connect $zk->{connect}"), 'ok', 'the kazoo program connects');

# --- (1) an unreadable node ahead with a long name

my $long = ('p' x 100) . '-lock-';
my ($node, $czxid) = split / /, $kz->cmd("unreadable /zklock/l1/$long");
like($node, qr{^/zklock/l1/p{100}-lock-\d{10}$}, 'kazoo holds l1 with a 116-byte unreadable node');

my $s = bg_session($a);
$s->query_safe("\\set VERBOSITY verbose");
$s->query_safe("SET lock_timeout = '3s'");
my $pid = $s->query_safe('SELECT pg_backend_pid()');
$s->query_until(qr/started/, "\\echo started\nSELECT zk_lock_acquire('l1');\n\\echo done\n");
# Waiting with its node made: the request is "waiting" from the moment it
# is posted, before the directory's ACL is read and its node created.
ok( wait_until(
		sub {
			sql_result($a,
				"SELECT state = 'waiting' AND znode IS NOT NULL FROM zk_locks WHERE pid = $pid AND name = 'l1'") eq 't';
		},
		30,
		'the acquire of l1 waits'),
	'the acquire of l1 waits behind the long-named peer');
# While it waits: one holder, the peer, and zklock waiting behind it.
is(sql_result($a, "SELECT position, state, client FROM zk_lock_contenders('l1') ORDER BY position"),
	"1|held|other\n2|waiting|zklock", 'zk_lock_contenders: the peer holds, zklock waits');
$s->query_until(qr/done/, '');
is(sqlstate_of($s->{stderr}), '55P03', 'the acquire ends by lock_timeout, never granted beside the peer')
  or diag($s->{stderr});
$s->quit;
is(sql_result($a, "SELECT count(*) FROM zk_lock_contenders('l1') WHERE state = 'held'"), '1',
	'one holder only');
is(sql_result($a, "SELECT count(*) FROM zk_locks WHERE name = 'l1'"), '0', 'no slot of l1 is left');

# --- (2) revocation of long-named holders

is(sql_result($a, "SELECT zk_lock_revoke('l1')"), '1', 'zk_lock_revoke asks the long-named unreadable holder');
is(zk_stat($zk, $node)->{version}, '1', 'its node was written once');

my $kw = peer_start('kazoo writer', [ '/usr/bin/python3', "$test_dir/peers/kazoo_writer.py" ]);
is($kw->cmd("connect $zk->{connect}"), 'ok', 'the kazoo writer connects');
my $node2 = $kw->cmd('create /zklock/l2/' . ('q' x 184) . '-lock- holder');
like($node2, qr{^/zklock/l2/q{184}-lock-\d{10}$}, 'kazoo holds l2 with a 200-byte node');
is(sql_result($a, "SELECT zk_lock_revoke('l2')"), '1', 'zk_lock_revoke asks the 200-byte holder');
is(zk_get($zk, $node2), '__REVOKE__', "the revocation message is on the holder's node, named in full");
is(sql_result($a, "SELECT zk_lock_try('l2')"), 'f', 'the holder keeps l2 (the message only asks)');

$kz->quit;
$kw->quit;
ok(wait_until(sub { !grep { zk_ls($zk, "/zklock/$_") } qw(l1 l2) }, 30, 'the nodes go with the sessions'),
	'no contender is left');

done_testing();
