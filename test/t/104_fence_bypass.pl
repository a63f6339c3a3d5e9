# The bypass of the roles that may write the fencing tables is a choice
# (issue 43, point 5; doc/fencing.md, "Who bypasses the fence"): on by
# default, as a superuser bypasses row security, and zklock.fence_bypass =
# off takes it away (per session, role or database), as FORCE ROW LEVEL
# SECURITY does for a table's owner.  With the statements of
# doc/fencing.md's table that the other tests leave out: COPY, TRUNCATE,
# session_replication_role = replica.
#  (1) A superuser application role (app_admin) writes docs without a
#      lock: accepted by default (fenced as the row is); with
#      ALTER ROLE app_admin SET zklock.fence_bypass = off its lock-less
#      update and delete are refused (ZK004) and its writes under the lock
#      accepted.  On the code before, the setting did not exist.
#  (2) An ordinary role: setting it on grants nothing (ZK004); granted
#      INSERT and UPDATE on zk_fence_table_tokens it bypasses, until it
#      sets it off.
#  (3) COPY is fenced as INSERT: a lock-less COPY of a row with the
#      holder's token copied is refused (ZK004), the holder's accepted.
#  (4) TRUNCATE and session_replication_role = replica are not fenced:
#      the fence-bound superuser's lock-less TRUNCATE and replica-mode
#      update go through (triggers do not fire); app may not TRUNCATE.
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::RealBin/../lib";
use ZklockTest;
use Test::More;
use PostgreSQL::Test::Utils;

my $zk = zk_start(1);
my $n = zklock_node('a', $zk);
fenced_docs($n, delete_trigger => 1);
$n->safe_psql('postgres', q{
CREATE ROLE app_admin LOGIN SUPERUSER;
CREATE ROLE repairer LOGIN;
GRANT SELECT, INSERT, UPDATE, DELETE ON docs TO repairer;
});

my $h = docs_writer($n);
my $th = $h->query_safe("SELECT zk_lock_acquire('docs')");
is(bg_sqlstate($h, "INSERT INTO docs VALUES (1, 'h', $th), (2, 'h', $th)"), 'ok', 'the holder writes rows 1 and 2');
$h->query_safe("SELECT zk_lock_release('docs')");

# (1)
my $admin = bg_session($n, extra_params => [ '-U', 'app_admin' ]);
is($admin->query_safe('SHOW zklock.fence_bypass'), 'on', 'zklock.fence_bypass is on by default');
is(bg_sqlstate($admin, "UPDATE docs SET body = 'admin' WHERE id = 1"), 'ok',
	"(1) the superuser's lock-less update is accepted by default");
$admin->quit;
$n->safe_psql('postgres', 'ALTER ROLE app_admin SET zklock.fence_bypass = off');
$admin = bg_session($n, extra_params => [ '-U', 'app_admin' ]);
is(bg_sqlstate($admin, "UPDATE docs SET body = 'admin, bound' WHERE id = 1"), 'ZK004',
	'(1) with ALTER ROLE ... SET zklock.fence_bypass = off its lock-less update is refused');
is(bg_sqlstate($admin, 'DELETE FROM docs WHERE id = 1'), 'ZK004', '... and its delete');
my $ta = $admin->query_safe("SELECT zk_lock_acquire('docs')");
is(bg_sqlstate($admin, "UPDATE docs SET body = 'admin, locked' WHERE id = 1"), 'ok', '... and its update under the lock accepted');
$admin->query_safe("SELECT zk_lock_release('docs')");

# (2)
my $r = bg_session($n, extra_params => [ '-U', 'repairer' ]);
$r->query_safe('SET zklock.fence_bypass = on');
is(bg_sqlstate($r, "UPDATE docs SET body = 'repair' WHERE id = 1"), 'ZK004', '(2) an ordinary role gains nothing by setting it on');
$n->safe_psql('postgres', 'GRANT INSERT, UPDATE ON zk_fence_table_tokens TO repairer');
is(bg_sqlstate($r, "UPDATE docs SET body = 'repair' WHERE id = 1"), 'ok', '(2) granted the fencing table, it bypasses');
$r->query_safe('SET zklock.fence_bypass = off');
is(bg_sqlstate($r, "UPDATE docs SET body = 'repair, bound' WHERE id = 1"), 'ZK004', '... until it sets it off');
$r->quit;

# (3) COPY through a psql of its own (COPY FROM stdin reads the script);
# the holder's rows take its token from the column's default.
sub copy_as_app
{
	my ($sql) = @_;
	my ($ret, $out, $err) = $n->psql('postgres', "\\set VERBOSITY verbose\n$sql", extra_params => [ '-U', 'app' ]);
	return sqlstate_of($err);
}
$n->safe_psql('postgres', q{
GRANT EXECUTE ON FUNCTION zk_lock_token(text) TO app;
ALTER TABLE docs ALTER COLUMN token SET DEFAULT zk_lock_token('docs');
});
is(copy_as_app("COPY docs FROM stdin;\n3\tcopied\t$ta\n\\.\n"), 'ZK004',
	"(3) a lock-less COPY of a row with the holder's token is refused");
is(copy_as_app("SELECT zk_lock_acquire('docs');\nCOPY docs (id, body) FROM stdin;\n3\tcopied\n\\.\n"), 'ok',
	"(3) the holder's COPY is accepted");
like(doc_row($n, 3), qr/^copied:\d+$/, '... and its row is there, with a token');
cmp_ok($n->safe_psql('postgres', 'SELECT token FROM docs WHERE id = 3'), '>', $ta, "... the holder's, newer");

# (4)
my $o = docs_writer($n);
is(bg_sqlstate($o, 'TRUNCATE docs'), '42501', '(4) app may not TRUNCATE docs (no grant)');
is(bg_sqlstate($admin, "SET session_replication_role = replica; UPDATE docs SET body = 'replica' WHERE id = 2; RESET session_replication_role;"),
	'ok', '(4) with session_replication_role = replica the fence-bound superuser updates without a lock (triggers do not fire)');
is(bg_sqlstate($admin, 'TRUNCATE docs'), 'ok', '(4) and TRUNCATEs: no row trigger fires');
is($n->safe_psql('postgres', 'SELECT count(*) FROM docs'), '0', '... the table is empty');

$n->safe_psql('postgres', 'ALTER ROLE app_admin RESET zklock.fence_bypass');
$_->quit for ($h, $admin, $o);
done_testing();
