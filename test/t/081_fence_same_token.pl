# An UPDATE that writes the row's own token back into the token column
# carries no token of its own either (doc/fencing.md: "the row's is whoever
# wrote last"), so it needs the lock, as one that leaves the column out of
# its SET list does (issue 27, point 2).  ORMs write every column of an
# object they loaded (Django's save(), Hibernate without dynamic update),
# so a stale writer that loaded the row after the newest holder wrote it
# sends that holder's token back in its SET list.
#  (1) A role without the lock runs UPDATE docs SET body = ..., token =
#      token: refused (ZK004), as UPDATE docs SET body = ... is.
#  (2) The same with the token spelled out as the value it read from the
#      row (the ORM's case), and through ON CONFLICT DO UPDATE SET token =
#      EXCLUDED.token with that token (the proposed row's INSERT trigger
#      accepts it: an equal token is the same holder's again, and an
#      INSERT has no old row to tell otherwise).
# On the code before this test all three were accepted, fenced with the
# newest holder's token, and the row said the holder wrote it.
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::RealBin/../lib";
use ZklockTest;
use Test::More;
use PostgreSQL::Test::Utils;

my $zk = zk_start(1);
my $a = zklock_node('a', $zk);
fenced_docs($a);



my $holder = docs_writer($a);
my $t = $holder->query_safe("SELECT zk_lock_acquire('docs')");
is(bg_sqlstate($holder, "INSERT INTO docs VALUES (1, 'holder', $t)"), 'ok', 'the holder writes row 1 with its token');
$holder->query_safe("SELECT zk_lock_release('docs')");

my $other = docs_writer($a);
is(bg_sqlstate($other, "UPDATE docs SET body = 'no lock' WHERE id = 1"), 'ZK004',
	'without the lock, an update that leaves the token out is refused (ZK004)');
is(bg_sqlstate($other, "UPDATE docs SET body = 'no lock', token = token WHERE id = 1"), 'ZK004',
	'(1) ... and so is one that writes the row\'s token back (SET token = token)');
my $read = $other->query_safe('SELECT token FROM docs WHERE id = 1');
is(bg_sqlstate($other, "UPDATE docs SET body = 'orm save', token = $read WHERE id = 1"), 'ZK004',
	'(2) ... and one that writes back the token it read from the row');
is(bg_sqlstate($other,
		"INSERT INTO docs VALUES (1, 'upsert', $read) ON CONFLICT (id) DO UPDATE SET body = EXCLUDED.body, token = EXCLUDED.token"),
	'ZK004', "(2) ... and ON CONFLICT's update that sets the row's token again");
is(doc_row($a, 1), "holder:$t", 'the row is as the holder left it');

$holder->quit;
$other->quit;
done_testing();
