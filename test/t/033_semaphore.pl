# Semaphores in the layout of Curator's InterProcessSemaphoreV2 (locks/
# for its mutex, leases/ for one node per holder), shared by SQL sessions
# of three clusters and a Curator program:
#  (1) Interop both ways with permits = 3: Curator holds the three permits,
#      so zk_semaphore_try fails and a timed acquire times out (55P03), and
#      an acquire waits until Curator returns one; SQL sessions of three
#      clusters hold the three, so Curator's acquire fails, and waits until
#      one is released.  zk_semaphore_contenders and zk_locks show the holders
#      of both clients; the returned token is the lease node's czxid.
#  (2) A waiter that times out and one that is cancelled, the one holding
#      the semaphore's mutex and the one queued behind it, leave no lease
#      and no mutex node.
#  (3) A holder whose backend is terminated frees its permit: the waiter is
#      granted.
#  (4) No herd: the ZooKeeper requests per acquisition (zk_status's
#      zk_requests) with eight waiters queued are bounded, and about what
#      they are with one.
#  (5) Never more than three holders: two sessions in each cluster and the
#      Curator program take the semaphore over and over (transaction scope,
#      a short hold each); every committed hold's [grant, commit] interval
#      (clock_timestamp after the grant, the commit timestamp) and every
#      Curator hold's interval (measured inside its hold), are checked: at
#      no instant do more than three overlap.
# Nothing is left in ZooKeeper at the end.
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::RealBin/../lib";
use ZklockTest;
use Test::More;
use IPC::Run;
use PostgreSQL::Test::Utils;
use Time::HiRes qw(time sleep);

my $zk = zk_start(1);
my @nodes = map { zklock_node($_, $zk, conf => "track_commit_timestamp = on\n") } qw(a b c);
my ($na, $nb, $nc) = @nodes;
my $curator = curator_peer($zk);

is($na->safe_psql('postgres', "SELECT zk_lock_path('si')"), '/zklock/si', 'a semaphore lives at its lock path');
my $path = '/zklock/si';

sub leases { return join(',', zk_ls($zk, "$_[0]/leases")) }
sub mutex_nodes { return join(',', zk_ls($zk, "$_[0]/locks")) }
sub n_leases { return scalar(my @l = zk_ls($zk, "$_[0]/leases")) }
sub n_mutex { return scalar(my @l = zk_ls($zk, "$_[0]/locks")) }

sub session
{
	my ($node, $sql) = @_;
	my $s = bg_session($node);
	$s->query_safe('\set VERBOSITY verbose');
	my $pid = $s->query_safe('SELECT pg_backend_pid()');
	my $out = defined $sql ? $s->query_safe($sql) : undef;
	return ($s, $pid, $out);
}

# A session of $node that waits for the semaphore ($timeout), started in
# the background; returns [session, pid].
sub waiter
{
	my ($node, $name, $permits, $timeout) = @_;
	my ($s, $pid) = session($node);
	bg_start($s, "SELECT 'granted', zk_semaphore_acquire('$name', $permits, '$timeout') > 0");
	return { s => $s, pid => $pid };
}

sub contenders
{
	my ($node, $name) = @_;
	return $node->safe_psql('postgres',
		"SELECT role || ' ' || state || ' ' || client FROM zk_semaphore_contenders('$name') ORDER BY position");
}

# --- (1) Curator holds the three permits

is($curator->cmd("sem_acquire $path 3"), 'true', 'Curator takes a permit of si (3 permits)') for 1 .. 3;
like(leases($path), qr/^(_c_[0-9a-f-]+-lease-\d{10},?){3}$/, "Curator's three leases in leases/");
is(contenders($na, 'si'), join("\n", ('lease holds curator') x 3), 'zk_semaphore_contenders: three Curator leases hold');
is(sql_result($na, "SELECT zk_semaphore_try('si', 3)"), 'f', 'zk_semaphore_try fails while Curator holds the three permits');
like(sql_result($nb, "SELECT zk_semaphore_acquire('si', 3, '300ms')"), qr/^ERROR 55P03: /,
	'a timed zk_semaphore_acquire times out (55P03)');
is(n_leases($path) . '/' . n_mutex($path), '3/0', '... and leaves no lease and no mutex node');

my $w = waiter($nc, 'si', 3, '30s');
wait_until(sub { n_mutex($path) == 1 && n_leases($path) == 4 }, 15,
	'the SQL waiter to hold the mutex and count its lease');
like(contenders($na, 'si'), qr/^(lease holds curator\n){3}lease waits zklock\nmutex waits zklock$/,
	'zk_semaphore_contenders: three Curator holders, the zklock waiter (its lease being counted, its mutex node)');
