# The scenarios the interop tests (test/t/020_interop_curator.pl and
# test/t/021_interop_kazoo.pl) run alike against a lock client of another
# library (test/peers/): one ZooKeeper server, one PostgreSQL node "a" with
# zklock, one peer and the lock 'x', shared both ways.  Each scenario is a
# method that makes its own TAP assertions, named after the peer.
#
#   use ZklockTest;
#   use ZklockPeers;
#
#   my $t = ZklockPeers->start('kazoo');        # asserts the lock path
#   $t->peer_excludes_zklock('lock');
#   is($t->try('rlock'), 'true', 'kazoo takes the read lock');
#   is($t->release('rlock'), 'ok', 'kazoo releases the read lock');
#   $t->finish;                                 # nothing left in ZooKeeper
#
# What differs between the peers (their command names, what they call their
# locks, the unit of their waits, the layout of their nodes) is in %peers
# below; the peer-specific scenarios stay in the tests.
package ZklockPeers;

use strict;
use warnings FATAL => 'all';

use Carp;
use Test::More;
use ZklockTest;

# Per peer: how to start it, its name in test names (the client label of
# zk_lock_contenders and the node data are derived from the key), its
# waits per second, and per command prefix ("mutex" for mutex_try and
# mutex_release) the lock it names, the part it plays and the name of the
# nodes it creates.
my %peers = (
	curator => {
		start      => \&curator_peer,
		name       => 'Curator',
		per_second => 1000,                       # CuratorPeer waits in ms
		locks      => {
			mutex => [ 'the mutex',      'holder', qr/^_c_[0-9a-f-]+-lock-\d{10}$/ ],
			read  => [ 'the read lock',  'reader', qr/^_c_[0-9a-f-]+-__READ__\d{10}$/ ],
			write => [ 'the write lock', 'writer', qr/^_c_[0-9a-f-]+-__WRIT__\d{10}$/ ],
		},
	},
	kazoo => {
		start      => \&kazoo_peer,
		name       => 'kazoo',
		per_second => 1,                          # kazoo_peer waits in s
		locks      => {
			lock  => [ 'the lock',       'holder', qr/^[0-9a-f]{32}__lock__\d{10}$/ ],
			rlock => [ 'the read lock',  'reader', qr/^[0-9a-f]{32}__rlock__\d{10}$/ ],
			wlock => [ 'the write lock', 'writer', qr/^[0-9a-f]{32}__lock__\d{10}$/ ],
		},
	},
);

# zklock's own nodes in the readwrite layout, named like Curator's.
my %zklock_node = (
	exclusive => qr/^_c_[0-9a-f-]+-__WRIT__\d{10}$/,
	shared    => qr/^_c_[0-9a-f-]+-__READ__\d{10}$/,
);

my $layout_rw = "SET zklock.exclusive_layout = 'readwrite';";

=pod

=head1 ZklockPeers

=over

=item ZklockPeers->start($kind)

Start ZooKeeper (one server), node "a" and the peer $kind ('curator' or
'kazoo', connected), check that zk_lock_path('x') is the path the peer is
given, and open a background session of "a" that the scenarios hold the
lock with.  Returns the object the methods below are called on; its fields
zk, node, peer, path and session are there for the test's own steps.

=item $t->finish

Quit the session and the peer, and wait until nothing is left under the
lock's path (a test assertion).

=cut

sub start
{
	my ($class, $kind) = @_;
	my $spec = $peers{$kind} or croak "unknown peer kind '$kind'";
	my $zk = zk_start(1);
	my $node = zklock_node('a', $zk);
	my $self = bless {
		%$spec,
		client  => $kind,
		data    => "$kind-peer",
		zk      => $zk,
		node    => $node,
		peer    => $spec->{start}->($zk),
		path    => $node->safe_psql('postgres', "SELECT zk_lock_path('x')"),
		session => bg_session($node),
	}, $class;
	is($self->{path}, '/zklock/x', "the lock path $self->{name} is given");
	return $self;
}

sub finish
{
	my ($self) = @_;
	$self->{session}->quit;
	$self->{peer}->quit;
	$self->no_contender_left('at the end');
	return;
}

