-- fence: zk_fence and zk_fence_trigger keep the newest fencing token of each
-- resource (zk_fence per role, the trigger per table) and refuse older ones,
-- in the caller's transaction.  The superuser that runs this may write the
-- fencing tables, so its tokens are plain numbers, proven by no lock; the
-- ordinary role's part takes real locks for its tokens.
-- Every error expected here is followed by its SQLSTATE (\echo :LAST_ERROR_SQLSTATE).
\set VERBOSITY default

-- the tables are the extension's configuration: pg_dump keeps their rows,
-- but for those of roles and tables that are gone
SELECT extconfig::regclass[] AS config_tables, extcondition
FROM pg_extension WHERE extname = 'zklock';

-- increasing tokens are accepted, an equal one too (the same holder writes
-- again), an older one is refused with both tokens
SELECT zk_fence('fence.a', 100);
SELECT zk_fence('fence.a', 101);
SELECT zk_fence('fence.a', 101);
SELECT zk_fence('fence.a', 100);
\echo :LAST_ERROR_SQLSTATE
SELECT zk_fence('fence.a', -1);
\echo :LAST_ERROR_SQLSTATE
SELECT resource, token FROM zk_fence_tokens WHERE resource LIKE 'fence.%' ORDER BY 1;

-- resources are independent
SELECT zk_fence('fence.b', 5);
SELECT zk_fence('FENCE.A', 1);
SELECT resource, token FROM zk_fence_tokens WHERE resource ILIKE 'fence.%' ORDER BY 1;

-- the token and the time are recorded in the caller's transaction, and go
-- with its rollback
BEGIN;
SELECT zk_fence('fence.b', 500);
SELECT token, accepted_at = now() AS accepted_now FROM zk_fence_tokens WHERE resource = 'fence.b';
ROLLBACK;
SELECT zk_fence('fence.b', 6);
SELECT token FROM zk_fence_tokens WHERE resource = 'fence.b';
-- a refusal aborts the caller's transaction: its write is not made
CREATE TABLE fence_log (note text);
BEGIN;
INSERT INTO fence_log VALUES ('written under token 4');
SELECT zk_fence('fence.b', 4);
\echo :LAST_ERROR_SQLSTATE
COMMIT;
SELECT count(*) AS notes FROM fence_log;
DROP TABLE fence_log;

-- NULLs are refused
SELECT zk_fence(NULL, 1);
\echo :LAST_ERROR_SQLSTATE
SELECT zk_fence('fence.a', NULL);
\echo :LAST_ERROR_SQLSTATE

-- a table that refuses stale writers
CREATE TABLE fence_docs (id int PRIMARY KEY, body text, token bigint);
CREATE TRIGGER fence_docs_fence BEFORE INSERT OR UPDATE ON fence_docs
	FOR EACH ROW EXECUTE FUNCTION zk_fence_trigger('fence.docs', 'token');
INSERT INTO fence_docs VALUES (1, 'first', 7) RETURNING *;
INSERT INTO fence_docs VALUES (2, 'stale', 6);
\echo :LAST_ERROR_SQLSTATE
UPDATE fence_docs SET body = 'second', token = 8 WHERE id = 1;
UPDATE fence_docs SET body = 'stale', token = 7 WHERE id = 1;
\echo :LAST_ERROR_SQLSTATE
-- the row's own token is checked on every update: the current holder may
-- update without changing it; once a newer holder wrote, a row carrying
-- the old token cannot be touched until it is written with a newer one
UPDATE fence_docs SET body = 'second, again' WHERE id = 1;
INSERT INTO fence_docs VALUES (99, 'by the new holder', 9);
UPDATE fence_docs SET body = 'by the old holder' WHERE id = 1;
\echo :LAST_ERROR_SQLSTATE
UPDATE fence_docs SET body = 'by the new holder', token = 9 WHERE id = 1;
SELECT * FROM fence_docs ORDER BY id;
-- a statement of many rows checks each row; one stale row fails it all
INSERT INTO fence_docs SELECT g, 'batch', 8 + g FROM generate_series(2, 4) g;
INSERT INTO fence_docs VALUES (5, 'batch', 13), (6, 'batch', 11), (7, 'batch', 14);
\echo :LAST_ERROR_SQLSTATE
UPDATE fence_docs SET token = 20;
SELECT * FROM fence_docs ORDER BY id;
SELECT fenced_table, resource, token FROM zk_fence_table_tokens WHERE resource = 'fence.docs';
-- a row without a token is refused
INSERT INTO fence_docs VALUES (9, 'no token', NULL);
\echo :LAST_ERROR_SQLSTATE
-- a zk_fence of the same resource is another fence: it does not move the
-- table's
SELECT zk_fence('fence.docs', 21);
INSERT INTO fence_docs VALUES (10, 'not late', 20);
SELECT resource, token FROM zk_fence_tokens WHERE resource = 'fence.docs';
SELECT fenced_table, resource, token FROM zk_fence_table_tokens WHERE resource = 'fence.docs';
-- integer columns and domains over them are read too
CREATE DOMAIN fence_token AS bigint CHECK (VALUE > 0);
CREATE TABLE fence_small (id int, tok integer, dtok fence_token);
CREATE TRIGGER fence_small_int BEFORE INSERT ON fence_small
	FOR EACH ROW EXECUTE FUNCTION zk_fence_trigger('fence.small', 'tok');
