# What one role can do to another's fence (issue 28, point 1), with the
# roles and grants of README's privileges section (read from README.md):
# app_role has the lock functions, zk_fence, zk_fence_trigger and
# zk_lock_verify; owner_role is one of app_role's members and owns a fenced table
# "documents" (zk_fence_trigger('documents', 'token')) and a ledger it
# guards with zk_fence('documents', ...).  app_role has no right on either.
#  (1) Poisoning: app_role fences 'documents' with the largest bigint, and
#      with a token just above the owner's newest one: both refused
#      (ZK004: no holder of lock 'documents' has that token); the owner's
#      writes with a token of a lock it holds are then accepted, through
#      the trigger and through zk_fence.
#  (2) A hostile role that holds the lock itself: app_role takes lock
#      'documents' and fences with its own (proven) token; that moves only
#      app_role's own fence: the owner's next holder writes with its newer
#      token, through both, and the trigger's resource is not zk_fence's.
#  (3) The open transaction (on a second table, drafts, fenced on lock
#      'drafts'): while the owner holds the lock, app_role
#      fences 'drafts' with the owner's token (which ZooKeeper confirms)
#      and leaves its transaction open; the owner's writes through the
#      trigger and through zk_fence go through (with a lock_timeout, so that
#      a stall fails with 55P03 instead of hanging the test).
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::RealBin/../lib";
use ZklockTest;
use Test::More;
use PostgreSQL::Test::Utils;

my $zk = zk_start(1);
my $a = zklock_node('a', $zk);

# README's privileges section, and a member of app_role that owns the
# fenced table.
readme_roles($a);
$a->safe_psql('postgres', q{
CREATE ROLE owner_role LOGIN IN ROLE app_role;
GRANT CREATE ON SCHEMA public TO owner_role;
});

$a->safe_psql('postgres', q{
SET ROLE owner_role;
CREATE TABLE documents (id int PRIMARY KEY, body text, token bigint NOT NULL);
CREATE TRIGGER documents_fence BEFORE INSERT OR UPDATE ON documents
    FOR EACH ROW EXECUTE FUNCTION zk_fence_trigger('documents', 'token');
CREATE TABLE drafts (id int PRIMARY KEY, body text, token bigint NOT NULL);
CREATE TRIGGER drafts_fence BEFORE INSERT OR UPDATE ON drafts
    FOR EACH ROW EXECUTE FUNCTION zk_fence_trigger('drafts', 'token');
CREATE TABLE ledger (resource text, body text, token bigint);
});

# The owner's session, and the hostile one.
my $owner = bg_session($a);
$owner->query_safe("SET ROLE owner_role");
my $evil = bg_session($a);
$evil->query_safe("SET ROLE app_role");

# The owner writes as README shows: under the lock, with its token, into
# the fenced table and (through zk_fence) into the ledger.  The SQLSTATEs.
sub owner_writes
{
	my ($table, $token, $body) = @_;
	my $doc = bg_sqlstate($owner,
		"INSERT INTO $table VALUES (1, '$body', $token) ON CONFLICT (id) DO UPDATE SET body = EXCLUDED.body, token = EXCLUDED.token");
	my $led = bg_sqlstate($owner,
		"BEGIN; SELECT zk_fence('$table', $token); INSERT INTO ledger VALUES ('$table', '$body', $token); COMMIT;");
	return "$doc $led";
}

# --- (1) poisoning with a token no holder has

is(bg_sqlstate($evil, "SELECT zk_fence('documents', 9223372036854775807)"), 'ZK004',
	"app_role's zk_fence with the largest bigint is refused (ZK004)");
my $t1 = $owner->query_safe("SELECT zk_lock_acquire('documents', '10s')");
like($t1, qr/^\d+$/, 'the owner takes lock documents');
is(bg_sqlstate($evil, "SELECT zk_fence('documents', $t1 + 1)"), 'ZK004',
	"app_role's zk_fence with a token just above the holder's is refused (ZK004)");
is(owner_writes('documents', $t1, 'first'), 'ok ok',
	"the owner writes with its token, through the trigger and through zk_fence");
$owner->query_safe("SELECT zk_lock_release('documents')");

# --- (2) the hostile role holds the lock and fences with its own token

my $te = $evil->query_safe("SELECT zk_lock_acquire('documents', '10s')");
is(bg_sqlstate($evil, "SELECT zk_fence('documents', $te)"), 'ok',
	'app_role, holding lock documents, fences with its own token');
$evil->query_safe("SELECT zk_lock_release('documents')");
my $t2 = $owner->query_safe("SELECT zk_lock_acquire('documents', '10s')");
cmp_ok($t2, '>', $te, "the owner's next token is newer");
is(owner_writes('documents', $t2, 'second'), 'ok ok', "... and the owner's writes with it are accepted");
is(bg_sqlstate($owner, "SELECT zk_fence('documents', $t1)"), 'ZK003',
	"the owner's own fence still refuses the owner's older token (ZK003)");
is(bg_sqlstate($owner, "UPDATE documents SET body = 'old', token = $t1"), 'ZK003',
	'... and so does its table');

# --- (3) an open transaction of the hostile role on the fence (of another
# table, drafts, so that it does not depend on (1) and (2))

my $t3 = $owner->query_safe("SELECT zk_lock_acquire('drafts', '10s')");
is(owner_writes('drafts', $t3, 'first'), 'ok ok', 'the owner writes drafts under lock drafts');
is(bg_sqlstate($evil, "BEGIN; SELECT zk_fence('drafts', $t3)"), 'ok',
	"app_role fences drafts with the holder's token (ZooKeeper confirms it) and keeps its transaction open");
$owner->query_safe("SET lock_timeout = '10s'");
is(owner_writes('drafts', $t3, 'second'), 'ok ok',
	"the owner's writes are not held up by app_role's open transaction");
$owner->query_safe('RESET lock_timeout');
$evil->query('ROLLBACK');
$owner->query_safe("SELECT zk_lock_release('drafts')");

is($a->safe_psql('postgres', 'SELECT body, token FROM documents'), "second|$t2", "the document is the owner's last write");
is($a->safe_psql('postgres', 'SELECT body, token FROM drafts'), "second|$t3", "the draft is the owner's last write");
is($a->safe_psql('postgres', q{SELECT string_agg(resource || ':' || body, ',' ORDER BY resource, token, body) FROM ledger}),
	'documents:first,documents:second,drafts:first,drafts:second',
	"the ledger has the owner's four writes");

$owner->quit;
$evil->quit;
done_testing();
