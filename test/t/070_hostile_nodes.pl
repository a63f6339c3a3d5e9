# Hostile ZooKeeper data never harms a backend (issue 33).  A kazoo client
# with write access to zklock's root writes, into live lock, semaphore and
# wait directories that SQL sessions of two clusters use: data of 1 MB,
# invalid UTF-8, JSON nested 300000 deep, a megabyte of keys, wrong JSON
# types, strings where numbers belong; names shaped like zklock's, Curator's
# and kazoo's with sequence numbers out of range, negative, spelled as
# ZooKeeper never writes them, or not numeric, names with no sequence,
# lease names without their marker; an ephemeral node where a lock
# directory is expected; a description claiming to be a backend of the
# other live cluster.  Every SQL function that reads them answers sanely
# or fails with a clear SQLSTATE; a node shaped like a contender is one
# (the lock rule waits behind it, zk_lock_contenders shows it); nothing
# else blocks; deadlock detection, reading hostile waits, neither errs
# nor finds a cycle; no backend or worker crashes (done_testing checks
# every server log).  It passes on the code before issue 33's fixes too
# (the worker hands backends at most 4096 bytes of a node's data): a
# guard against regressions.
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::RealBin/../lib";
use ZklockTest;
use ZklockTest::Deadlock;
use Test::More;

my $zk = zk_start(1);
my @conf = ("deadlock_timeout = '500ms'", "lock_timeout = '3s'");
my $a = zklock_node('a', $zk, conf => [ "cluster_name = 'a'", @conf ]);
my $b = zklock_node('b', $zk, conf => [ "cluster_name = 'b'", @conf ]);

my $kz = peer_start('kazoo writer', [ '/usr/bin/python3', "$FindBin::RealBin/../peers/kazoo_writer.py" ]);
is($kz->cmd("connect $zk->{connect}"), 'ok', 'the kazoo client connects');
my $session = $kz->cmd('session');

# Data as hex for kazoo_writer's createhex (sequential when the path ends
# in "-" or "__"), or createplain (never).
sub hostile
{
	my ($path, $data, $plain) = @_;
	my $how = $plain ? 'createplain' : 'createhex';
	my $got = $kz->cmd("$how $path " . unpack('H*', $data));
	my $what = length($data) > 60 || $data =~ /[^\x20-\x7e]/ ? length($data) . ' bytes' : "'$data'";
	unlike($got, qr/^error/, "kazoo writes $what at $path") or diag($got);
	return $got;
}

my $b_sysid = $b->safe_psql('postgres', 'SELECT system_identifier FROM pg_control_system()');
my %data = (
	deep => '{"system_identifier":"1","pid":5,"x":' . ('[' x 300000) . (']' x 300000) . '}',
	keys => '{"system_identifier":"1","pid":5' . (',"a":0' x 150000) . '}',
	big => 'x' x 1_000_000,
	utf8 => qq({"system_identifier":"\xff\xfe","pid":"\xc3\x28","host":"\xed\xa0\x80"}),
	types => '{"system_identifier":{"a":1},"pid":"abc","host":[1,2],"port":-1e400,"cluster":null}',
	numbers => '{"system_identifier":99999999999999999999999999,"pid":99999999999999999999,"port":"5x"}',
	escapes => '{"system_identifier":"1","pid":1,"host":"\u0000","cluster":"\ud800"}',
	forged => qq({"cluster":"b","system_identifier":"$b_sysid","host":"h","port":1,"pid":1,"mode":"exclusive"}),
);

