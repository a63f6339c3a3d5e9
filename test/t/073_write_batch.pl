# Coalesced writes (issue 32): the lock creates and the release deletes
# that are ready in one pass of the worker's loop travel as one ZooKeeper
# multi.  Several backends are made ready at once by freezing A's worker
# (SIGSTOP) while they post, then thawing it: its next pass takes them all.
# zklock reaches ZooKeeper through a relay that reads the client protocol
# (test/tools/zkwire.pl, which logs a multi's operations one by one), so
# the requests are counted per lock, inside the multi too.
# A create travels in a multi only in a directory the worker has listed
# and found without data (issue 41): each part first takes its locks alone
# once.
#  (1) Four acquires ready at once: one multi with the four creates and a
#      setData of each lock directory (whose Stat gives the multi's zxid
#      and the directory's children); each directory had only the new
#      node, so no listing follows; each token is its node's czxid.  Four
#      releases ready at once: one multi with the four deletes.  Per lock:
#      one create, one delete and no listing, on the wire and in
#      zk_status(), which counts each operation of a multi as one request.
#  (2) A multi fails as a whole when one create fails (the locks'
#      directories do not exist yet: ZNONODE): each create goes again
#      alone, each request is granted, one node per lock.
#  (3) A multi fails as a whole when one delete finds its node gone (an
#      operator deleted it: ZNONODE): each delete goes again alone, no node
#      is left, every slot is freed.
#  (4) The answer of a multi of creates is lost with its connection: each
#      create is looked for by its uuid after a sync, each request is
#      granted once, one node per lock; the answer of a multi of deletes
#      is lost: each delete goes again, no node is left.
#  (5) The answer of a multi of creates is lost and the session expires
#      before the worker is back: every request is granted in the new
#      session, with one node per lock and nothing of the old one left.
#  (6) A lock directory whose ACL grants no WRITE (another tool made it):
#      the multi's setData of it is refused (ZNOAUTH), so the multi fails
#      whole and each create goes again alone; every request is granted.
#      The worker remembers the directory: the next acquires of the same
#      locks send its create alone, and the other creates still travel
#      in one multi, which does not fail.
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::RealBin/../lib";
use ZklockTest;
use PostgreSQL::Test::Utils;
use Test::More;

my $zk = zk_start(1);
my $wire = zk_wire($zk);
my $a = zklock_node('a', $zk, hosts => $wire->{connect}, session_timeout => '4s');
wait_until(sub { zk_status_of($a)->{state} eq 'connected' }, 30, 'A is connected through the relay');
my $wpid = worker_pid($a);


my @s = map { bg_session($a) } 1 .. 4;
my @pid = map { $_->query_safe('SELECT pg_backend_pid()') } @s;

sub counters
{
	my %c;
	@c{qw(zk_requests release_requests acquired released slots_used)} = split /\|/,
	  $a->safe_psql('postgres',
		'SELECT zk_requests, release_requests, acquired, released, slots_used FROM zk_status()');
	return \%c;
}