=item $t->sql_once($sql) / $t->sql_in($sql)

The output of $sql, or its error: in a fresh session of node "a" (which
ends at once, releasing what it took), or in the test's background session.

=item $t->try($cmd, $wait_s) / $t->release($cmd)

The peer's reply to "${cmd}_try PATH" (with a wait of $wait_s seconds,
given in the peer's unit, when defined) or to "${cmd}_release PATH".

=item $t->gets($cmd)

Poll until "${cmd}_try PATH" answers true (zklock's releases do not wait
for the delete); a test assertion.

=item $t->nodes

The children of the lock's path as ZooKeeper lists them, joined by commas.

=item $t->no_contender_left($what)

Wait until there is no child under the lock's path; a test assertion.

=item $t->what($cmd) / $t->who($cmd)

The name of the peer's lock $cmd ("the mutex") and of the peer as its
holder ("Curator") or as its reader or writer ("the Curator writer").

=cut

sub sql_once { my ($self, $sql) = @_; return sql_result($self->{node}, $sql) }
sub sql_in   { my ($self, $sql) = @_; return bg_result($self->{session}, $sql) }

sub try
{
	my ($self, $cmd, $wait_s) = @_;
	my $wait = defined $wait_s ? ' ' . $wait_s * $self->{per_second} : '';
	return $self->{peer}->cmd("${cmd}_try $self->{path}$wait");
}

sub release
{
	my ($self, $cmd) = @_;
	return $self->{peer}->cmd("${cmd}_release $self->{path}");
}

sub gets
{
	my ($self, $cmd) = @_;
	local $Test::Builder::Level = $Test::Builder::Level + 1;
	return peer_gets($self->{peer}, $self->{path}, $cmd);
}

sub nodes
{
	my ($self) = @_;
	return join(',', zk_ls($self->{zk}, $self->{path}));
}

sub no_contender_left
{
	my ($self, $what) = @_;
	local $Test::Builder::Level = $Test::Builder::Level + 1;
	return zk_wait_empty($self->{zk}, $self->{path}, $what);
}

