# Distributed deadlock detection (README, "Deadlocks across clusters").
# Each cycle is made for real, with sessions of real clusters waiting on
# each other; lock_timeout bounds every wait at deadlock_timeout + 2 s, so
# a cycle not broken in time ends in 55P03 instead of 40P01 and fails the
# test.  Exactly one member of each cycle gets 40P01 (the newest request),
# the others are granted, and no node is left in ZooKeeper.
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::RealBin/../lib";
use ZklockTest;
use ZklockTest::Deadlock;
use Test::More;
use Time::HiRes qw(sleep);

my $zk = zk_start(1);
my %nodes;
for my $name (qw(a b c))
{
	# C's session expires in (8): a short session timeout.
	$nodes{$name} = zklock_node($name, $zk,
		session_timeout => $name eq 'c' ? '2s' : '10s',
		conf => [ "cluster_name = '$name'", "deadlock_timeout = '1s'", "lock_timeout = '3s'" ]);
}
my ($a, $b, $c) = @nodes{qw(a b c)};

sub counter
{
	my ($node, $col) = @_;
	return $node->safe_psql('postgres', "SELECT $col FROM zk_status()");
}

sub no_nodes_left
{
	my ($what, @locks) = @_;
	ok(wait_until(sub { !grep { zk_ls($zk, "/zklock/$_") } @locks, '.waits' }, 30,
		"$what: no node is left"), "$what: no node is left (locks and published waits)");
}

sub sum_counter
{
	my ($col) = @_;
	my $sum = 0;
	$sum += counter($_, $col) for ($a, $b, $c);
	return $sum;
}

# (1) Two clusters, opposite order: B's request is the newer, B gives up.
{
	my $sa = holder($a, 'x');
	my $sb = holder($b, 'y');
	start_wait($sa, $a, 'y');
	start_wait($sb, $b, 'x');
	my $ra = finish_wait($sb);
	is($ra, '40P01', 'two clusters: the newer request (B) fails with 40P01 within deadlock_timeout + 2 s');
	like($sb->{last_err}, qr/Process $sa->{pid} of cluster "a" waits for ZooKeeper lock "y" in exclusive mode; blocked by process $sb->{pid} of cluster "b"\./,
		'the detail names the edge A -> B');
	like($sb->{last_err}, qr/Process $sb->{pid} of cluster "b" waits for ZooKeeper lock "x" in exclusive mode; blocked by process $sa->{pid} of cluster "a"\./,
		'the detail names the edge B -> A');
	is(finish_wait($sa), 'granted', 'the other member (A) is granted');
	is(counter($b, 'deadlocks_found'), '1', "B counts the deadlock it broke");
	is(counter($a, 'deadlocks_found'), '0', "A counts none");
	cmp_ok(counter($a, 'deadlock_checks'), '>=', 1, 'A ran a check');
	end_all($sa, $sb);
	no_nodes_left('two clusters', 'x', 'y');
}

# (2) Three clusters: A waits for B, B for C, C for A; C's request is the
# newest.  Once C gave up, B is granted, and A once B's transaction ends.
{
	my $found = sum_counter('deadlocks_found');
	my $sa = holder($a, 'p');
	my $sb = holder($b, 'q');
	my $sc = holder($c, 'r');
	start_wait($sa, $a, 'q');
	start_wait($sb, $b, 'r');
	start_wait($sc, $c, 'p');
	is(finish_wait($sc), '40P01', 'three clusters: the newest request (C) fails with 40P01');
	like($sc->{last_err}, qr/Process $sc->{pid} of cluster "c" waits for ZooKeeper lock "p" in exclusive mode; blocked by process $sa->{pid} of cluster "a"\.\nProcess $sa->{pid} of cluster "a" waits for ZooKeeper lock "q" in exclusive mode; blocked by process $sb->{pid} of cluster "b"\.\nProcess $sb->{pid} of cluster "b" waits for ZooKeeper lock "r" in exclusive mode; blocked by process $sc->{pid} of cluster "c"\./,
		'the detail lists the three edges in cycle order');
	is(finish_wait($sb), 'granted', 'B is granted r');
	$sb->query_safe('COMMIT');
	is(finish_wait($sa), 'granted', 'A is granted q once B committed');
	is(sum_counter('deadlocks_found') - $found, 1, 'one deadlock counted in all');
	end_all($sa, $sb, $sc);
	no_nodes_left('three clusters', 'p', 'q', 'r');
}