CREATE TRIGGER fence_small_dom BEFORE INSERT ON fence_small
	FOR EACH ROW EXECUTE FUNCTION zk_fence_trigger('fence.domain', 'dtok');
INSERT INTO fence_small VALUES (1, 3, 30);
INSERT INTO fence_small VALUES (2, 2, 31);
\echo :LAST_ERROR_SQLSTATE
INSERT INTO fence_small VALUES (3, 3, 29);
\echo :LAST_ERROR_SQLSTATE
SELECT fenced_table, resource, token FROM zk_fence_table_tokens
WHERE resource IN ('fence.small', 'fence.domain') ORDER BY 2;
DROP TABLE fence_small;
DROP DOMAIN fence_token;

-- a partitioned table is one fence: a row routed to any partition is
-- fenced with the whole table's
CREATE TABLE fence_parts (id int, token bigint) PARTITION BY RANGE (id);
CREATE TABLE fence_parts_1 PARTITION OF fence_parts FOR VALUES FROM (0) TO (10);
CREATE TABLE fence_parts_2 PARTITION OF fence_parts FOR VALUES FROM (10) TO (20);
CREATE TRIGGER fence_parts_fence BEFORE INSERT OR UPDATE ON fence_parts
	FOR EACH ROW EXECUTE FUNCTION zk_fence_trigger('fence.parts', 'token');
INSERT INTO fence_parts VALUES (1, 50);
INSERT INTO fence_parts VALUES (11, 49);
\echo :LAST_ERROR_SQLSTATE
INSERT INTO fence_parts_2 VALUES (12, 49);
\echo :LAST_ERROR_SQLSTATE
SELECT fenced_table, resource, token FROM zk_fence_table_tokens WHERE resource = 'fence.parts';
DROP TABLE fence_parts;

-- misuse of the trigger function
SELECT zk_fence_trigger();
\echo :LAST_ERROR_SQLSTATE
CREATE TABLE fence_misuse (id int, token bigint, note text);
CREATE TRIGGER t AFTER INSERT ON fence_misuse
	FOR EACH ROW EXECUTE FUNCTION zk_fence_trigger('fence.misuse', 'token');
INSERT INTO fence_misuse VALUES (1, 1);
\echo :LAST_ERROR_SQLSTATE
DROP TRIGGER t ON fence_misuse;
CREATE TRIGGER t BEFORE INSERT ON fence_misuse
	FOR EACH STATEMENT EXECUTE FUNCTION zk_fence_trigger('fence.misuse', 'token');
INSERT INTO fence_misuse VALUES (1, 1);
\echo :LAST_ERROR_SQLSTATE
DROP TRIGGER t ON fence_misuse;
CREATE TRIGGER t BEFORE DELETE ON fence_misuse
	FOR EACH ROW EXECUTE FUNCTION zk_fence_trigger('fence.misuse', 'token');