sub _lock
{
	my ($self, $cmd) = @_;
	return @{ $self->{locks}{$cmd} // croak "$self->{name} has no lock '$cmd'" };
}

sub what { my ($self, $cmd) = @_; return ($self->_lock($cmd))[0] }

sub who
{
	my ($self, $cmd) = @_;
	my $role = ($self->_lock($cmd))[1];
	return $role eq 'holder' ? $self->{name} : "the $self->{name} $role";
}

=item $t->peer_excludes_zklock($cmd, $layout)

The peer takes its exclusive lock $cmd (its node named as the peer names
it); zk_lock_try, zk_lock_try_shared and a timed zk_lock_acquire fail
(zklock's exclusive requests in layout $layout, default 'mutex'); the peer
releases and its node goes.

=cut

sub peer_excludes_zklock
{
	my ($self, $cmd, $layout) = @_;
	my ($what, undef, $node_re) = $self->_lock($cmd);
	my $n = $self->{name};
	my $set = $layout ? "SET zklock.exclusive_layout = '$layout';" : '';
	my $in = $layout ? " ($layout layout)" : '';

	is($self->try($cmd), 'true', "$n takes $what");
	like($self->nodes, $node_re, "${n}'s own node layout for $what");
	is($self->sql_once("$set SELECT zk_lock_try('x')"), 'f', "zk_lock_try$in fails while $n holds $what");
	is($self->sql_once("SELECT zk_lock_try_shared('x')"), 'f', "zk_lock_try_shared fails while $n holds $what");
	is($self->sql_once("$set SELECT zk_lock_acquire('x', '300ms')"),
		'ERROR 55P03: could not obtain ZooKeeper lock "x"',
		"a timed zk_lock_acquire$in times out while $n holds $what");
	is($self->release($cmd), 'ok', "$n releases $what");
	$self->no_contender_left("after $n held $what");
	return;
}

=item $t->zklock_excludes_peer($cmd, @also)

zklock takes and releases the lock with zk_lock_try, then holds it with
zk_lock_acquire in the test's session: the peer cannot take its exclusive
lock $cmd, at once or with a 200 ms wait, nor its locks @also; then it
waits for $cmd, behind zklock's node, and is granted when zklock releases
(peer_waits_behind_zklock), and releases.

=cut

sub zklock_excludes_peer
{
	my ($self, $cmd, @also) = @_;
	my $n = $self->{name};

	is($self->sql_in("SELECT zk_lock_try('x')"), 't', "zk_lock_try succeeds after $n released");
	is($self->sql_in("SELECT zk_lock_release('x')"), 't', 'zklock releases');
	is($self->sql_in("SELECT zk_lock_acquire('x') > 0"), 't', 'zk_lock_acquire holds x');
	is($self->try($cmd), 'false', "$n cannot take " . $self->what($cmd) . ' while zklock holds x');
	is($self->try($cmd, 0.2), 'false', 'nor with a 200 ms wait');
	is($self->try($_), 'false', 'nor ' . $self->what($_)) for @also;

	$self->peer_waits_behind_zklock($cmd, 'exclusive');
	is($self->release($cmd), 'ok', "$n releases " . $self->what($cmd));
	$self->no_contender_left("after the $cmd rounds");
	return;
}

=item $t->peer_waits_behind_zklock($cmd, $mode)

With the test's session holding the lock in $mode ('exclusive' or
'shared', its last hold), the peer asks for its exclusive lock $cmd with a
20 s wait and queues behind zklock's node; zk_lock_contenders shows
zklock holding and the peer waiting, with its node data; zklock releases
and the peer is granted.  The peer still holds $cmd on return.

=cut

sub peer_waits_behind_zklock
{
	my ($self, $cmd, $mode) = @_;
	my $who = $self->who($cmd);
	my $does = $mode eq 'shared' ? 'reads' : 'holds';
	my $release = $mode eq 'shared' ? 'zk_lock_release_shared' : 'zk_lock_release';

	$self->{peer}->send("${cmd}_try $self->{path} " . 20 * $self->{per_second});
	wait_until(sub { my @kids = zk_ls($self->{zk}, $self->{path}); @kids == 2 },
		10, "$who to queue behind zklock");
	is( $self->sql_once(
			"SELECT position, client, mode, state, coalesce(data, '-') "
			  . "FROM zk_lock_contenders('x') ORDER BY position"),
		"1|zklock|$mode|held|-\n2|$self->{client}|exclusive|waiting|$self->{data}",
		"zk_lock_contenders: zklock $does, $who waits (node data shown raw)");
	is($self->sql_in("SELECT $release('x')"), 't', "zklock drops its $mode hold");
	is($self->{peer}->reply(20), 'true', "$who is granted after zklock released");
	return;
}

=item $t->zklock_waits_behind_peer($cmd, $layout)

With the peer holding its lock $cmd, a new session of node "a" asks for
the lock exclusively (in layout $layout, default 'mutex') and queues
behind the peer's node alone; zk_lock_contenders shows the peer holding
(with its node data) and the backend waiting (with its pid); the peer
releases, the backend is granted and releases, and no node is left.

=cut

sub zklock_waits_behind_peer
{
	my ($self, $cmd, $layout) = @_;
	my ($what, $role) = $self->_lock($cmd);
	my $n = $self->{name};
	my $who = $self->who($cmd);
	my $mode = $role eq 'reader' ? 'shared' : 'exclusive';
	my $set = $layout ? "SET zklock.exclusive_layout = '$layout';\n" : '';

	my $w = bg_session($self->{node});
	my $wpid = bg_result($w, 'SELECT pg_backend_pid()');
	$w->query_until(qr/waiting/, "\\echo waiting\n${set}SELECT zk_lock_acquire('x', '30s') > 0;\n");
	wait_until(
		sub {
			my @kids = zk_ls($self->{zk}, $self->{path});
			@kids == 2
			  && $self->{node}->safe_psql('postgres',
				"SELECT count(*) FROM zk_locks WHERE name = 'x' AND state = 'waiting'") eq '1';
		},
		15,
		"the zklock waiter to queue behind $who alone");
	is( $self->sql_once(
			"SELECT position, client, mode, state, coalesce(holder->>'pid', '-'), coalesce(data, '-') "
			  . "FROM zk_lock_contenders('x') ORDER BY position"),
		"1|$self->{client}|$mode|held|-|$self->{data}\n2|zklock|exclusive|waiting|$wpid|-",
		"zk_lock_contenders: $who holds (node data shown raw), the zklock backend waits");
	is($self->release($cmd), 'ok', "$n releases $what");
	my ($granted) = split /\n/, bg_result($w, "SELECT 'done'");
	is($granted, 't', "the zklock waiter is granted after $n released");
	is(bg_result($w, "SELECT zk_lock_release('x')"), 't', 'the waiter releases');
	$w->quit;
	$self->no_contender_left("after the zklock waiter behind $who");
	return;
}

=item $t->peer_reader_shares($cmd, $layout)

The peer takes its read lock $cmd; zklock's test session and a second
session join it with zk_lock_try_shared, zk_lock_try (layout $layout,
default 'mutex') fails against the readers and still against the peer's
alone once zklock's session dropped its hold; then a zklock writer in
that layout waits behind the peer's reader (zklock_waits_behind_peer).

=cut

sub peer_reader_shares
{
	my ($self, $cmd, $layout) = @_;
	my $n = $self->{name};
	my $what = $self->what($cmd);
	my $set = $layout ? "SET zklock.exclusive_layout = '$layout';" : '';
	my $in = $layout ? " ($layout layout)" : '';

	is($self->try($cmd), 'true', "$n takes $what");
	is($self->sql_in("SELECT zk_lock_try_shared('x')"), 't', "zk_lock_try_shared succeeds next to ${n}'s reader");
	is($self->sql_once("SELECT zk_lock_try_shared('x')"), 't', 'another zklock session joins the readers');
	is($self->sql_once("$set SELECT zk_lock_try('x')"), 'f', "zk_lock_try$in fails against the readers");
	is($self->sql_in("SELECT zk_lock_release_shared('x')"), 't', 'zklock drops its shared hold');
	is($self->sql_once("$set SELECT zk_lock_try('x')"), 'f', "zk_lock_try$in still fails against ${n}'s reader");
	$self->zklock_waits_behind_peer($cmd, $layout);
	return;
}

=item $t->zklock_writes_readwrite(\@refused, $cmd)

zklock holds the lock exclusively in the readwrite layout (its node named
like a Curator write lock) in the test's session: the peer cannot take
its locks @refused; zklock releases and the peer gets its lock $cmd, then
releases it.

=item $t->zklock_reads($reader, @refused)

zklock holds the lock shared in the test's session (its node named like a
Curator read lock): the peer takes and releases its read lock $reader
next to it and cannot take its locks @refused.  zklock still holds on
return.