# (3) Shared and exclusive: A and C share s; B holds t.  A asks for t in
# shared mode (B's exclusive hold is in the way), B for s in exclusive mode
# (A's and C's shared holds are): a cycle A -> B -> A, and C, which waits
# for nothing, is no part of it.
{
	my $sa = holder($a, 's:shared');
	my $sc = holder($c, 's:shared');
	my $sb = holder($b, 't');
	start_wait($sa, $a, 't', 1);
	start_wait($sb, $b, 's');
	is(finish_wait($sb), '40P01', 'shared and exclusive: the exclusive request (the newer) fails with 40P01');
	like($sb->{last_err}, qr/Process $sa->{pid} of cluster "a" waits for ZooKeeper lock "t" in shared mode; blocked by process $sb->{pid} of cluster "b"\./,
		'the detail names the shared wait');
	like($sb->{last_err}, qr/Process $sb->{pid} of cluster "b" waits for ZooKeeper lock "s" in exclusive mode; blocked by process $sa->{pid} of cluster "a"\./,
		'... and the exclusive one, blocked by the shared holder in the cycle');
	unlike($sb->{last_err}, qr/process $sc->{pid}\b/, 'the other shared holder is no part of the cycle');
	is(finish_wait($sa), 'granted', 'A is granted t in shared mode');
	end_all($sa, $sb, $sc);
	no_nodes_left('shared and exclusive', 's', 't');
}

# (4) Two sessions of one cluster, zklock locks only.
{
	my $s1 = holder($a, 'u');
	my $s2 = holder($a, 'v');
	start_wait($s1, $a, 'v');
	start_wait($s2, $a, 'u');
	is(finish_wait($s2), '40P01', 'one cluster: the newer request fails with 40P01');
	like($s2->{last_err}, qr/Process $s1->{pid} of cluster "a" waits for ZooKeeper lock "v" in exclusive mode; blocked by process $s2->{pid} of cluster "a"\./,
		'the detail names both sessions of cluster a');
	is(finish_wait($s1), 'granted', 'the other session is granted');
	end_all($s1, $s2);
	no_nodes_left('one cluster', 'u', 'v');
}

# (5) A zklock wait and a row lock: A1 holds zklock m and waits for a row
# that A2 has updated; A2 waits for m.  Neither PostgreSQL (which sees only
# the row lock) nor ZooKeeper (only m) sees a cycle; zklock does, and A2,
# the only zklock request of it, gives up.
{
	$a->safe_psql('postgres', 'CREATE TABLE rows (id int PRIMARY KEY, v int); INSERT INTO rows VALUES (1, 0)');
	my $s1 = holder($a, 'm');
	my $s2 = holder($a);
	$s2->query_safe('UPDATE rows SET v = v + 1 WHERE id = 1');
	start_row_wait($s1, $a, 10);
	start_wait($s2, $a, 'm');
	is(finish_wait($s2), '40P01', 'zklock and row lock: the zklock request fails with 40P01');
	like($s2->{last_err}, qr/Process $s2->{pid} of cluster "a" waits for ZooKeeper lock "m" in exclusive mode; blocked by process $s1->{pid} of cluster "a"\.\nProcess $s1->{pid} of cluster "a" waits for a PostgreSQL lock; blocked by process $s2->{pid}\./,
		'the detail names the zklock edge and the PostgreSQL edge');
	$s1->query_until(qr/done/, '');
	is($s1->{stderr}, '', "A1's update went through once A2 gave up");
	$s1->query_safe('COMMIT');
	is($a->safe_psql('postgres', 'SELECT v FROM rows'), '10', "only A1's update is committed");
	end_all($s1, $s2);
	no_nodes_left('zklock and row lock', 'm');
}