is($curator->cmd("sem_release $path"), 'ok', 'Curator returns one permit');
my ($out, $err) = bg_collect($w->{s});
like($out, qr/^granted\|t$/m, 'the SQL waiter is granted') or diag($err);
is(n_leases($path) . '/' . n_mutex($path), '3/0', 'two Curator leases and the SQL one; the mutex is free');
my $token = $w->{s}->query_safe("SELECT fencing_token FROM zk_locks WHERE pid = $w->{pid} AND name = 'si'");
is($nc->safe_psql('postgres', "SELECT mode || ' ' || state FROM zk_locks WHERE pid = $w->{pid}"), 'semaphore held',
	"zk_locks shows the hold with mode 'semaphore'");
is( $nc->safe_psql('postgres',
		"SELECT count(*) FROM zk_semaphore_contenders('si') WHERE state = 'holds' AND client = 'zklock' AND czxid = $token"),
	'1', "the SQL holder's token is its lease node's czxid");
is($w->{s}->query_safe("SELECT zk_semaphore_release('si')"), 't', 'the SQL holder releases');
is($curator->cmd("sem_release $path"), 'ok', 'Curator returns its permits') for 1 .. 2;
$w->{s}->quit;
wait_until(sub { n_leases($path) == 0 }, 10, 'the leases to go');

# --- (1) SQL sessions of three clusters hold the three permits

my @h;
for my $node (@nodes)
{
	my ($s, $pid, $tok) = session($node, "SELECT zk_semaphore_acquire('si', 3, '10s')");
	like($tok, qr/^\d+$/, uc($node->name) . ' takes a permit of si');
	push @h, { s => $s, pid => $pid, token => $tok, node => $node };
}
is(n_leases($path), 3, 'three SQL leases');
is($curator->cmd("sem_acquire $path 3"), 'false', "Curator's acquire fails while SQL holds the three permits");
is($curator->cmd("sem_acquire $path 3 300"), 'false', '... also with a 300 ms wait');
is(n_leases($path) . '/' . n_mutex($path), '3/0', "Curator's failed acquires leave no node");
is(sql_result($na, "SELECT zk_semaphore_try('si', 3)"), 'f', 'a fourth SQL session cannot take a permit');
is($h[0]{s}->query_safe("SELECT zk_semaphore_try('si', 3)"), 't', 'a holder takes the semaphore again (reentrant)');
is(n_leases($path), 3, '... without a second lease');
is($h[0]{s}->query_safe("SELECT zk_semaphore_release('si')"), 't', '... and releases once, still holding');
$curator->send("sem_acquire $path 3 20000");
wait_until(sub { n_mutex($path) == 1 && n_leases($path) == 4 }, 15, 'Curator to wait for a permit');
is($h[1]{s}->query_safe("SELECT zk_semaphore_release('si')"), 't', "B's holder releases");
is($curator->reply(20), 'true', 'Curator is granted the permit B returned');
my $c_token = $curator->cmd("sem_token $path");
is( $na->safe_psql('postgres',
		"SELECT state || ' ' || client FROM zk_semaphore_contenders('si') WHERE czxid = $c_token"),
	'holds curator', "zk_semaphore_contenders shows Curator's lease holding");

# --- (2) timed-out and cancelled waiters leave nothing behind

# The semaphore is full (A, C, Curator).  W1 will hold the mutex and wait
# for leases, W2 waits for the mutex behind it.
my $w1 = waiter($nb, 'si', 3, '30s');
wait_until(sub { n_mutex($path) == 1 && n_leases($path) == 4 }, 15, 'W1 to wait for the leases');
my $w2 = waiter($nb, 'si', 3, '30s');
wait_until(sub { n_mutex($path) == 2 }, 15, 'W2 to queue for the mutex');
like(sql_result($na, "SELECT zk_semaphore_acquire('si', 3, '300ms')"), qr/^ERROR 55P03: /,
	'a third waiter, queued for the mutex, times out with 55P03');
wait_until(sub { n_mutex($path) == 2 }, 10, 'the timed-out waiter\'s mutex node to go');
is(n_mutex($path) . '/' . n_leases($path), '2/4', '... and leaves no node');
ok($nb->safe_psql('postgres', "SELECT pg_cancel_backend($w2->{pid})"), 'W2 (queued for the mutex) is cancelled');
($out, $err) = bg_collect($w2->{s});
like($err, qr/57014: canceling statement due to user request/, 'W2: cancelled');
wait_until(sub { n_mutex($path) == 1 }, 10, 'W2\'s mutex node to go');
is(n_mutex($path) . '/' . n_leases($path), '1/4', 'W2 left no node');
ok($nb->safe_psql('postgres', "SELECT pg_cancel_backend($w1->{pid})"), 'W1 (holding the mutex, its lease counted) is cancelled');
($out, $err) = bg_collect($w1->{s});
like($err, qr/57014: canceling statement due to user request/, 'W1: cancelled');
wait_until(sub { n_mutex($path) == 0 && n_leases($path) == 3 }, 10, 'W1\'s nodes to go');
is(n_mutex($path) . '/' . n_leases($path), '0/3', 'W1 left neither its lease nor its mutex node');
is(join(',', map { $_->safe_psql('postgres', "SELECT count(*) FROM zk_locks WHERE name = 'si' AND state <> 'held'") } @nodes),
	'0,0,0', 'no cluster keeps a request of the waiters');