# The ops the relay saw after the first $from.
sub ops_since
{
	my ($from) = @_;
	my @ops = $wire->ops;
	return @ops[ $from .. $#ops ];
}

sub show_ops
{
	my ($from) = @_;
	diag(join "\n", map { "@$_" } ops_since($from));
}

# Sessions 0..$#names ask for $names[i] while the worker is frozen; the
# worker is thawed once all are posted.  Returns each session's token.
sub acquire_together
{
	my (@names) = @_;
	freeze_worker($wpid);
	for my $i (0 .. $#names)
	{
		bg_start($s[$i], "SELECT zk_lock_acquire('$names[$i]', '60s')");
	}
	wait_until(sub { $a->safe_psql('postgres', "SELECT count(*) FROM zk_locks WHERE state = 'waiting'") == @names },
		10, 'every request is posted');
	thaw_worker($wpid);
	my @tokens;
	for my $i (0 .. $#names)
	{
		my ($out, $err) = bg_collect($s[$i]);
		my ($token) = $out =~ /^(\d+)$/m;
		push @tokens, $token;
		diag("session $i: $err") if $err;
	}
	return @tokens;
}

# The releases of sessions 0..$#names, posted while the worker is frozen.
sub release_together
{
	my (@names) = @_;
	freeze_worker($wpid);
	for my $i (0 .. $#names)
	{
		is(bg_result($s[$i], "SELECT zk_lock_release('$names[$i]')"), 't', "$names[$i] is released");
	}
	thaw_worker($wpid);
	wait_until(sub { !grep { zk_ls($zk, "/zklock/$_") } @names }, 30, 'the released nodes are gone');
}

# A create travels in a multi only in a lock directory the worker has
# listed since it started and found without data (issue 41: the multi's
# setData, version-checked, must never erase another client's data): one
# try and release of each lock, alone, lets it list each directory.
sub learn
{
	my ($what, @names) = @_;
	for my $n (@names)
	{
		is(sql_result($a, "SELECT zk_lock_try('$n'), zk_lock_release('$n')"), 't|t',
			"$what: $n is taken alone once, its directory listed");
	}
}

# Each session holds its lock with a token that is its node's czxid, and
# is the only node in the lock's directory.
sub check_holds
{
	my ($what, $names, $tokens) = @_;
	for my $i (0 .. $#$names)
	{
		my $node = held_znode($a, $pid[$i], $names->[$i]);
		isnt($node, '', "$what: $names->[$i] is held");
		is(scalar(zk_ls($zk, "/zklock/$names->[$i]")), 1, "$what: one node in $names->[$i]'s directory");
		my $stat = zk_stat($zk, $node);
		is($tokens->[$i], $stat ? $stat->{czxid} : 'none', "$what: $names->[$i]'s token is its node's czxid");
	}
}

# (1) Counted per lock.  The directories exist (persistent): no ZNONODE.
my @b = map { "batch$_" } 1 .. 4;
zk_create($zk, '/zklock');
zk_create($zk, "/zklock/$_") for @b;
learn('(1)', @b);
my $from = scalar($wire->ops);
my $c0 = counters();
my @tokens = acquire_together(@b);
# A hold that outlives a heartbeat tick gets a watch on its own node
# (getData): zk_status() counts those too, and the relay shows them.
my $own_watches = sub { scalar(grep { $_->[1] eq '4' && $_->[2] =~ m{^/zklock/batch\d/} } ops_since($from)) };
my $w0 = $own_watches->();
my $c1 = counters();
my $w1 = $own_watches->();
check_holds('(1)', \@b, \@tokens);
my @ops = ops_since($from);
my @multis = grep { $_->[1] eq '14' } @ops;
is(scalar(@multis), 1, '(1) the four creates went as one multi') or show_ops($from);
for my $n (@b)
{
	is(scalar(grep { $_->[1] eq '14.1' && $_->[2] =~ m{^/zklock/$n/} } @ops), 1, "(1) $n: one create, in the multi");
	is(scalar(grep { $_->[1] =~ /^(1|15)$/ && $_->[2] =~ m{^/zklock/$n/} } @ops), 0, "(1) $n: no create alone");
	is(scalar(grep { $_->[1] eq '14.5' && $_->[2] eq "/zklock/$n" } @ops), 1,
		"(1) $n: one setData of its directory, in the multi");
	is(scalar(grep { $_->[1] eq '12' && $_->[2] eq "/zklock/$n" } @ops), 0,
		"(1) $n: no listing (the setData found the new node alone)");
}
is(scalar(grep { $_->[1] eq '14.5' } @ops), 4, '(1) four setData in all, each of a lock directory');
is($c1->{acquired} - $c0->{acquired}, 4, '(1) four acquires');
my $extra = $c1->{zk_requests} - $c0->{zk_requests} - 4;
ok($extra >= $w0 && $extra <= $w1,
	"(1) zk_status() counts a create per lock (and $extra own-node watches)");

$from = scalar($wire->ops);
$c1 = counters();
release_together(@b);
@ops = ops_since($from);
is(scalar(grep { $_->[1] eq '14' } @ops), 1, '(1) the four deletes went as one multi') or show_ops($from);
for my $i (0 .. $#b)
{
	my $n = $b[$i];
	is(scalar(grep { $_->[1] eq '14.2' && $_->[2] =~ m{^/zklock/$n/} } @ops), 1, "(1) $n: one delete, in the multi");
	is(scalar(grep { $_->[2] =~ m{^/zklock/$n} && $_->[1] !~ /^(14|14\.2|4)$/ } @ops), 0,
		"(1) $n: no other request for the release (but an own-node watch of a hold that lasted)");
}
wait_until(sub { counters()->{released} - $c1->{released} == 4 }, 10, 'every release is counted');
my $c2 = counters();
is($c2->{release_requests} - $c1->{release_requests}, 4, '(1) one request per release: its delete');
$extra = $c2->{zk_requests} - $c1->{zk_requests} - 4;
ok($extra >= 0 && $extra <= $own_watches->(),
	"(1) zk_status() counts a delete per lock (and $extra own-node watches the relay saw)");
is($c2->{slots_used}, 0, '(1) every slot is freed');

# (2) One create fails: the directories do not exist (any more: an
# operator deleted them once they were listed and emptied).
my @n = qw(fresh1 fresh2 fresh3);
learn('(2)', @n);
wait_until(sub { !grep { zk_ls($zk, "/zklock/$_") } @n }, 30, 'the directories are empty');
ok(zk_delete($zk, "/zklock/$_"), "(2) the directory of $_ is deleted") for @n;
$from = scalar($wire->ops);
@tokens = acquire_together(@n);
check_holds('(2)', \@n, \@tokens);
@ops = ops_since($from);
ok((grep { $_->[1] eq '14' } @ops), '(2) the creates went as one multi') or show_ops($from);
for my $n (@n)
{
	ok((grep { $_->[1] =~ /^(1|15)$/ && $_->[2] =~ m{^/zklock/$n/} } @ops), "(2) $n: its create went again alone");
}
release_together(@n);

# (3) One delete finds its node gone.
my @d = map { "del$_" } 1 .. 3;
zk_create($zk, "/zklock/$_") for @d;
@tokens = acquire_together(@d);
my $gone = held_znode($a, $pid[1], $d[1]);
$from = scalar($wire->ops);
my $c3 = counters();
freeze_worker($wpid);
ok(zk_delete($zk, $gone), '(3) an operator deletes del2\'s node while the worker is frozen');
for my $i (0 .. $#d)
{
	is(bg_result($s[$i], "SELECT zk_lock_release('$d[$i]')"), 't', "(3) $d[$i] is released");
}
thaw_worker($wpid);
wait_until(sub { !grep { zk_ls($zk, "/zklock/$_") } @d }, 30, 'the released nodes are gone');
is(join(',', map { zk_ls($zk, "/zklock/$_") } @d), '', '(3) no node is left');
@ops = ops_since($from);
ok((grep { $_->[1] eq '14' } @ops), '(3) the deletes went as one multi') or show_ops($from);
is(scalar(grep { $_->[1] eq '2' } @ops), 3, '(3) ... which failed whole: each delete went again alone')
  or show_ops($from);
wait_until(sub { counters()->{slots_used} == 0 }, 10, 'every slot is freed');
is(counters()->{slots_used}, 0, '(3) every slot is freed');

# (4) The answer of a multi is lost with its connection.
my @l = map { "lost$_" } 1 .. 3;
zk_create($zk, "/zklock/$_") for @l;
learn('(4)', @l);
$wire->lose_answer([14], '/zklock/lost1/');
@tokens = acquire_together(@l);
ok($wire->fired, '(4) the answer to the multi of creates was lost');
check_holds('(4)', \@l, \@tokens);
$wire->lose_answer([14], '/zklock/lost1/');
release_together(@l);
ok($wire->fired, '(4) the answer to the multi of deletes was lost');
is(join(',', map { zk_ls($zk, "/zklock/$_") } @l), '', '(4) no node is left');
wait_until(sub { counters()->{slots_used} == 0 }, 10, 'every slot is freed');

# (5) The session expires after a multi's answer was lost: from before the
# multi goes, the relay refuses new connections (the one open goes on), so
# the worker cannot reconnect in the old session once the answer is lost
# and its connection closed; it is let in again once ZooKeeper has expired
# that session.
my @e = map { "exp$_" } 1 .. 3;
zk_create($zk, "/zklock/$_") for @e;
learn('(5)', @e);
my $old_session = zk_status_of($a)->{session_id};
$wire->lose_answer([14], '/zklock/exp1/');
$wire->refuse;
freeze_worker($wpid);
bg_start($s[$_], "SELECT zk_lock_acquire('$e[$_]', '60s')") for 0 .. 2;
wait_until(sub { $a->safe_psql('postgres', "SELECT count(*) FROM zk_locks WHERE state = 'waiting'") == 3 },
	10, 'every request is posted');
thaw_worker($wpid);
wait_until(sub { $wire->fired }, 30, 'the multi went');
# The multi's nodes are the old session's ephemerals: they go with it.
wait_until(sub { !grep { zk_ls($zk, "/zklock/$_") } @e }, 30, 'ZooKeeper expired A\'s session');
$wire->admit;
@tokens = ();
for my $i (0 .. 2)
{
	my ($out, $err) = bg_collect($s[$i]);
	my ($token) = $out =~ /^(\d+)$/m;
	push @tokens, $token;
	ok(defined $token, "(5) $e[$i] is granted after the expiry") or diag("$out $err");
}
isnt(zk_status_of($a)->{session_id}, $old_session, '(5) in a new session');
check_holds('(5)', \@e, \@tokens);
release_together(@e);
is(join(',', map { zk_ls($zk, "/zklock/$_") } @e), '', '(5) no node is left');

# (6) A directory that refuses WRITE.
my @r = map { "acl$_" } 1 .. 3;
zk_create($zk, "/zklock/$_") for @r;
learn('(6)', @r);
my $kazoo = kazoo_peer($zk);
is($kazoo->cmd("set_acl /zklock/acl2 world:anyone:rcda"), 'ok', '(6) acl2\'s directory grants no WRITE');
$from = scalar($wire->ops);
@tokens = acquire_together(@r);
check_holds('(6)', \@r, \@tokens);
@ops = ops_since($from);
ok((grep { $_->[1] eq '14.5' && $_->[2] eq '/zklock/acl2' } @ops), '(6) a multi tried to write acl2\'s directory')
  or show_ops($from);
for my $n (@r)
{
	ok((grep { $_->[1] =~ /^(1|15)$/ && $_->[2] =~ m{^/zklock/$n/} } @ops), "(6) $n: its create went again alone");
}
release_together(@r);
$from = scalar($wire->ops);
@tokens = acquire_together(@r);
check_holds('(6) again', \@r, \@tokens);
@ops = ops_since($from);
is(scalar(grep { $_->[1] eq '14.5' && $_->[2] eq '/zklock/acl2' } @ops), 0,
	'(6) again: no multi writes acl2\'s directory any more') or show_ops($from);
ok((grep { $_->[1] =~ /^(1|15)$/ && $_->[2] =~ m{^/zklock/acl2/} } @ops), '(6) again: acl2\'s create went alone');
for my $n ('acl1', 'acl3')
{
	is(scalar(grep { $_->[1] eq '14.1' && $_->[2] =~ m{^/zklock/$n/} } @ops), 1, "(6) again: $n\'s create went in a multi");
	is(scalar(grep { $_->[1] =~ /^(1|15)$/ && $_->[2] =~ m{^/zklock/$n/} } @ops), 0, "(6) again: $n\'s create did not go alone");
}
release_together(@r);
is(join(',', map { zk_ls($zk, "/zklock/$_") } @r), '', '(6) no node is left');
$kazoo->quit;

done_testing();