# (5b) The same through another cluster whose request is the newest: A1
# waits for zklock n1, which B1 holds; B1 (the newer request) waits for n2,
# which A3 holds; A3 waits for a row A1 has updated.  B cannot see A's row
# lock, so the victim is A's newest request of the cycle: A1.
{
	my $s3 = holder($a, 'n2');
	my $s1 = holder($a);
	$s1->query_safe('UPDATE rows SET v = v + 100 WHERE id = 1');
	my $sb = holder($b, 'n1');
	start_wait($s1, $a, 'n1');
	start_wait($sb, $b, 'n2');
	start_row_wait($s3, $a, 1000);
	is(finish_wait($s1), '40P01', 'a row lock and a newer request of another cluster: the newest request of the row lock\'s cluster fails with 40P01');
	like($s1->{last_err}, qr/Process $s1->{pid} of cluster "a" waits for ZooKeeper lock "n1" in exclusive mode; blocked by process $sb->{pid} of cluster "b"\.\nProcess $sb->{pid} of cluster "b" waits for ZooKeeper lock "n2" in exclusive mode; blocked by process $s3->{pid} of cluster "a"\.\nProcess $s3->{pid} of cluster "a" waits for a PostgreSQL lock; blocked by process $s1->{pid}\./,
		'the detail names the three edges');
	$s3->query_until(qr/done/, '');
	is($s3->{stderr}, '', "A3's update went through");
	$s3->query_safe('COMMIT');
	is(finish_wait($sb), 'granted', 'B1 is granted n2 once A3 committed');
	end_all($s1, $s3, $sb);
	no_nodes_left('row lock and another cluster', 'n1', 'n2');
}

# (6) Another client is a leaf.  kazoo holds k1 and waits for k2, which A
# holds; A waits for k1.  A real cycle, but kazoo publishes nothing: A is
# never failed because of it and waits until lock_timeout (55P03).
{
	my $checks = counter($a, 'deadlock_checks');
	my $found = counter($a, 'deadlocks_found');
	my $kz = kazoo_peer($zk);
	is($kz->cmd('lock_try /zklock/k1'), 'true', 'kazoo holds k1');
	my $sa = holder($a, 'k2');
	$kz->send('lock_try /zklock/k2 8');
	wait_until(sub { (() = zk_ls($zk, '/zklock/k2')) == 2 }, 30, 'kazoo waits for k2');
	start_wait($sa, $a, 'k1');
	is(finish_wait($sa), '55P03', 'a wait on another client ends by lock_timeout (55P03), not 40P01');
	cmp_ok(counter($a, 'deadlock_checks'), '>', $checks, 'A looked for a cycle meanwhile');
	is(counter($a, 'deadlocks_found'), $found, 'and found none through kazoo');
	$sa->query('ROLLBACK');
	is($kz->reply(30), 'true', 'kazoo gets k2 once A gave up');
	is($kz->cmd('lock_release /zklock/k1') . $kz->cmd('lock_release /zklock/k2'), 'okok', 'kazoo releases');
	$kz->quit;
	end_all($sa);
	no_nodes_left('kazoo', 'k1', 'k2');
}