# --- (3) a holder whose backend is terminated frees its permit

my $w3 = waiter($nb, 'si', 3, '30s');
wait_until(sub { n_mutex($path) == 1 && n_leases($path) == 4 }, 15, 'W3 to wait');
is($nc->safe_psql('postgres', "SELECT pg_terminate_backend($h[2]{pid})"), 't', "C's holder is terminated");
($out, $err) = bg_collect($w3->{s});
like($out, qr/^granted\|t$/m, 'W3 is granted the permit the terminated holder had') or diag($err);
eval { $h[2]{s}->quit; 1 };
is($w3->{s}->query_safe("SELECT zk_semaphore_release('si')"), 't', 'W3 releases');
is($h[0]{s}->query_safe("SELECT zk_semaphore_release('si')"), 't', "A's holder releases");
is($curator->cmd("sem_release $path"), 'ok', 'Curator releases');
$_->quit for ($w1->{s}, $w2->{s}, $w3->{s}, $h[0]{s}, $h[1]{s});
wait_until(sub { n_leases($path) + n_mutex($path) == 0 }, 10, 'si to empty');
is(n_mutex($path) . '/' . n_leases($path), '0/0', 'nothing is left of si');

# --- (4) ZooKeeper requests per acquisition, 1 and 8 waiters

# One holder of 'sr' (1 permit) in A and $n waiters in A, each of which
# releases as soon as it is granted; A's zk_requests over the whole chain,
# per acquisition.
sub requests_per_acquisition
{
	my ($n) = @_;
	my ($hold) = session($na, "SELECT zk_semaphore_acquire('sr', 1, '10s') > 0");
	my $before = zk_status_of($na)->{zk_requests};
	my @ws;
	for my $i (1 .. $n)
	{
		my ($s, $pid) = session($na);
		bg_start($s, "SELECT zk_semaphore_acquire('sr', 1, '60s') > 0, zk_semaphore_release('sr')");
		push @ws, $s;
		wait_until(sub { n_mutex('/zklock/sr') == $i }, 15, "waiter $i of $n to queue");
	}
	$hold->query_safe("SELECT zk_semaphore_release('sr')");
	my $granted = 0;
	for my $s (@ws)
	{
		my ($o, $e) = bg_collect($s);
		$granted++ if $o =~ /^t\|t$/m;
		$s->quit;
	}
	$hold->quit;
	wait_until(sub { n_leases('/zklock/sr') + n_mutex('/zklock/sr') == 0 }, 15, 'sr to empty');
	wait_until(sub { $na->safe_psql('postgres', "SELECT count(*) FROM zk_locks WHERE name = 'sr'") eq '0' }, 15,
		'every release of sr to be done');
	is($granted, $n, "$n waiter(s): each is granted in turn");
	return (zk_status_of($na)->{zk_requests} - $before) / $n;
}
# The cost with one waiter is the least of two rounds: a round that found
# a container (leases/, locks/) removed pays once more to create it.
my $r1 = requests_per_acquisition(1);
my $r2 = requests_per_acquisition(1);
my $per1 = $r1 < $r2 ? $r1 : $r2;
my $per8 = requests_per_acquisition(8);
diag(sprintf('ZooKeeper requests per acquisition (acquire, release, and the holder\'s release shared out):'
	  . ' %.2f with 1 waiter, %.2f with 8', $per1, $per8));
cmp_ok($per8, '<=', 12, sprintf('with 8 waiters an acquisition costs at most 12 requests (%.2f)', $per8));
cmp_ok($per8, '<=', $per1 + 1.5,
	sprintf('... about what it costs with 1 waiter (%.2f vs %.2f, at most 1.5 more; a herd of 8 costs about 3.5 more): a release wakes one waiter, not the herd',
		$per8, $per1));

# --- (5) never more than three holders

