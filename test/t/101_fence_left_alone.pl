# "Left alone" is decided from the rows, not from the statement (issue 43,
# point 2): an UPDATE whose new row carries the old row's token has no
# token of its own, whatever the statement named, so MERGE, ON CONFLICT,
# rules and other triggers get one answer.  Ordinary roles (fenced_docs'
# app).  H holds lock docs and wrote row 1; O, a session without a lock:
#  (1) MERGE ... WHEN MATCHED AND false THEN UPDATE SET token = 0 WHEN
#      MATCHED THEN UPDATE SET body = ... (tg_updatedcols is the union of
#      both actions): refused for O (ZK004); on the code before it was
#      fenced with the row's token, H's, which ZooKeeper confirmed.
#  (2) A rule that turns an update of a view into an update of docs
#      keeping the token, and a BEFORE trigger of the table's own that puts
#      the old token back: O's updates through them are refused.
#  (3) ON CONFLICT DO UPDATE SET token = docs.token: refused for O.
#  (4) The holder H: the same MERGE on row 2, which carries an older
#      holder's token, is accepted and the row carries H's token (on the
#      code before: ZK003, the older token taken as given).
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::RealBin/../lib";
use ZklockTest;
use Test::More;
use PostgreSQL::Test::Utils;

my $zk = zk_start(1);
my $n = zklock_node('a', $zk);
fenced_docs($n);
$n->safe_psql('postgres', q{
CREATE VIEW docs_view AS SELECT id, body, token FROM docs;
CREATE RULE docs_view_update AS ON UPDATE TO docs_view DO INSTEAD
	UPDATE docs SET body = NEW.body, token = OLD.token WHERE id = OLD.id;
GRANT SELECT, UPDATE ON docs_view TO app;
CREATE TABLE audited (id int PRIMARY KEY, body text, token bigint);
CREATE FUNCTION keep_token() RETURNS trigger LANGUAGE plpgsql AS
	$$BEGIN NEW.token := OLD.token; RETURN NEW; END$$;
CREATE TRIGGER a_keep_token BEFORE UPDATE ON audited
	FOR EACH ROW EXECUTE FUNCTION keep_token();
CREATE TRIGGER b_fence BEFORE INSERT OR UPDATE ON audited
	FOR EACH ROW EXECUTE FUNCTION zk_fence_trigger('docs', 'token');
GRANT SELECT, INSERT, UPDATE ON audited TO app;
});

my $old = docs_writer($n);
my $t0 = $old->query_safe("SELECT zk_lock_acquire('docs')");
is(bg_sqlstate($old, "INSERT INTO docs VALUES (2, 'older', $t0)"), 'ok', 'an older holder writes row 2');
$old->query_safe("SELECT zk_lock_release('docs')");

my $h = docs_writer($n);
my $th = $h->query_safe("SELECT zk_lock_acquire('docs')");
is(bg_sqlstate($h, "INSERT INTO docs VALUES (1, 'h', $th)"), 'ok', 'H writes row 1 with its token');
is(bg_sqlstate($h, "INSERT INTO audited VALUES (1, 'h', $th)"), 'ok', '... and row 1 of audited');

my $o = docs_writer($n);
# (1)
is(bg_sqlstate($o,
		"MERGE INTO docs d USING (SELECT 1 AS id) s ON d.id = s.id WHEN MATCHED AND false THEN UPDATE SET token = 0 WHEN MATCHED THEN UPDATE SET body = 'merged'"),
	'ZK004', "(1) O's MERGE whose token-setting action is never taken is refused (ZK004)");
# (2)
is(bg_sqlstate($o, "UPDATE docs_view SET body = 'by rule', token = 99 WHERE id = 1"), 'ZK004',
	'(2) an update through a rule that keeps the token is refused');
is(bg_sqlstate($o, "UPDATE audited SET body = 'kept', token = $th + 1 WHERE id = 1"), 'ZK004',
	'(2) ... and one whose token another trigger puts back');
# (3)
is(bg_sqlstate($o,
		"INSERT INTO docs VALUES (1, 'upsert', $th) ON CONFLICT (id) DO UPDATE SET body = EXCLUDED.body, token = docs.token"),
	'ZK004', '(3) ON CONFLICT DO UPDATE SET token = docs.token is refused');
is(doc_row($n, 1), "h:$th", 'row 1 is as H left it');

# (4)
is(bg_sqlstate($h,
		"MERGE INTO docs d USING (SELECT 2 AS id) s ON d.id = s.id WHEN MATCHED AND false THEN UPDATE SET token = 0 WHEN MATCHED THEN UPDATE SET body = 'merged by h'"),
	'ok', "(4) H's MERGE of row 2, which carries an older token, is accepted");
is(doc_row($n, 2), "merged by h:$th", "... and row 2 now carries H's token");
is(bg_sqlstate($h, "UPDATE docs_view SET body = 'h by rule' WHERE id = 2"), 'ok', "(4) H's update through the rule is accepted");
is(bg_sqlstate($h, "UPDATE audited SET body = 'h kept' WHERE id = 1"), 'ok', "(4) and through the other trigger");
$h->query_safe("SELECT zk_lock_release('docs')");

$_->quit for ($old, $h, $o);
done_testing();