# (7) A wait shorter than deadlock_timeout publishes nothing and runs no
# check; a long wait behind a live holder (deadlock_timeout 100ms) checks
# once, and again only when a wait is published (C's), not at every
# deadlock_timeout, and finds no deadlock.  Another client's node in the lock's
# directory whose data looks like zklock's but which jsonb refuses (a \u0000
# escape) is read by every check and disturbs none.
{
	my $checks = counter($b, 'deadlock_checks');
	my $found = counter($b, 'deadlocks_found');
	my $sa = holder($a, 'w');
	my $sb = holder($b);
	start_wait($sb, $b, 'w');
	$sa->query_safe('COMMIT');
	is(finish_wait($sb), 'granted', 'a short wait is granted');
	is(counter($b, 'deadlock_checks'), $checks, 'a wait shorter than deadlock_timeout runs no check');
	$sb->query_safe('COMMIT');

	$sa->query_safe("BEGIN; SELECT zk_lock_acquire_xact('w')");
	zk_create($zk, '/zklock/w/odd', '{"system_identifier":"1","pid":"\\u0000"}');
	$sb->query_safe("SET deadlock_timeout = '100ms'; SET lock_timeout = '30s'");
	$sb->query_safe('BEGIN');
	start_wait($sb, $b, 'w');
	ok(wait_until(sub { zk_ls($zk, '/zklock/.waits') == 1 }, 30, 'the wait is published'),
		'a wait that lasts deadlock_timeout is published');
	# A second published wait makes every check read the directory.
	my $sc = holder($c);
	$sc->query_safe("SET deadlock_timeout = '100ms'; SET lock_timeout = '30s'");
	start_wait($sc, $c, 'w');
	wait_until(sub { zk_ls($zk, '/zklock/.waits') == 2 }, 30, 'both waits are published');
	is($b->safe_psql('postgres', "SELECT slots_used = (SELECT count(*) FROM zk_locks) FROM zk_status()"), 't',
		"the publication takes none of zklock.max_locks's slots (zk_status().slots_used counts B's wait alone)");
	ok(wait_until(sub { counter($c, 'deadlock_checks') >= 1 }, 30, 'C checks'), 'C checked its wait');
	# Ten deadlock_timeouts in which nothing is published.
	sleep(1);
	$sa->query_safe('COMMIT');
	is(finish_wait($sb), 'granted', 'a long wait behind a live holder is granted');
	$sb->query_safe('COMMIT');
	is(finish_wait($sc), 'granted', 'and so is the one behind it');
	cmp_ok(counter($b, 'deadlock_checks') - $checks, '>=', 1, 'it looked for a cycle');
	cmp_ok(counter($b, 'deadlock_checks') - $checks, '<=', 3,
		'and again only when a wait was published, not at every deadlock_timeout');
	is(counter($b, 'deadlocks_found'), $found, 'and found none');
	ok(zk_delete($zk, '/zklock/w/odd'), "the other client's node was there all along");
	end_all($sa, $sb, $sc);
	no_nodes_left('long wait', 'w');
}

# (8) What zk_waits_for() shows, from a cluster that takes no part: A1
# holds zklock h and waits for a row A2 has updated; A3 waits for h.  No
# cycle (A2 waits for nothing): the zklock edge A3 -> A1, published by A3,
# and A1's wait on PostgreSQL's lock, which only A sees.
{
	my $s1 = holder($a, 'h');
	my $s2 = holder($a);
	$s2->query_safe('UPDATE rows SET v = v + 1 WHERE id = 1');
	$s1->query_safe('SET lock_timeout = 0');
	start_row_wait($s1, $a, 10);
	my $s3 = holder($a);
	$s3->query_safe("SET lock_timeout = 0");
	start_wait($s3, $a, 'h');
	ok(wait_until(sub { zk_ls($zk, '/zklock/.waits') == 1 }, 30, "A3's wait is published"),
		"A3's wait is published");
	my $session_a = zk_status_of($a)->{session_id};
	my $cols = "waiter_cluster, waiter_pid, waiter_session, wait_kind, lock, mode, request > 0, waiting_since <= now(), "
	  . "blocker_cluster, blocker_pid, blocker_session, blocker_client, blocker_znode LIKE '/zklock/h/_c_%'";
	is($c->safe_psql('postgres', "SELECT $cols FROM zk_waits_for() ORDER BY wait_kind"),
		"a|$s3->{pid}|$session_a|zklock|h|exclusive|t|t|a|$s1->{pid}|$session_a|zklock|t",
		'zk_waits_for() in C: the published wait of A3 and its blocker A1');
	is($a->safe_psql('postgres', "SELECT $cols FROM zk_waits_for() ORDER BY wait_kind"),
		"a|$s1->{pid}|$session_a|postgresql|||||a|$s2->{pid}|$session_a|postgresql|\n"
		  . "a|$s3->{pid}|$session_a|zklock|h|exclusive|t|t|a|$s1->{pid}|$session_a|zklock|t",
		"zk_waits_for() in A: also A1's wait for A2's row lock");
	$s2->query_safe('ROLLBACK');
	$s1->query_until(qr/done/, '');
	$s1->query_safe('COMMIT');
	is(finish_wait($s3), 'granted', 'A3 is granted h: it was no deadlock');
	end_all($s1, $s2, $s3);
	no_nodes_left('zk_waits_for', 'h');
}