for my $node (@nodes)
{
	$node->safe_psql('postgres', q{
CREATE TABLE sem_hold (cluster text, session int, iter int, token bigint,
                       t_start timestamptz, t_end timestamptz, PRIMARY KEY (session, iter))});
}
my $iterations = 40;
my $dir = PostgreSQL::Test::Utils::tempdir('sem');
my @runs;
for my $node (@nodes)
{
	for my $sess (1 .. 2)
	{
		my $name = $node->name;
		my $sql = "\\set VERBOSITY verbose\n";
		for my $i (1 .. $iterations)
		{
			$sql .= "BEGIN;\n"
			  . "SELECT tok, clock_timestamp() AS t_start FROM zk_semaphore_acquire_xact('sc', 3, '60s') AS tok \\gset\n"
			  . "SELECT FROM pg_sleep(0.003 + random() * 0.010);\n"
			  . "INSERT INTO sem_hold VALUES ('$name', $sess, $i, :tok, :'t_start', clock_timestamp());\n"
			  . "COMMIT;\n";
		}
		my $base = "$dir/${name}_$sess";
		PostgreSQL::Test::Utils::append_to_file("$base.sql", $sql);
		push @runs, {
			tag => "$name/$sess",
			run => IPC::Run::start(
				[ 'psql', '-X', '-q', '-A', '-t', '-v', 'ON_ERROR_STOP=0', '-d', $node->connstr('postgres'), '-f', "$base.sql" ],
				'<', \undef, '>', "$base.out", '2>', "$base.err", IPC::Run::timeout(180)),
			err => "$base.err",
		};
	}
}
# Curator, meanwhile: as many holds, each measured inside the hold.
my @curator_holds;
for my $i (1 .. $iterations)
{
	local $curator->{quiet} = 1;
	my $got = $curator->cmd('sem_acquire /zklock/sc 3 60000', 90);
	unless ($got eq 'true')
	{
		fail("Curator's acquire $i of sc: $got");
		last;
	}
	my $t0 = time;
	sleep(0.003 + rand(0.010));
	my $t1 = time;
	push @curator_holds, [ $t0 * 1e6, $t1 * 1e6, 'curator', $i ];
	$curator->cmd('sem_release /zklock/sc');
}
for my $r (@runs)
{
	ok(eval { $r->{run}->finish; 1 }, "session $r->{tag} ran its transactions") or diag($@);
	my $e = slurp_file($r->{err});
	is($e, '', "session $r->{tag}: no error") or diag($e);
}
is(scalar(@curator_holds), $iterations, "Curator held the semaphore $iterations times");

my @holds;
for my $node (@nodes)
{
	for my $line (split /\n/, $node->safe_psql('postgres', q{
SELECT (extract(epoch FROM t_start) * 1000000)::bigint,
       (extract(epoch FROM pg_xact_commit_timestamp(xmin)) * 1000000)::bigint,
       cluster || '/' || session, iter, token
  FROM sem_hold}))
	{
		push @holds, [ split /\|/, $line ];
	}
}
is(scalar(@holds), 6 * $iterations, 'every SQL transaction committed its hold');
my %tokens;
$tokens{ $_->[4] }++ for @holds;
is(scalar(keys %tokens), scalar(@holds), 'each committed hold had a lease of its own (distinct tokens)');

# The largest number of intervals open at one instant (an interval ending
# where another starts does not overlap it).
my @events = map { ([ $_->[0], 1, $_ ], [ $_->[1], -1, $_ ]) } @holds, @curator_holds;
my ($open, $max, @at_max) = (0, 0);
my %now;
for my $e (sort { $a->[0] <=> $b->[0] || $a->[1] <=> $b->[1] } @events)
{
	my $key = "$e->[2][2]#$e->[2][3]";
	if ($e->[1] > 0) { $now{$key} = $e->[2] } else { delete $now{$key} }
	$open += $e->[1];
	if ($open > $max)
	{
		$max = $open;
		@at_max = map { sprintf('%s iter %s [%.6f, %.6f]', $_->[2], $_->[3], $_->[0] / 1e6, $_->[1] / 1e6) } values %now;
	}
}
ok(!grep({ $_->[1] < $_->[0] } @holds), 'every committed hold began before its commit');
cmp_ok($max, '<=', 3, "never more than 3 holders at once ($max at most, over "
	  . scalar(@holds) . ' SQL and ' . scalar(@curator_holds) . ' Curator holds)')
  or diag("holds open at once:\n  " . join("\n  ", @at_max));
cmp_ok($max, '>=', 2, 'holders did overlap (the run exercised the permits)');

for my $name (qw(si sr sc))
{
	wait_until(sub { n_leases("/zklock/$name") + n_mutex("/zklock/$name") == 0 }, 10, "$name to empty");
	is(n_mutex("/zklock/$name") . '/' . n_leases("/zklock/$name"), '0/0', "no lease and no mutex node left of $name");
}
is(join(',', map { $_->safe_psql('postgres', 'SELECT count(*) FROM zk_locks') } @nodes), '0,0,0',
	'no cluster shows a request or hold');
$curator->quit;

done_testing();