DELETE FROM fence_misuse;
INSERT INTO fence_misuse VALUES (1, 1);
DELETE FROM fence_misuse;
\echo :LAST_ERROR_SQLSTATE
DROP TRIGGER t ON fence_misuse;
CREATE TRIGGER t BEFORE INSERT ON fence_misuse
	FOR EACH ROW EXECUTE FUNCTION zk_fence_trigger('fence.misuse');
INSERT INTO fence_misuse VALUES (1, 1);
\echo :LAST_ERROR_SQLSTATE
DROP TRIGGER t ON fence_misuse;
CREATE TRIGGER t BEFORE INSERT ON fence_misuse
	FOR EACH ROW EXECUTE FUNCTION zk_fence_trigger();
INSERT INTO fence_misuse VALUES (1, 1);
\echo :LAST_ERROR_SQLSTATE
DROP TRIGGER t ON fence_misuse;
CREATE TRIGGER t BEFORE INSERT ON fence_misuse
	FOR EACH ROW EXECUTE FUNCTION zk_fence_trigger('fence.misuse', 'tokens');
INSERT INTO fence_misuse VALUES (1, 1);
\echo :LAST_ERROR_SQLSTATE
DROP TRIGGER t ON fence_misuse;
CREATE TRIGGER t BEFORE INSERT ON fence_misuse
	FOR EACH ROW EXECUTE FUNCTION zk_fence_trigger('fence.misuse', 'ctid');
INSERT INTO fence_misuse VALUES (1, 1);
\echo :LAST_ERROR_SQLSTATE
DROP TRIGGER t ON fence_misuse;
CREATE TRIGGER t BEFORE INSERT ON fence_misuse
	FOR EACH ROW EXECUTE FUNCTION zk_fence_trigger('fence.misuse', 'note');
INSERT INTO fence_misuse VALUES (1, 1, 'x');
\echo :LAST_ERROR_SQLSTATE
DROP TABLE fence_misuse;
SELECT count(*) AS misuse_recorded FROM zk_fence_table_tokens WHERE resource = 'fence.misuse';

-- An ordinary role: a token advances a fence only when it is a holder's
-- of the lock the resource names (ZK004 otherwise); the role's fences are
-- its own; it needs no right on the fencing tables and cannot write them
-- directly; a writer of a fenced table needs only its rights on that table.
-- Tokens are real now (their numbers vary): errors are shown by SQLSTATE
-- only, and the role's table is one of its own.
CREATE TABLE fence_role_docs (id int PRIMARY KEY, body text, token bigint);
CREATE TRIGGER fence_role_docs_fence BEFORE INSERT OR UPDATE ON fence_role_docs
	FOR EACH ROW EXECUTE FUNCTION zk_fence_trigger('fence.role.docs', 'token');
CREATE ROLE zkl_fence_user;
SET ROLE zkl_fence_user;
SELECT zk_fence('fence.role', 1);
\echo :LAST_ERROR_SQLSTATE
RESET ROLE;
GRANT EXECUTE ON FUNCTION zk_fence(text, bigint), zk_lock_acquire(text, interval),
	zk_lock_release(text) TO zkl_fence_user;