# (8b) Descriptions in characters a database lacks: B's session works in a
# UTF8 database named in katakana, A's in a LATIN1 database.  A reads B's
# description (its database's name as \u escapes) with the JSON lexer, not
# as jsonb, which LATIN1 could not take: the cycle is found.
{
	my $kana = "\xe3\x83\x87\xe3\x83\xbc\xe3\x82\xbf";    # UTF-8 bytes
	$b->safe_psql('postgres', q{CREATE DATABASE U&"\30C7\30FC\30BF" ENCODING 'UTF8' LC_COLLATE 'C' LC_CTYPE 'C' TEMPLATE template0});
	$b->safe_psql($kana, 'CREATE EXTENSION zklock');
	$a->safe_psql('postgres', q{CREATE DATABASE latin1 ENCODING 'LATIN1' LC_COLLATE 'C' LC_CTYPE 'C' TEMPLATE template0});
	$a->safe_psql('latin1', 'CREATE EXTENSION zklock');
	my $sb = holder($b, { dbname => $kana }, 'g1');
	my $sa = holder($a, { dbname => 'latin1' }, 'g2');
	start_wait($sb, $b, 'g2');
	start_wait($sa, $a, 'g1');
	is(finish_wait($sa), '40P01', 'a LATIN1 database finds the cycle through a description it cannot hold as jsonb');
	like($sa->{last_err}, qr/blocked by process $sb->{pid} of cluster "b"/, 'the detail names the other member');
	is(finish_wait($sb), 'granted', 'the other member is granted');
	end_all($sa, $sb);
	no_nodes_left('other encodings', 'g1', 'g2');
}

# (9) A member's session expires while the other keeps looking for a
# cycle.  B1 holds e2 and waits for e1, which C1 holds; B1 checks after
# 100ms.  C1, the newer request, waits for e2, but C's worker is frozen
# before C1 could publish or check; C's session (2 s) expires and its nodes
# go.  B1 is granted, nobody gets 40P01.
{
	my $found = sum_counter('deadlocks_found');
	my $sc = holder($c, 'e1');
	my $sb = holder($b, 'e2');
	$sb->query_safe("SET deadlock_timeout = '100ms'; SET lock_timeout = '30s'");
	my $checks = counter($b, 'deadlock_checks');
	start_wait($sb, $b, 'e1');
	$sc->query_safe("SET lock_timeout = '10s'");
	start_wait($sc, $c, 'e2');
	wait_until(sub { zk_ls($zk, '/zklock/e2') == 2 }, 30, "C1's request is in ZooKeeper");
	my $wpid = worker_pid_os($c);
	my $frozen;
	END { kill('CONT', $frozen) if $frozen; }
	ok(kill('STOP', $wpid), "C's worker is frozen");
	$frozen = $wpid;
	is(finish_wait($sb), 'granted', "B1 is granted once C's session expired");
	cmp_ok(counter($b, 'deadlock_checks'), '>', $checks, 'B1 looked for cycles meanwhile');
	kill('CONT', $wpid);
	$frozen = undef;
	isnt(finish_wait($sc), '40P01', "C1's wait ends otherwise than by 40P01");
	is(sum_counter('deadlocks_found'), $found, 'no deadlock was found');
	end_all($sb, $sc);
	no_nodes_left('session expiry', 'e1', 'e2');
}

# (10) A member's cluster restarts while the other looks for a cycle: A1
# holds f1 and waits for f2 (the newer request, with a deadlock_timeout of
# a minute); B1 holds f2, waits for f1 and checks after 100ms.  A stops in
# immediate mode and starts again: its new worker closes the old session,
# A1's nodes go, B1 is granted and nobody gets 40P01.
{
	my $found = counter($b, 'deadlocks_found');
	my $sb = holder($b, 'f2');
	my $sa = holder($a, 'f1');
	$sb->query_safe("SET deadlock_timeout = '100ms'; SET lock_timeout = '60s'");
	my $checks = counter($b, 'deadlock_checks');
	start_wait($sb, $b, 'f1');
	$sa->query_safe("SET deadlock_timeout = '1min'");
	start_wait($sa, $a, 'f2');
	wait_until(sub { counter($b, 'deadlock_checks') > $checks }, 30, 'B1 checks');
	$a->stop('immediate');
	$a->start;
	is(finish_wait($sb), 'granted', "B1 is granted once A restarted");
	is(counter($b, 'deadlocks_found'), $found, 'no deadlock was found in B');
	end_all($sb);
	no_nodes_left('restart', 'f1', 'f2');
}

done_testing();