# (1) Names that are no contenders, with every kind of data, in a lock
# directory both clusters use: none is in anyone's way.
my @junk = (
	'junk', '_c_00000000-0000-0000-0000-000000000000-lock-',
	'_c_00000000-0000-0000-0000-000000000000-lock-99999999999',
	'_c_00000000-0000-0000-0000-000000000000-lock-2147483648',
	'_c_00000000-0000-0000-0000-000000000000-lock--0000000001',
	'_c_00000000-0000-0000-0000-000000000000-__READ__-000000000',
	'_c_00000000-0000-0000-0000-000000000000-__WRIT__abcdefghij',
	'0123456789abcdef0123456789abcdef__lock__+000000001',
	'0123456789abcdef0123456789abcdef__rlock__',
	'lease-0000000001',
);
my @kinds = sort keys %data;
for my $i (0 .. $#junk)
{
	hostile("/zklock/h1/$junk[$i]", $data{ $kinds[ $i % @kinds ] }, 1);
}
my $ha = holder($a, 'h1');
pass('a takes h1 beside ten nodes that are no contenders');
is($b->safe_psql('postgres', q{SELECT zk_lock_try('h1')}), 'f', 'b does not: a holds it');
is(sql_result($b, q{SELECT count(*), string_agg(state, ',') FROM zk_lock_contenders('h1')}), '1|held',
	'b\'s zk_lock_contenders of h1 lists a\'s hold and none of the junk');
end_all($ha);
is($b->safe_psql('postgres', q{SELECT zk_lock_try('h1')}), 't', 'once a is done, b takes h1');

# (2) Contender-shaped nodes with hostile data: the rule waits behind the
# first; zk_lock_contenders shows each, whatever its data.
my @contenders;
for my $k (@kinds)
{
	push @contenders, hostile('/zklock/h2/_c_00000000-0000-0000-0000-000000000000-lock-', $data{$k});
}
my $listing = sql_result($a, q{SELECT count(*), count(*) FILTER (WHERE state = 'held'),
	min(client) FROM zk_lock_contenders('h2')});
is($listing, scalar(@kinds) . '|1|curator',
	'zk_lock_contenders shows every hostile contender (as Curator\'s, by its name), the first held');
is(sql_result($b, q{SELECT count(*) FROM zk_lock_contenders('h2')}), scalar(@kinds), 'so does b\'s');
is($a->safe_psql('postgres', q{SELECT zk_lock_try('h2')}), 'f', 'a waits behind a node shaped like a contender');
is(sql_sqlstate($b, q{SELECT zk_lock_acquire('h2', '1s')}), '55P03', 'b\'s acquire of h2 times out (55P03)');
for my $c (@contenders)
{
	is($kz->cmd("delete $c"), 'ok', "kazoo deletes $c");
}
is($a->safe_psql('postgres', q{SELECT zk_lock_try('h2')}), 't', 'then a takes h2');

# (3) The other cluster's description on a contender: b's own rule is not
# fooled (it knows its nodes by name), and its listing shows a holder.
my $forged = hostile('/zklock/h3/_c_00000000-0000-0000-0000-000000000000-lock-', $data{forged});
is($b->safe_psql('postgres', q{SELECT zk_lock_try('h3')}), 'f', 'b waits behind a node that claims to be b\'s');
is(sql_result($b, q{SELECT state, holder->>'cluster' FROM zk_lock_contenders('h3')}), 'held|b',
	'b\'s zk_lock_contenders shows it as it claims to be');
is($kz->cmd("delete $forged"), 'ok', 'kazoo deletes it');
is($b->safe_psql('postgres', q{SELECT zk_lock_try('h3')}), 't', 'then b takes h3');

# (4) A semaphore's leases/ with hostile names and data.
for my $i (0 .. $#kinds)
{
	hostile("/zklock/s1/leases/x$i", $data{ $kinds[$i] });
}
hostile('/zklock/s1/leases/_c_00000000-0000-0000-0000-000000000000-lease--000000001', $data{deep});
like(sql_result($a, q{SELECT count(*) FROM zk_semaphore_contenders('s1')}), qr/^\d+$/,
	'zk_semaphore_contenders reads leases/ with hostile children');
like(sql_result($a, q{SELECT zk_semaphore_try('s1', 100)}), qr/^[tf]$/,
	'zk_semaphore_try answers beside them');

# (5) An ephemeral node where a lock directory is expected.
hostile('/zklock/ephdir', 'x');
like(sql_sqlstate($a, q{SELECT zk_lock_try('ephdir')}), qr/^[0-9A-Z]{5}$/,
	'a lock whose directory is an ephemeral node fails with a SQLSTATE');
like(sql_sqlstate($a, q{SELECT count(*) FROM zk_lock_contenders('ephdir')}), qr/^(?:ok|[0-9A-Z]{5})$/,
	'zk_lock_contenders of it answers or fails with a SQLSTATE');

# (6) Hostile waits under .waits, of kazoo's own session (as a wait is
# named), while backends of both clusters wait and look for cycles.
my $pid = 424240;
for my $k (@kinds)
{
	$pid++;
	hostile("/zklock/.waits/$session-$pid", $data{$k});
}
hostile("/zklock/.waits/$session-0", $data{deep});
hostile("/zklock/.waits/$session-", $data{keys}, 1);
for my $pair ([ $a, $b ], [ $b, $a ])
{
	my ($x, $y) = @$pair;
	my $checks = zk_status_of($y)->{deadlock_checks};
	my $t = holder($x, 'w1');
	my $u = holder($y);
	start_wait($u, $y, 'w1');
	wait_until(sub { zk_status_of($y)->{deadlock_checks} > $checks }, 30,
		$y->name . '\'s waiting backend to look for a cycle');
	like(sql_result($y, q{SELECT count(*) FROM zk_waits_for()}), qr/^\d+$/,
		$y->name . '\'s zk_waits_for reads the hostile waits');
	is(finish_wait($u), '55P03',
		$y->name . '\'s wait reads hostile waits and ends by lock_timeout (55P03), no other error')
	  or diag($u->{last_err});
	end_all($t, $u);
}

# Every function still works for both clusters.
for my $n ($a, $b)
{
	is($n->safe_psql('postgres', q{SELECT zk_lock_try('after') AND zk_lock_release('after')}), 't',
		$n->name . ' still takes and releases a lock');
}
$kz->quit;
done_testing();
