# A lock directory is read as a lock only in the spelling zklock's encoding
# writes (issue 23, defect 8).  A kazoo client queues, as "backend" of its
# own session, in /zklock/sp (the encoding of lock 'sp') and in directories
# that plain percent-decoding would also read as a lock: /zklock/%73p (an
# escaped plain byte: 'sp' again), /zklock/s%2ep (lower-case hex) and
# /zklock/a%00b (a NUL: 'a', cut short), and publishes each wait.
# zk_waits_for() shows the wait in /zklock/sp as one on lock 'sp'; the
# others are other clients' directories, so their waits are none of
# zklock's: no two directories show as one lock, no name is cut short.
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::RealBin/../lib";
use ZklockTest;
use Test::More;

my $zk = zk_start(1);
my $pg = zklock_node('a', $zk, conf => [ "cluster_name = 'a'" ]);

my $kz = peer_start('kazoo writer', [ '/usr/bin/python3', "$FindBin::RealBin/../peers/kazoo_writer.py" ]);
is($kz->cmd("connect $zk->{connect}"), 'ok', 'the kazoo client connects');
my $session = $kz->cmd('session');

my %dirs = (sp => 1001, '%73p' => 1002, 's%2ep' => 1003, 'a%00b' => 1004);
for my $dir (sort keys %dirs)
{
	my $pid = $dirs{$dir};
	my $desc = qq({"system_identifier":"1","pid":$pid,"cluster":"k","host":"h","port":"1"});
	like($kz->cmd("create /zklock/$dir/0123abcd__lock__ kazoo"), qr{__lock__\d{10}$},
		"kazoo holds /zklock/$dir");
	my $req = $kz->cmd("create /zklock/$dir/_c_00000000-0000-0000-0000-000000000000-lock- $desc");
	my $czxid = $kz->cmd("czxid $req");
	my $node = (split m{/}, $req)[-1];
	my $wait = "/zklock/.waits/$session-$pid";
	is($kz->cmd(qq(create $wait {"lock_dir":"/zklock/$dir","lock_node":"$node","czxid":$czxid,"mode":"exclusive","cluster":"k"})),
		$wait, "kazoo waits in /zklock/$dir behind itself, as backend $pid, and publishes it");
}

is($pg->safe_psql('postgres',
		"SELECT string_agg(waiter_pid || ':' || lock || ':' || coalesce(blocker_client, '?'), ',' ORDER BY waiter_pid) FROM zk_waits_for()"),
	'1001:sp:kazoo',
	'zk_waits_for() shows the wait in /zklock/sp alone: /zklock/%73p, /zklock/s%2ep and /zklock/a%00b are no lock of zklock\'s');

$kz->quit;
ok(wait_until(sub { !grep { zk_ls($zk, "/zklock/$_") } (keys %dirs), '.waits' }, 30, 'no node left'),
	'no node is left');
done_testing();