=cut

sub zklock_writes_readwrite
{
	my ($self, $refused, $cmd) = @_;
	my $n = $self->{name};

	is($self->sql_in("$layout_rw SELECT zk_lock_acquire('x') > 0"), 't',
		'zklock holds x exclusively (readwrite layout)');
	like($self->nodes, $zklock_node{exclusive}, 'its node has the layout of a Curator write lock');
	is($self->try($_), 'false', "$n cannot take " . $self->what($_)) for @$refused;
	is($self->sql_in("SELECT zk_lock_release('x'); RESET zklock.exclusive_layout"), 't',
		'zklock releases its exclusive hold');
	ok($self->gets($cmd), "$n takes " . $self->what($cmd) . ' after zklock released');
	is($self->release($cmd), 'ok', "$n releases " . $self->what($cmd));
	$self->no_contender_left('after zklock held exclusively');
	return;
}

sub zklock_reads
{
	my ($self, $reader, @refused) = @_;
	my $n = $self->{name};

	is($self->sql_in("SELECT zk_lock_acquire_shared('x') > 0"), 't', 'zklock holds x shared');
	like($self->nodes, $zklock_node{shared}, 'its node has the layout of a Curator read lock');
	is($self->try($reader), 'true', "$n takes " . $self->what($reader) . ' next to it');
	is($self->release($reader), 'ok', "$n releases " . $self->what($reader));
	is($self->try($_), 'false', "$n cannot take " . $self->what($_)) for @refused;
	return;
}

=back

=cut

1;
