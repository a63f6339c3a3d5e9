-- upgrade: 1.0 updated to the newest version has exactly the objects,
-- definitions and privileges (and initial privileges, which pg_dump goes by)
-- of a fresh install of it; the suites after this one run on the updated one
CREATE TEMP VIEW members AS
SELECT pg_describe_object(classid, objid, 0) AS member,
       CASE WHEN classid = 'pg_proc'::regclass THEN pg_get_functiondef(objid) END AS def,
       CASE WHEN classid = 'pg_proc'::regclass THEN (SELECT proacl::text FROM pg_proc WHERE oid = objid)
            WHEN classid = 'pg_class'::regclass THEN (SELECT relacl::text FROM pg_class WHERE oid = objid)
       END AS acl,
       (SELECT initprivs::text FROM pg_init_privs i
         WHERE i.objoid = d.objid AND i.classoid = d.classid AND i.objsubid = 0) AS init_acl
FROM pg_depend d WHERE refclassid = 'pg_extension'::regclass AND deptype = 'e'
  AND refobjid = (SELECT oid FROM pg_extension WHERE extname = 'zklock');
CREATE TEMP TABLE fresh AS SELECT * FROM members;
SELECT extversion FROM pg_extension WHERE extname = 'zklock';
DROP EXTENSION zklock;
CREATE EXTENSION zklock VERSION '1.0';
SELECT extversion FROM pg_extension WHERE extname = 'zklock';
-- a lock held across the update stays held
SELECT zk_lock_acquire('across') > 0 AS held_before;
ALTER EXTENSION zklock UPDATE;
SELECT extversion FROM pg_extension WHERE extname = 'zklock';
SELECT state, mode FROM zk_locks WHERE name = 'across';
SELECT zk_lock_release('across');
CREATE TEMP TABLE updated AS SELECT * FROM members;
SELECT count(*) AS members, count(def) AS functions FROM fresh;
(SELECT 'only fresh' AS side, * FROM fresh EXCEPT SELECT 'only fresh', * FROM updated)
UNION ALL
(SELECT 'only updated', * FROM updated EXCEPT SELECT 'only updated', * FROM fresh);

-- 1.2 to the newest: 1.2 kept one fence per resource and did not record who
-- advanced it; its rows stay, for every role that may call zk_fence (owner
-- and grantees) and for every table whose zk_fence_trigger names the
-- resource, and they still refuse older tokens
DROP EXTENSION zklock;
CREATE EXTENSION zklock VERSION '1.2';
CREATE ROLE zkl_up_fencer;
GRANT EXECUTE ON FUNCTION zk_fence(text, bigint) TO zkl_up_fencer;
CREATE TABLE up_docs (id int, token bigint);
CREATE TRIGGER up_docs_fence BEFORE INSERT ON up_docs
	FOR EACH ROW EXECUTE FUNCTION zk_fence_trigger('up.docs', 'token');
CREATE TABLE "up other" (id int, token bigint);
CREATE TRIGGER up_other_fence BEFORE INSERT ON "up other"
	FOR EACH ROW EXECUTE FUNCTION zk_fence_trigger('up.other', 'token');
INSERT INTO up_docs VALUES (1, 40);
SELECT zk_fence('up.a', 7);
SELECT zk_fence('up.other', 8);
ALTER EXTENSION zklock UPDATE;
SELECT extversion FROM pg_extension WHERE extname = 'zklock';
SELECT fencer, resource, token FROM zk_fence_tokens ORDER BY 1, 2;
SELECT fenced_table, resource, token FROM zk_fence_table_tokens ORDER BY 1, 2;
\set VERBOSITY terse
INSERT INTO up_docs VALUES (2, 39);
INSERT INTO "up other" VALUES (1, 7);
\set VERBOSITY default
DROP TABLE up_docs, "up other";
DELETE FROM zk_fence_tokens;
DELETE FROM zk_fence_table_tokens;
REVOKE EXECUTE ON FUNCTION zk_fence(text, bigint) FROM zkl_up_fencer;
DROP ROLE zkl_up_fencer;