GRANT SELECT, INSERT, UPDATE ON fence_role_docs TO zkl_fence_user;
SET ROLE zkl_fence_user;
\set VERBOSITY sqlstate
-- no lock held: any token is refused, a low one as well as the largest
SELECT zk_fence('fence.role', 1);
\echo :LAST_ERROR_SQLSTATE
SELECT zk_fence('fence.role', 9223372036854775807);
\echo :LAST_ERROR_SQLSTATE
-- the superuser's fence of fence.a is not this role's: there is nothing
-- to be older than here, the token is simply no holder's
SELECT zk_fence('fence.a', 1);
\echo :LAST_ERROR_SQLSTATE
-- the holder's token is accepted, again too; one above it is no one's; one
-- below it is older
SELECT zk_lock_acquire('fence.role') AS role_token \gset
SELECT zk_fence('fence.role', :role_token);
SELECT zk_fence('fence.role', :role_token);
SELECT zk_fence('fence.role', :role_token + 1);
\echo :LAST_ERROR_SQLSTATE
SELECT zk_fence('fence.role', :role_token - 1);
\echo :LAST_ERROR_SQLSTATE
SELECT zk_lock_release('fence.role');
-- released: the token is still the fence's newest, but anyone can read it
-- from the fence: an equal token, as a newer one, needs a holder
SELECT zk_fence('fence.role', :role_token);
\echo :LAST_ERROR_SQLSTATE
SELECT zk_fence('fence.role', :role_token + 1);
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM zk_fence_tokens;
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM zk_fence_table_tokens;
\echo :LAST_ERROR_SQLSTATE
INSERT INTO zk_fence_tokens VALUES ('fence.role', 1000);
\echo :LAST_ERROR_SQLSTATE
UPDATE zk_fence_tokens SET token = 0;
\echo :LAST_ERROR_SQLSTATE
-- the fenced table: a row with a token no one holds is refused; with the
-- token of the lock held, accepted; an older one then refused
INSERT INTO fence_role_docs VALUES (1, 'without the lock', 9223372036854775807);
\echo :LAST_ERROR_SQLSTATE
SELECT zk_lock_acquire('fence.role.docs') AS docs_token \gset
INSERT INTO fence_role_docs VALUES (1, 'by the holder', :docs_token);
UPDATE fence_role_docs SET body = 'by the holder, again';
INSERT INTO fence_role_docs VALUES (2, 'above the holder', :docs_token + 1);
\echo :LAST_ERROR_SQLSTATE
INSERT INTO fence_role_docs VALUES (2, 'stale', :docs_token - 1);
\echo :LAST_ERROR_SQLSTATE
SELECT zk_lock_release('fence.role.docs');
-- a table of the caller's search_path cannot stand in for the real one
CREATE TEMP TABLE zk_fence_tokens (resource text PRIMARY KEY, token bigint, accepted_at timestamptz);
SET search_path = pg_temp, public;
SELECT zk_fence('fence.role', 0);
\echo :LAST_ERROR_SQLSTATE
SELECT count(*) AS decoy_rows FROM pg_temp.zk_fence_tokens;
RESET search_path;
DROP TABLE pg_temp.zk_fence_tokens;
\set VERBOSITY default
RESET ROLE;
SELECT fencer, resource, token = :role_token AS holders_token FROM zk_fence_tokens WHERE resource = 'fence.role';
SELECT fenced_table, resource, token = :docs_token AS holders_token
FROM zk_fence_table_tokens WHERE resource = 'fence.role.docs';
SELECT id, body, token = :docs_token AS holders_token FROM fence_role_docs ORDER BY id;
DELETE FROM zk_fence_tokens WHERE fencer = 'zkl_fence_user'::regrole;
DROP TABLE fence_role_docs;
REVOKE EXECUTE ON FUNCTION zk_fence(text, bigint), zk_lock_acquire(text, interval),
	zk_lock_release(text) FROM zkl_fence_user;
DROP ROLE zkl_fence_user;

-- a relocated extension still finds its table (and a session that fenced
-- before the move too)
CREATE SCHEMA "Fence schema";
ALTER EXTENSION zklock SET SCHEMA "Fence schema";
SELECT "Fence schema".zk_fence('fence.a', 102);
SELECT "Fence schema".zk_fence('fence.a', 101);
\echo :LAST_ERROR_SQLSTATE
INSERT INTO fence_docs VALUES (13, 'after the move', 22);
INSERT INTO fence_docs VALUES (14, 'stale, after the move', 20);
\echo :LAST_ERROR_SQLSTATE
SELECT resource, token FROM "Fence schema".zk_fence_tokens WHERE resource = 'fence.a';
SELECT resource, token FROM "Fence schema".zk_fence_table_tokens WHERE resource = 'fence.docs';
ALTER SCHEMA "Fence schema" RENAME TO "Fence schema 2";
SELECT "Fence schema 2".zk_fence('fence.a', 103);
ALTER EXTENSION zklock SET SCHEMA public;
DROP SCHEMA "Fence schema 2";
SELECT zk_fence('fence.a', 104);
SELECT zk_fence('fence.a', 103);
\echo :LAST_ERROR_SQLSTATE

DROP TABLE fence_docs;
DELETE FROM zk_fence_tokens;
DELETE FROM zk_fence_table_tokens;
